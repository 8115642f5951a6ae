"""Page-level statistics of a legacy (v0.1) Lance data file.

The legacy writer stores, per batch, ``null_count`` / ``min_value`` / ``max_value`` of each
field it could bound, in the file's own columnar format: ``Metadata.statistics`` holds the
statistics schema (one struct per field, named by the field id as a decimal string), its leaf
field ids and the position of a second page table (field ids ``0..max leaf id``, one batch).
Each statistics column has one row per data batch. The spec: min/max are bounds, not values
(an all-null integer batch records the type's extremes, floats -inf/+inf, strings may be
truncated or null).

Note the legacy data pages have no validity: ``null_count`` counts the nulls the writer saw,
which the data file reads back as values (0, false, empty).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pyarrow as pa

from lakecore.errors import CorruptTableError
from lakecore.storage import Storage
from lakecore_lance.legacy.decode import DecodeContext, read_range
from lakecore_lance.legacy.fields import LegacyField, fields_from_proto
from lakecore_lance.legacy.layout import FileBytes, FileLayout, read_metadata, read_page_table


def read_legacy_statistics(storage: Storage, path: str) -> pa.Table | None:
    """Return the per-batch statistics of legacy data file ``path``, or ``None`` if it has none.

    One row per batch (row group, in file order); one struct column per field, named by its
    field id (``"3"``) with children ``null_count`` (int64), ``min_value`` and ``max_value``
    (the field's type). Also a ``num_rows`` column: each batch's row count.

    Raises:
        CorruptTableError: naming the file, for a truncated or invalid file.
        UnsupportedFeatureError: a statistics field of a type the reader does not decode.
    """
    data = FileBytes(storage, path)
    version, metadata = read_metadata(data)
    if not metadata.HasField("statistics") or not metadata.statistics.fields:
        return None
    stats = metadata.statistics
    try:
        roots = fields_from_proto(list(stats.schema))
    except CorruptTableError as exc:
        raise data.corrupt(f"statistics schema: {exc}") from exc
    offsets = tuple(metadata.batch_offsets)
    num_batches = max(0, len(offsets) - 1)
    pages = read_page_table(data, stats.page_table_position, 0, max(stats.fields), 1)
    # The statistics are one "batch" whose rows are the data file's batches.
    layout = FileLayout(
        version=version,
        batch_offsets=(0, num_batches),
        manifest_position=metadata.manifest_position,
        pages=pages,
    )
    ctx = DecodeContext(data=data, layout=layout, load_dictionary=_no_dictionary(data))
    columns = [read_range(ctx, root, 0, 0, num_batches) for root in roots]
    rows = pa.array([b - a for a, b in itertools.pairwise(offsets)], pa.int64())
    names = [root.name for root in roots]
    return pa.Table.from_arrays([rows, *columns], names=["num_rows", *names])


def _no_dictionary(data: FileBytes) -> Callable[[LegacyField], pa.Array]:
    def load(fld: LegacyField) -> pa.Array:
        raise data.corrupt(f"statistics field {fld.name!r} is dictionary-encoded")

    return load
