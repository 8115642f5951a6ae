"""Eager evaluation of an expression over an Arrow table, with SQL null semantics.

The input is Spark SQL text (parsed by ``lakecore.expr.sql``, the one front end) or a
``lakecore.expr.tree`` tree; it is bound to the table's schema (``lakecore.expr.binding``:
unknown columns raise ``SchemaError``, bad SQL and type errors ``PredicateError``, both before
any row is touched) and compiled once (``lakecore.expr.arrow_filter.to_arrow``: the same
compilation the scan's row filter uses), then run over the table with Arrow's Acero engine.
Errors while computing (integer overflow, a failed CAST) raise ``PredicateError``.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.acero as acero

from lakecore.errors import PredicateError
from lakecore.expr import tree as ex
from lakecore.expr.arrow_filter import to_arrow
from lakecore.expr.binding import bind, bind_expression

_OUT = "__lakecore_value"


def evaluate(expr: str | ex.Expr, table: pa.Table) -> pa.ChunkedArray:
    """The value of scalar ``expr`` (SQL text or a tree) for each row of ``table``."""
    if isinstance(expr, str):
        from lakecore.expr.sql import parse_expression

        expr = parse_expression(expr)
    return evaluate_bound(bind_expression(expr, table.schema), table)


def evaluate_predicate(pred: str | ex.Predicate, table: pa.Table) -> pa.ChunkedArray:
    """Evaluate boolean ``pred`` (SQL text or a tree) per row: true, false or null (unknown).

    Raises ``PredicateError`` when ``pred`` is not boolean.
    """
    if isinstance(pred, str):
        from lakecore.expr.sql import parse_sql

        pred = parse_sql(pred)
    value = evaluate_bound(bind(pred, table.schema), table)
    if pa.types.is_null(value.type):
        value = value.cast(pa.bool_())
    return value


def evaluate_bound(expr: ex.Expr, table: pa.Table) -> pa.ChunkedArray:
    """Run bound ``expr`` over ``table`` (one value per row); ``PredicateError`` when Arrow
    cannot type or compute it."""
    names = ex.columns_of(expr)
    source = table.select(names) if names else pa.table({_OUT: pa.nulls(table.num_rows)})
    try:
        compiled = to_arrow(expr, table.schema)
        plan = acero.Declaration.from_sequence(
            [
                acero.Declaration("table_source", acero.TableSourceNodeOptions(source)),
                acero.Declaration("project", acero.ProjectNodeOptions([compiled], [_OUT])),
            ]
        )
        out = plan.to_table(use_threads=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise PredicateError(f"cannot evaluate {expr}: {exc}") from exc
    return out.column(_OUT)
