"""Reading planned tasks anywhere: format plugin + residual filter + projection.

``read_tasks`` needs only picklable inputs (``ScanContext``, ``ScanTask``s), so a Spark
executor can call it on the tasks shipped to it.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from itertools import groupby
from typing import TYPE_CHECKING

import pyarrow as pa

from lakecore.expr import tree as ex
from lakecore.expr.arrow_filter import to_arrow_filter
from lakecore.planning.tasks import ScanContext, ScanTask

if TYPE_CHECKING:
    from lakecore.format import TableFormat


def read_tasks(
    context: ScanContext,
    tasks: Sequence[ScanTask],
    columns: Sequence[str] | None = None,
    table_format: TableFormat | None = None,
) -> Iterator[pa.RecordBatch]:
    """Yield the rows of ``tasks`` that match each task's residual, projected to ``columns``.

    The format plugin named by ``context.format`` reads the files (row-level deletes and
    partition values applied; ``table_format`` skips the plugin lookup). Batches come in task
    order; empty batches are dropped; every batch has the schema of ``columns`` (all columns
    of ``context.schema`` by default). ``columns`` must exist in the schema.
    """
    if table_format is None:
        from lakecore.plugins import disabled_plugins

        table_format = _format_named(context.format, disabled_plugins())
    names = list(context.schema.names if columns is None else columns)
    for residual, group in groupby(tasks, key=lambda t: t.residual):
        yield from _read_group(table_format, context, list(group), names, residual)


@functools.lru_cache(maxsize=16)
def _format_named(name: str, disabled: frozenset[str]) -> TableFormat:
    """The registered format ``name`` (loading plugins once per process and setting)."""
    from lakecore.plugins import load_registry

    return load_registry(disabled).get(name)


def _read_group(
    table_format: TableFormat,
    context: ScanContext,
    tasks: list[ScanTask],
    names: list[str],
    residual: ex.Predicate | None,
) -> Iterator[pa.RecordBatch]:
    if residual is None:
        for batch in table_format.read_tasks(context, tasks, names):
            if batch.num_rows:
                yield batch
        return
    wanted = set(names) | set(ex.columns_of(residual))
    # Read in schema order: the residual's columns too, dropped after filtering.
    read = [n for n in context.schema.names if n in wanted]
    row_filter = to_arrow_filter(residual, context.schema)
    for batch in table_format.read_tasks(context, tasks, read):
        kept = batch.filter(row_filter)
        if kept.num_rows:
            yield kept if read == names else kept.select(names)
