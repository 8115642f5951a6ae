"""Write-time checks: CHECK constraints (``delta.constraints.*``), column invariants and
generated columns, all Spark SQL evaluated by the one front end and evaluator
(``lakecore.expr.evaluate``: the same tree a scan filters with)."""

from __future__ import annotations

import json
from collections.abc import Mapping

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import ConstraintViolationError
from lakecore.expr.evaluate import evaluate, evaluate_predicate
from lakecore_delta.schema import delta_metadata

CONSTRAINT_PREFIX = "delta.constraints."


def constraint_key(name: str) -> str:
    """The table property holding CHECK constraint ``name`` (Delta lower-cases the name)."""
    return f"{CONSTRAINT_PREFIX}{name.lower()}"


def table_constraints(configuration: Mapping[str, str], schema: pa.Schema) -> dict[str, str]:
    """Name -> SQL of every CHECK constraint and column invariant of the table."""
    out = {
        k[len(CONSTRAINT_PREFIX) :]: v
        for k, v in configuration.items()
        if k.startswith(CONSTRAINT_PREFIX)
    }
    for f in schema:
        raw = delta_metadata(f).get("delta.invariants")
        if raw:
            expression = json.loads(raw) if isinstance(raw, str) else raw
            sql = expression.get("expression", {}).get("expression")
            if sql:
                out[f"invariant({f.name})"] = sql
    return out


def check_rows(data: pa.Table, constraints: Mapping[str, str]) -> None:
    """Raise ``ConstraintViolationError`` if a row makes a constraint false (null passes)."""
    for name, sql in constraints.items():
        ok = evaluate_predicate(sql, data)
        failed = pc.sum(pc.invert(pc.fill_null(ok, True))).as_py() or 0
        if failed:
            raise ConstraintViolationError(
                f"CHECK constraint {name} ({sql}) is violated by {failed} row(s)"
            )


def fill_generated(data: pa.Table, generated: Mapping[str, str], verify: bool) -> pa.Table:
    """Compute generated columns (column -> SQL over the other columns).

    Absent columns are added. Present ones are replaced (``verify=False``) or must equal the
    computed value, nulls equal (``verify=True``: else ``ConstraintViolationError``).
    """
    for name, sql in generated.items():
        value = evaluate(sql, data)  # Spark SQL, through the one front end (lakecore.expr)
        i = data.schema.get_field_index(name)
        if i < 0:
            data = data.append_column(name, value)
            continue
        if verify:
            given = data.column(name)
            same = pc.or_kleene(
                pc.equal(given, value.cast(given.type)),
                pc.and_(pc.is_null(given), pc.is_null(value)),
            )
            bad = pc.sum(pc.invert(pc.fill_null(same, False))).as_py() or 0
            if bad:
                raise ConstraintViolationError(
                    f"generated column {name!r} = {sql}: {bad} row(s) hold another value"
                )
        else:
            data = data.set_column(i, name, value)
    return data
