"""Per-fragment min/max/null-count statistics from a Lance dataset's scalar indices.

Lance keeps no per-fragment statistics in its manifest; its BTREE and ZONEMAP scalar indices
hold the indexed column's values by row, from which each fragment's bounds follow:

- BTREE (``_indices/<uuid>/page_data.lance``: columns ``values`` and ``ids`` (``row_ids``
  before Lance 0.21; a legacy v0.1 file then, read by ``lakecore_lance.legacy``), every indexed
  row, nulls included; a row id is ``fragment_id << 32 | offset`` unless the dataset has stable
  row ids): grouped by ``ids >> 32``.
- ZONEMAP (``_indices/<uuid>/zonemap.lance``: one row per zone with ``min``, ``max``,
  ``null_count``, ``fragment_id`` and ``zone_length``): grouped by ``fragment_id``.

Contract: a bound is given only for a fragment that is in the index's ``fragment_bitmap``,
has rows in the index, and has at least as many indexed rows as live rows now (a fragment
whose rows the index does not all hold, e.g. a wrong bitmap written by Lance 0.21, gets no
bound), and only when the index's one field is a top-level column of the current schema with
the same field id (a dropped, re-added or widened column gets none). Deleted rows may still be
in the index: the bounds then cover more than the live rows, which keeps them bounds. Anything
unexpected (an unknown index type, missing or undecodable files, another layout) gives no
bounds and a logged warning: an index never fails a read nor yields a wrong bound. Index files
are immutable under their uuid, so each is read once per process (``_CACHE``).
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from lakecore.model.schema import FIELD_ID
from lakecore.storage import Storage
from lakecore_lance import features
from lakecore_lance.manifest import read_section
from lakecore_lance.proto import table_pb2
from lakecore_lance.state import LanceState

logger = logging.getLogger(__name__)

INDEX_DIR = "_indices"
FRAG_REUSE_INDEX = "__lance_frag_reuse"
"""Lance's deferred-remap index: row ids in other indices may then name replaced fragments."""
_BTREE_DETAILS = "BTreeIndexDetails"
_ZONEMAP_DETAILS = "ZoneMapIndexDetails"
_CACHE_SIZE = 64
_CACHE: OrderedDict[tuple[str, str], pa.Table] = OrderedDict()
_CACHE_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class FragmentStats:
    """The ``min``, ``max`` and ``null_count`` struct columns of a file index (one child per
    indexed column, null where unknown), aligned with the fragments asked for."""

    min: pa.StructArray
    max: pa.StructArray
    null_count: pa.StructArray


def fragment_stats(
    storage: Storage, state: LanceState, fragment_ids: Sequence[int]
) -> FragmentStats | None:
    """Statistics of ``fragment_ids`` (in that order) from ``state``'s scalar indices, or None
    when no index gives any (see the module docstring). Never raises for an index's sake."""
    m = state.manifest
    if not m.HasField("index_section"):
        return None
    try:
        section = table_pb2.IndexSection()
        section.ParseFromString(read_section(storage, state.loaded.file, int(m.index_section)))
    except Exception as exc:  # an unreadable index section only costs the statistics
        logger.warning("%s: cannot read the index section: %s", storage.root, exc)
        return None
    if any(index.name == FRAG_REUSE_INDEX for index in section.indices):
        return None
    columns = _columns_by_id(state.schema)
    live = _live_rows(m)
    stable_ids = bool(int(m.reader_feature_flags) & features.STABLE_ROW_IDS)
    per_column: dict[str, pa.Table] = {}
    for index in section.indices:
        if len(index.fields) != 1 or int(index.fields[0]) not in columns:
            continue
        name, arrow_type = columns[int(index.fields[0])]
        if name in per_column:
            continue
        try:
            stats = _index_stats(storage, index, stable_ids)
            if stats is None:
                continue
            per_column[name] = _usable(stats, index, live, arrow_type)
        except Exception as exc:  # a broken index: no statistics, never a wrong one
            logger.warning(
                "%s: index %r gives no statistics (%s: %s)",
                storage.root,
                index.name,
                type(exc).__name__,
                exc,
            )
    if not per_column:
        return None
    wanted = pa.array(fragment_ids, pa.int64())
    names = list(per_column)
    taken: dict[str, list[pa.Array]] = {"min": [], "max": [], "null_count": []}
    for name in names:
        stats = per_column[name]
        position = pc.index_in(wanted, value_set=stats.column("fragment_id").combine_chunks())
        for kind, arrays in taken.items():
            arrays.append(pc.take(stats.column(kind).combine_chunks(), position))
    return FragmentStats(
        min=_struct(taken["min"], names),
        max=_struct(taken["max"], names),
        null_count=_struct(taken["null_count"], names),
    )


def _struct(arrays: list[pa.Array], names: list[str]) -> pa.StructArray:
    return pa.StructArray.from_arrays(arrays, names=names)


def _columns_by_id(schema: pa.Schema) -> dict[int, tuple[str, pa.DataType]]:
    """Top-level columns with a plain (non-nested) type, by field id."""
    out: dict[int, tuple[str, pa.DataType]] = {}
    for f in schema:
        raw = (f.metadata or {}).get(FIELD_ID)
        if raw is None or pa.types.is_nested(f.type) or pa.types.is_dictionary(f.type):
            continue
        out[int(raw)] = (f.name, f.type)
    return out


def _live_rows(m: table_pb2.Manifest) -> dict[int, int]:
    """Rows not deleted now, per fragment (fragments whose row count is unknown are left out)."""
    out: dict[int, int] = {}
    for fragment in m.fragments:
        rows = int(fragment.physical_rows)
        if rows == 0:
            continue
        deleted = (
            int(fragment.deletion_file.num_deleted_rows)
            if fragment.HasField("deletion_file")
            else 0
        )
        if fragment.HasField("deletion_file") and deleted == 0:
            continue  # a writer that did not count its deletions: no check possible
        out[int(fragment.id)] = rows - deleted
    return out


def _usable(
    stats: pa.Table, index: table_pb2.IndexMetadata, live: dict[int, int], t: pa.DataType
) -> pa.Table:
    """``stats`` restricted to fragments in the index's bitmap whose live rows it all holds,
    with ``min``/``max`` of the column's type."""
    covered = (
        BitMap.deserialize(bytes(index.fragment_bitmap)) if index.fragment_bitmap else BitMap()
    )
    ids = stats.column("fragment_id").to_pylist()
    rows = stats.column("rows").to_pylist()
    keep = [
        i in covered and i in live and r is not None and r >= live[i]
        for i, r in zip(ids, rows, strict=True)
    ]
    stats = stats.filter(pa.array(keep, pa.bool_()))
    return pa.table(
        {
            "fragment_id": pc.cast(stats.column("fragment_id"), pa.int64()),
            "min": pc.cast(stats.column("min"), t),
            "max": pc.cast(stats.column("max"), t),
            "null_count": pc.cast(stats.column("null_count"), pa.int64()),
        }
    )


def _index_stats(
    storage: Storage, index: table_pb2.IndexMetadata, stable_ids: bool
) -> pa.Table | None:
    """Per-fragment ``fragment_id, min, max, null_count, rows`` of one index, or None when it
    is of a kind that holds no bounds."""
    details = index.index_details.type_url if index.HasField("index_details") else ""
    uuid = _uuid(index)
    if details.endswith(_BTREE_DETAILS) or not details:
        # Lance reads an index written without details (before 0.19) as a BTREE.
        if stable_ids:
            return None  # row ids are then not fragment addresses
        path = f"{INDEX_DIR}/{uuid}/page_data.lance"
        if not details and not storage.exists(path):
            return None
        return _cached(storage, uuid, path, _btree_stats)
    if details.endswith(_ZONEMAP_DETAILS):
        return _cached(storage, uuid, f"{INDEX_DIR}/{uuid}/zonemap.lance", _zonemap_stats)
    return None


def _uuid(index: table_pb2.IndexMetadata) -> str:
    import uuid as uuid_module

    return str(uuid_module.UUID(bytes=bytes(index.uuid.uuid)))


def _btree_stats(data: pa.Table) -> pa.Table:
    # Lance before 0.21 named the row-id column ``row_ids``.
    ids = data.column("ids" if "ids" in data.column_names else "row_ids")
    frame = pa.table(
        {
            "fragment_id": pc.shift_right(ids, 32),
            "values": data.column("values"),
        }
    )
    grouped = frame.group_by("fragment_id").aggregate(
        [
            ("values", "min"),
            ("values", "max"),
            ("values", "count", pc.CountOptions(mode="only_null")),
            ("values", "count", pc.CountOptions(mode="all")),
        ]
    )
    return pa.table(
        {
            "fragment_id": grouped.column("fragment_id"),
            "min": grouped.column("values_min"),
            "max": grouped.column("values_max"),
            "null_count": grouped.column(2 + 1),
            "rows": grouped.column(2 + 2),
        }
    )


def _zonemap_stats(data: pa.Table) -> pa.Table:
    grouped = data.group_by("fragment_id").aggregate(
        [
            ("min", "min"),
            ("max", "max"),
            ("null_count", "sum"),
            ("zone_length", "sum"),
        ]
    )
    return pa.table(
        {
            "fragment_id": grouped.column("fragment_id"),
            "min": grouped.column("min_min"),
            "max": grouped.column("max_max"),
            "null_count": grouped.column("null_count_sum"),
            "rows": grouped.column("zone_length_sum"),
        }
    )


def _cached(
    storage: Storage, uuid: str, path: str, summarize: Callable[[pa.Table], pa.Table]
) -> pa.Table | None:
    key = (str(storage.root), uuid)
    with _CACHE_LOCK:
        if key in _CACHE:
            _CACHE.move_to_end(key)
            return _CACHE[key]
    data, legacy = _read_lance_file(storage, path)
    stats: pa.Table | None = summarize(data)
    if legacy:
        stats = _legacy_bounds(stats)
    with _CACHE_LOCK:
        _CACHE[key] = stats
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return stats


def _legacy_bounds(stats: pa.Table) -> pa.Table | None:
    """Bounds from a legacy (v0.1) index file, which stores no nulls: a null slot reads as
    whatever bytes it held, an extra value that only widens a number's bounds; the null count
    is then unknown, and strings (an empty string reads as null) give no bounds."""
    t = stats.column("min").type
    if not (
        pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_decimal(t)
        or pa.types.is_temporal(t)
    ):
        return None
    unknown = pa.nulls(stats.num_rows, stats.column("null_count").type)
    return stats.set_column(stats.column_names.index("null_count"), "null_count", unknown)


def _read_lance_file(storage: Storage, path: str) -> tuple[pa.Table, bool]:
    """The whole ``.lance`` file at ``path`` and whether it is a legacy (v0.1) file: pylance's
    file reader (the encoding only), else lakecore's legacy reader with the schema the file
    embeds."""
    from lance.file import LanceFileReader

    try:
        if getattr(storage, "is_local", False):
            return LanceFileReader(storage.resolve(path)).read_all().to_table(), False
        data = storage.read(path)
        with tempfile.TemporaryDirectory(prefix="lakecore-lance-index-") as tmp:
            local = os.path.join(tmp, "index.lance")
            with open(local, "wb") as out:
                out.write(data)
            return LanceFileReader(local).read_all().to_table(), False
    except OSError as exc:
        if "v1 metadata" not in str(exc):
            raise
    from lakecore_lance.legacy.layout import FileBytes, embedded_fields, read_layout
    from lakecore_lance.legacy.reader import read_legacy_file

    data_bytes = FileBytes(storage, path)
    layout = read_layout(data_bytes, None)
    fields = embedded_fields(data_bytes, layout.manifest_position)
    return read_legacy_file(storage, path, fields), True
