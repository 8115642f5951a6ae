"""Which files a write must read: the scan's pruning, asked by DML and conflict checks.

A DELETE, UPDATE, MERGE or OVERWRITE ... WHERE only has to open the files that may hold a row
it changes. ``candidate_files`` answers that with exactly the pruning a scan uses (partition
values, then min/max/null_count; three-valued "may match"), so a write reads O(k) files for a
change touching k files. Files without stats are always candidates.

DML predicates are read by the one SQL front end (``lakecore.expr.sql``) into the one tree
that both the row evaluator (``lakecore.expr.evaluate``) and this pruning run, so the files
kept are exactly a superset of those holding a row the DML changes, whatever the text.
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


def dml_predicate(where: Where, schema: pa.Schema) -> ex.Predicate:
    """``where`` bound to ``schema``: the tree a DML both prunes files with and evaluates per
    row (parts pruning cannot reason about may match; see ``lakecore.planning.pruning``).

    Raises ``PredicateError`` / ``SchemaError`` (before any file is read) for text the front
    end does not accept or that does not type-check against ``schema``.
    """
    return bind(parse_predicate(where), schema)


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
        try:
            terms.append(dml_predicate(term, schema))
        except LakecoreError:
            continue  # a key type predicates do not support: no condition
    return ex.and_(*terms) if terms else None


def merge_read_predicate(source: pa.Table, keys: Sequence[str], schema: pa.Schema) -> str:
    """The SQL text a MERGE on ``keys`` records as what it read (``CommitInfo.read_predicate``):
    every key non-null, and ``key_range`` of ``source``'s rows whose keys are all non-null.

    It is the same "may match" question ``merge_candidates`` asks of the snapshot's files, so
    a conflict check that prunes a concurrent winner's files with it flags exactly the files
    this merge would have read (a disjoint append rebases). Names are backtick-quoted where
    needed (``str()`` of the tree), so the text parses back to the same predicate.
    """
    terms = [f"{ex.sql_name(k)} IS NOT NULL" for k in keys]
    if source.num_rows and keys:
        valid = pc.is_valid(source.column(keys[0]))
        for name in keys[1:]:
            valid = pc.and_(valid, pc.is_valid(source.column(name)))
        bounds = key_range(source.filter(valid), keys, schema)
        if bounds is not None:
            terms.append(str(bounds))
    return " AND ".join(terms)


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
