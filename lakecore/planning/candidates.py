"""Which files a write must read: the scan's pruning, asked by DML and conflict checks.

A DELETE, UPDATE, MERGE or OVERWRITE ... WHERE only has to open the files that may hold a row
it changes. ``candidate_files`` answers that with exactly the pruning a scan uses (partition
values, then min/max/null_count; three-valued "may match"), so a write reads O(k) files for a
change touching k files. Files without stats are always candidates.

DML predicates arrive as Spark SQL text that the row evaluator (``lakecore.expr.evaluate``)
runs, while
the planner has its own front end (``lakecore.expr.sql``). ``dml_predicate`` gives the
planner's reading of such text only where both front ends agree on which rows match; anything
else is None and the caller must read every file (never skip one).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import LakecoreError
from lakecore.expr import tree as ex
from lakecore.expr.binding import Where, bind, parse_predicate
from lakecore.planning.scan import prune
from lakecore.planning.tasks import ScanContext


def candidate_files(
    snapshot_files: pa.Table, predicate: ex.Predicate | None, context: ScanContext
) -> pa.Table:
    """The rows of ``snapshot_files`` (a file index) that may hold a row for which bound
    ``predicate`` is TRUE: every file when ``predicate`` is None.

    The result is a superset of the files holding a matching row: a file is dropped only when
    its partition values or stats prove that no row can match.
    """
    return prune(snapshot_files, predicate, context).files


def dml_predicate(where: Where, schema: pa.Schema) -> ex.Predicate | None:
    """``where`` bound to ``schema`` for pruning, or None when the planner cannot read it.

    None for text the planner's SQL front end does not accept (functions, arithmetic ...),
    for text holding a double quote or a backslash (Spark SQL reads ``"a"`` as a string and
    ``'\\n'`` as a line break, the planner as a column and two characters), and for
    predicates on ``float32``/``float16`` columns (the planner rounds a literal to the
    column's precision while the row evaluator compares in float64, so ``x < 0.7`` would keep
    different rows). The caller must then read every file.
    """
    if isinstance(where, str) and ('"' in where or "\\" in where):
        return None
    try:
        predicate = bind(parse_predicate(where), schema)
    except LakecoreError:
        return None
    for name in ex.columns_of(predicate):
        t = schema.field(name).type
        if pa.types.is_floating(t) and t != pa.float64():
            return None
    return predicate


def key_range(source: pa.Table, keys: Sequence[str], schema: pa.Schema) -> ex.Predicate | None:
    """A predicate every target row whose ``keys`` equal those of some ``source`` row
    satisfies: ``key >= min AND key <= max`` over the source's non-null values, per key
    (``source`` must hold ``keys``, typed as ``schema``'s columns).

    A key whose range cannot be trusted adds no condition: a float key holding NaN (an
    equi-join matches NaN with NaN), a type the planner does not prune on. None when no key
    adds one: then every file is a candidate.
    """
    terms: list[ex.Predicate] = []
    for name in keys:
        values = source.column(name)
        if pa.types.is_floating(values.type) and pc.any(pc.is_nan(values)).as_py():
            continue
        bounds = pc.min_max(values)
        low, high = bounds["min"].as_py(), bounds["max"].as_py()
        if low is None or high is None:
            continue
        column = ex.Column(name)
        term = ex.and_(
            ex.Comparison(">=", column, ex.Literal(low)),
            ex.Comparison("<=", column, ex.Literal(high)),
        )
        bound = dml_predicate(term, schema)
        if bound is not None:
            terms.append(bound)
    return ex.and_(*terms) if terms else None


def merge_candidates(
    snapshot_files: pa.Table,
    source: pa.Table,
    keys: Sequence[str],
    schema: pa.Schema,
    context: ScanContext,
) -> pa.Table:
    """The files of ``snapshot_files`` that may hold a row an equi-join on ``keys`` matches
    with a row of ``source`` (SQL equality: a NULL key matches nothing).

    No file when ``source`` has no row whose keys are all non-null; otherwise the files the
    planner keeps for ``key_range``.
    """
    complete = source.num_rows > 0
    if complete and keys:
        valid = pc.is_valid(source.column(keys[0]))
        for name in keys[1:]:
            valid = pc.and_(valid, pc.is_valid(source.column(name)))
        source = source.filter(valid)
        complete = source.num_rows > 0
    if not complete:
        return snapshot_files.slice(0, 0)
    return candidate_files(snapshot_files, key_range(source, keys, schema), context)
