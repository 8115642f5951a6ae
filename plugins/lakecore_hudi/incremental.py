"""The change feed of a Hudi table: inserts, updates and deletes of instants ``start..end``.

Changes are derived from the timeline, instant by instant: for each completed write ``v`` of
the range, the file groups ``v`` touched (its write stats and replaced file groups, plus any
slice whose files differ) are read as they were at the previous completed write and at ``v``,
and their records compared by key (``_hoodie_partition_path`` + ``_hoodie_record_key``):

- a key only at ``v``: ``insert`` (its row at ``v``);
- a key only before: ``delete`` (its row before; MoR delete blocks, CoW rewrites without it
  and replaced file groups all end up here);
- a key on both sides whose record ``v`` wrote (``_hoodie_commit_time == v``):
  ``update_preimage`` (the row before) and ``update_postimage`` (the row at ``v``);
- a key on both sides that ``v`` did not write (a CoW rewrite's untouched records): nothing.

Compaction, clustering and log compaction change no rows and contribute nothing. The previous
file slices must still exist (``VersionNotFoundError`` once they are cleaned).

The table is loaded once, at ``end``; the state at each instant of the range is built from that
load's timeline and commit metadata and one listing of the data files (``earlier_state``), so
the storage reads grow with the instants of the range and the file groups they touched, not
with the history before each instant. The CPU too: each state's slices are re-sliced from the
previous one's only where the instant changed them (``view_walk.SliceWalker``), and the
written-files check runs once for the range (``written_files.all_written_listed``), per
instant only when that finds a damaged table (for the same errors).

On tables writing CDC logs (``hoodie.table.cdc.enabled``), a file group whose write stat
lists CDC logs (``cdcStats``) takes its changes from them instead (``_cdc_changes``), with the
images the supplemental logging mode leaves out read from the file slices by record key.

Rows come in the schema of ``end`` (older rows conformed: missing columns null; the meta
columns nullable, as CDC images lack them), with
``_change_type``, ``_commit_version`` (the instant, text), ``_commit_timestamp``
(timestamp[us, UTC] of the instant time) as Delta's change feed has them. The ``_hoodie_*``
columns are kept and listed in the schema metadata under ``lakecore.system_columns``, so
``Table.changes`` can drop them unless asked (``include_meta=True``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import CorruptTableError, UnsupportedFeatureError, VersionNotFoundError
from lakecore.storage import Storage
from lakecore_hudi.conform import conform
from lakecore_hudi.keys import COMMIT_TIME, META_FIELDS, PARTITION_PATH, RECORD_KEY, record_keys
from lakecore_hudi.listing import list_data_files, uses_metadata_table
from lakecore_hudi.log.blocks import decode_avro_block
from lakecore_hudi.log.format import BlockType, read_log_blocks
from lakecore_hudi.options import ReadOptions
from lakecore_hudi.state import (
    HudiState,
    commit_metadata,
    earlier_state,
    instant_epoch_ms,
    load_state,
)
from lakecore_hudi.timeline.commit_metadata import CommitMetadata
from lakecore_hudi.timeline.instants import Instant
from lakecore_hudi.view import FileSlice, SliceFile, data_files, split_path
from lakecore_hudi.view_walk import SliceWalker
from lakecore_hudi.written_files import all_written_listed

CHANGE_TYPE = "_change_type"
COMMIT_VERSION = "_commit_version"
COMMIT_TIMESTAMP = "_commit_timestamp"
COMMIT_TIMESTAMP_TYPE = pa.timestamp("us", tz="UTC")
CHANGE_COLUMNS = (CHANGE_TYPE, COMMIT_VERSION, COMMIT_TIMESTAMP)
SYSTEM_COLUMNS_KEY = b"lakecore.system_columns"
"""Schema metadata key of a change feed: its system columns, comma-separated."""
CDC_ENABLED = "hoodie.table.cdc.enabled"
CDC_MODE = "hoodie.table.cdc.supplemental.logging.mode"
DATA_BEFORE_AFTER = "DATA_BEFORE_AFTER"
DATA_BEFORE = "DATA_BEFORE"
CDC_MODES = ("OP_KEY_ONLY", DATA_BEFORE, DATA_BEFORE_AFTER)
CDC_OP, CDC_KEY, CDC_BEFORE, CDC_AFTER = "op", "record_key", "before", "after"
"""Hudi's CDC record fields (``HoodieCDCUtils``)."""
NO_ROW_CHANGES = frozenset({"compact", "cluster", "log_compact"})
"""Write operations that rewrite file slices without changing any record."""
_FULL = ReadOptions()  # meta fields kept, log files merged
MAX_INSTANT_DIGITS = 20
"""The longest instant text: yyyyMMddHHmmssSSS plus the 3-digit suffix of metadata-table
compaction instants."""


def read_changes(storage: Storage, start: str, end: str | None) -> pa.Table:
    """The row changes of the completed writes ``start..end`` (inclusive; ``end`` None: the
    latest), as Delta's ``changes(start, end)``: instants ``t`` with ``start <= t <= end``.

    ``start`` is an instant time or a prefix of one (``"2024"``: from 2024 on), or ``""``
    (the table before its first commit). Raises ``VersionNotFoundError`` for a ``start``
    that is neither, an ``end`` that is not a completed write, a ``start`` after ``end``, a
    range whose previous file slices were cleaned, or one whose previous version is archived
    (files older than the active timeline remain);
    ``UnsupportedFeatureError`` for tables written without meta fields (no commit times).
    """
    if start and not (start.isdigit() and len(start) <= MAX_INSTANT_DIGITS):
        # Instants compare as text (as in Hudi), so a start of other digits or more of them
        # would silently mean "from the beginning": "1" * 31 sorts before "2024...".
        raise VersionNotFoundError(
            f"change feed start {start!r} is not a Hudi instant time (yyyyMMddHHmmssSSS, or "
            f"a prefix of one: at most {MAX_INSTANT_DIGITS} digits)"
        )
    target = load_state(storage, end, None, _FULL)
    if target.instant is not None and COMMIT_TIME not in target.table_schema.names:
        raise UnsupportedFeatureError(
            "no-meta-fields", "incremental reads need _hoodie_commit_time (populated meta fields)"
        )
    upto = target.version
    if start > upto:
        raise VersionNotFoundError(
            f"change range {start}..{upto} is empty: start is after the end instant"
        )
    out = _output_schema(target.table_schema)
    writes = target.timeline.completed_write_instants()
    earlier = [i for i in writes if i.timestamp < start]
    before: HudiState | None = None
    before_instant = earlier[-1] if earlier else None
    if before_instant is None:
        _refuse_archived_start(storage, target, start)
    mode = cdc_mode(target.config.raw)
    keys = target.config.record_key_fields
    parts: list[pa.Table] = []
    files: list[SliceFile] | None = None  # listed once, when a state is first needed
    walker: SliceWalker | None = None
    checked = False
    for instant in [i for i in writes if start <= i.timestamp <= upto]:
        meta = _metadata(storage, target, instant)
        if _changes_no_rows(instant, meta):
            before, before_instant = None, instant
            continue
        touched = {s.file_id for s in meta.write_stats()}
        touched.update(file_id for _, file_id in meta.replaced_file_ids())
        cdc = {s.file_id: tuple(s.cdc_stats) for s in meta.write_stats() if mode and s.cdc_stats}
        if bool(touched) and touched <= cdc.keys() and mode == DATA_BEFORE_AFTER:
            # CDC logs with both images cover every group the instant touched: no file
            # slice is read (write stats can be empty: then slices tell what changed).
            version = instant.timestamp
            stamp = instant_epoch_ms(version)
            for paths in cdc.values():
                found = _cdc_changes(storage, paths, mode, None, None, keys, out, version)
                parts.extend(_tag(rows, change, version, stamp, out) for change, rows in found)
            before, before_instant = None, instant
            continue
        if files is None or walker is None:
            files = list_data_files(storage, target.config, target.timeline, _FULL)
            walker = SliceWalker(files, target.config.table_version >= 8)
            checked = _all_listed(storage, target, files, upto)
        if before is None and before_instant is not None:
            before = earlier_state(storage, target, before_instant, files, walker, checked)
        after = earlier_state(storage, target, instant, files, walker, checked)
        parts.extend(_instant_changes(storage, before, after, touched, cdc, mode, out, walker))
        before, before_instant = after, instant
    parts = [p for p in parts if p.num_rows]
    return pa.concat_tables(parts) if parts else out.empty_table()


def _all_listed(storage: Storage, target: HudiState, files: list[SliceFile], upto: str) -> bool:
    """Whether every file the writes up to ``upto`` made is listed (``all_written_listed``):
    one pass for the whole range instead of a written-files check per instant."""
    writes = [i for i in target.timeline.completed_write_instants() if i.timestamp <= upto]
    written = ((i.timestamp, _metadata(storage, target, i)) for i in writes)
    by_metadata = uses_metadata_table(target.config, _FULL)
    return all_written_listed(written, files, storage.root, by_metadata)


def _refuse_archived_start(storage: Storage, target: HudiState, start: str) -> None:
    """Raise ``VersionNotFoundError`` when writes older than the active timeline left files:
    the range's first instant then has a previous version that cannot be loaded (archived),
    and taking it as empty would turn its updates into inserts."""
    instants = target.timeline.instants
    first_active = instants[0].timestamp if instants else ""
    older = [f for f in data_files(storage.list_all("")) if f.name.instant < first_active]
    if older:
        later = [i.timestamp for i in target.timeline.completed_write_instants()]
        raise VersionNotFoundError(
            f"the changes of {start!r} need the version before the active timeline "
            f"(archived; files such as {older[0].info.path} were written then): "
            f"changes can start at {later[1] if len(later) > 1 else 'no instant'}"
        )


def _output_schema(table_schema: pa.Schema) -> pa.Schema:
    system = [n for n in table_schema.names if n in META_FIELDS]
    return pa.schema(
        [
            # meta fields are nullable here: CDC images carry none (see _image)
            *(f.with_nullable(True) if f.name in META_FIELDS else f for f in table_schema),
            pa.field(CHANGE_TYPE, pa.string()),
            pa.field(COMMIT_VERSION, pa.string()),
            pa.field(COMMIT_TIMESTAMP, COMMIT_TIMESTAMP_TYPE),
        ],
        metadata={SYSTEM_COLUMNS_KEY: ",".join(system).encode()},
    )


def _metadata(storage: Storage, target: HudiState, instant: Instant) -> CommitMetadata:
    """The commit metadata of ``instant``: as loading ``target`` parsed it."""
    meta = target.metadata.get(instant.timestamp)
    return meta if meta is not None else commit_metadata(storage, target.timeline, instant)


def _changes_no_rows(instant: Instant, meta: CommitMetadata) -> bool:
    if instant.action in ("compaction", "logcompaction", "clustering"):
        return True
    return (meta.operation_type or "").lower() in NO_ROW_CHANGES


def _files(s: FileSlice) -> tuple[str | None, tuple[str, ...]]:
    return (None if s.base_file is None else s.base_file.path, tuple(f.path for f in s.log_files))


def _instant_changes(
    storage: Storage,
    before: HudiState | None,
    after: HudiState,
    touched: set[str],
    cdc: dict[str, tuple[str, ...]],
    mode: str | None,
    out: pa.Schema,
    walker: SliceWalker,
) -> list[pa.Table]:
    """The changes of ``after``'s instant: read from the CDC logs of the file groups in
    ``cdc`` (file id -> CDC log paths), derived for the other groups it touched.

    Only the groups ``walker`` re-sliced between the two states, and those the instant
    wrote, are looked at: every other group has the same slice on both sides."""
    old = walker.view(before.visible).groups if before is not None else {}
    new = walker.view(after.visible).groups
    moved = walker.changed(before.visible, after.visible) if before is not None else None
    near = walker.groups_of(touched | cdc.keys())

    def of(mine: Mapping[tuple[str, str], FileSlice], ids: set[str]) -> list[FileSlice]:
        """The slices of ``mine`` with a file id in ``ids``, in path order."""
        found = [mine[g] for g in near if g[1] in ids and g in mine]
        return sorted(found, key=lambda s: s.path)

    def changed(
        mine: Mapping[tuple[str, str], FileSlice], other: Mapping[tuple[str, str], FileSlice]
    ) -> list[FileSlice]:
        """Slices of ``mine`` the instant wrote or replaced, or whose files differ in ``other``
        (a log file appended in place keeps its name: the write stats catch that); groups
        with CDC logs are not derived."""
        if moved is None:
            keys: list[tuple[str, str]] = list(mine)
        else:
            keys = [g for g in (moved | near) if g in mine]
            keys.sort(key=lambda g: mine[g].path)
        return [
            s
            for k in keys
            if (s := mine[k]).file_id not in cdc
            and (s.file_id in touched or k not in other or _files(other[k]) != _files(s))
        ]

    version = after.version
    stamp = instant_epoch_ms(version)
    key_fields = after.config.record_key_fields
    found: list[tuple[str, pa.Table]] = []
    if cdc:
        was = None
        if before is not None and mode != DATA_BEFORE_AFTER:
            was = _rows(storage, before, of(old, set(cdc)), out)
        now = None
        if mode != DATA_BEFORE_AFTER:
            now = _rows(storage, after, of(new, set(cdc)), out)
        for paths in cdc.values():
            found.extend(_cdc_changes(storage, paths, mode, was, now, key_fields, out, version))
    derive_old = changed(old, new) if before is not None else []
    derive_new = changed(new, old)
    if derive_old or derive_new:
        was = _rows(storage, before, derive_old, out) if before is not None else None
        now = _rows(storage, after, derive_new, out)
        if was is None:
            was = now.schema.empty_table()
        was_keys = _keys(was, key_fields)
        now_keys = _keys(now, key_fields)
        existed = pc.is_in(now_keys, value_set=was_keys)
        kept = pc.is_in(was_keys, value_set=now_keys)
        updated = pc.and_(existed, pc.equal(now.column(COMMIT_TIME), version))
        found += [
            ("insert", now.filter(pc.invert(existed))),
            ("delete", was.filter(pc.invert(kept))),
            ("update_preimage", was.filter(pc.is_in(was_keys, value_set=now_keys.filter(updated)))),
            ("update_postimage", now.filter(updated)),
        ]
    pieces = [_tag(rows, change, version, stamp, out) for change, rows in found]
    return [p for p in pieces if p.num_rows]


def cdc_mode(properties: Mapping[str, str]) -> str | None:
    """The supplemental logging mode of a table writing CDC logs, upper case; None without.

    Raises ``UnsupportedFeatureError`` for a mode Hudi does not define."""
    if properties.get(CDC_ENABLED, "false").strip().lower() != "true":
        return None
    raw = properties.get(CDC_MODE, DATA_BEFORE_AFTER).strip().upper()
    if raw not in CDC_MODES:
        raise UnsupportedFeatureError(
            f"{CDC_MODE}={raw}", f"CDC supplemental logging mode {raw!r} (known: {CDC_MODES})"
        )
    return raw


def _cdc_changes(
    storage: Storage,
    paths: tuple[str, ...],
    mode: str | None,
    was: pa.Table | None,
    now: pa.Table | None,
    key_fields: tuple[str, ...],
    out: pa.Schema,
    version: str,
) -> list[tuple[str, pa.Table]]:
    """Changes from one file group's CDC logs (records ``op`` i/u/d with, by mode, the
    record key and the before/after images); images the mode leaves out come from the
    group's rows before (``was``) and at the instant (``now``), by record key.

    Hudi's images hold no ``_hoodie_*`` fields: the record key and partition path are
    filled in, and the commit time of after images (``version``); a before image's commit
    time stays null."""
    columns = pa.schema([f for f in out if f.name not in CHANGE_COLUMNS])
    partition = split_path(paths[0])[0] if paths else ""
    blocks = [b for path in paths for b in read_log_blocks(storage.read(path), path)]
    tables = [
        decode_avro_block(replace(b, block_type=BlockType.AVRO_DATA))
        for b in blocks
        if b.block_type == BlockType.CDC
    ]
    if not tables:
        return []
    records = pa.concat_tables(tables, promote_options="permissive")
    if CDC_OP not in records.column_names:
        raise CorruptTableError(f"{paths[0]}: CDC records without an {CDC_OP!r} column")
    op = records.column(CDC_OP)
    if mode == DATA_BEFORE_AFTER:
        before_img = _image(records, CDC_BEFORE, columns, key_fields, partition, None)
        after_img = _image(records, CDC_AFTER, columns, key_fields, partition, version)
    else:
        keys = records.column(CDC_KEY).cast(pa.string())
        if mode == DATA_BEFORE:
            before_img = _image(records, CDC_BEFORE, columns, key_fields, partition, None)
        else:
            prior = was if was is not None else columns.empty_table()
            before_img = _by_key(prior, keys, key_fields)
        after_img = _by_key(now if now is not None else columns.empty_table(), keys, key_fields)
    unknown = set(pc.unique(op).to_pylist()) - {"i", "u", "d"}
    if unknown:
        raise CorruptTableError(f"{paths[0]}: CDC operations {sorted(map(str, unknown))}")
    is_op = {o: pc.equal(op, o) for o in ("i", "u", "d")}
    return [
        ("insert", after_img.filter(is_op["i"])),
        ("delete", before_img.filter(is_op["d"])),
        ("update_preimage", before_img.filter(is_op["u"])),
        ("update_postimage", after_img.filter(is_op["u"])),
    ]


def _image(
    records: pa.Table,
    name: str,
    columns: pa.Schema,
    key_fields: tuple[str, ...],
    partition: str,
    commit_time: str | None,
) -> pa.Table:
    """A CDC image column (a nullable record of the table's columns) as rows of ``columns``,
    with the meta fields it lacks filled where known (null where not)."""
    if name not in records.column_names:
        raise CorruptTableError(f"CDC records without a {name!r} image")
    image = records.column(name).combine_chunks()
    if not pa.types.is_struct(image.type):
        raise CorruptTableError(f"the CDC {name!r} image is {image.type}, not a record")
    fields = [image.type.field(i).name for i in range(image.type.num_fields)]
    rows = pa.Table.from_arrays(image.flatten(), names=fields)
    n = rows.num_rows
    filled: dict[str, pa.Array | pa.ChunkedArray] = {}
    if RECORD_KEY not in fields and key_fields and all(f in fields for f in key_fields):
        filled[RECORD_KEY] = record_keys(rows, key_fields)
    if PARTITION_PATH not in fields:
        filled[PARTITION_PATH] = pa.array([partition] * n, pa.string())
    if COMMIT_TIME not in fields and commit_time is not None:
        filled[COMMIT_TIME] = pa.array([commit_time] * n, pa.string())
    for column, values in filled.items():
        rows = rows.append_column(column, values)
    return conform(rows, columns)


def _by_key(rows: pa.Table, keys: pa.ChunkedArray, key_fields: tuple[str, ...]) -> pa.Table:
    """The row of each key (a null row where ``rows`` has none)."""
    have = record_keys(rows, key_fields) if rows.num_rows else pa.chunked_array([], pa.string())
    return rows.take(pc.index_in(keys, value_set=have))


def _rows(storage: Storage, state: HudiState, slices: list[FileSlice], out: pa.Schema) -> pa.Table:
    """The merged rows of ``slices`` at ``state``'s instant, in the table columns of ``out``."""
    from lakecore_hudi.format import snapshot_of

    columns = pa.schema([f for f in out if f.name not in CHANGE_COLUMNS])
    if not slices:
        return columns.empty_table()
    subset = replace(state, slices=tuple(slices), options=_FULL)
    return conform(snapshot_of(storage, subset).to_arrow(), columns)


def _keys(table: pa.Table, key_fields: tuple[str, ...]) -> pa.ChunkedArray:
    """Record identity: partition path and record key (one key may live in two partitions
    of a table with a non-global index)."""
    keys = record_keys(table, key_fields) if table.num_rows else pa.chunked_array([], pa.string())
    partitions = table.column(PARTITION_PATH).cast(pa.string()).fill_null("")
    joined = pc.binary_join_element_wise(partitions, keys, "\x00")
    return joined if isinstance(joined, pa.ChunkedArray) else pa.chunked_array([joined])


def _tag(rows: pa.Table, change: str, version: str, stamp: int | None, out: pa.Schema) -> pa.Table:
    n = rows.num_rows
    rows = rows.append_column(CHANGE_TYPE, pa.array([change] * n, pa.string()))
    rows = rows.append_column(COMMIT_VERSION, pa.array([version] * n, pa.string()))
    if stamp is None:  # an instant that is not a date-time (none Hudi writes)
        stamps = pa.nulls(n, COMMIT_TIMESTAMP_TYPE)
    else:
        stamps = pa.array(np.full(n, stamp * 1000), pa.int64()).cast(COMMIT_TIMESTAMP_TYPE)
    rows = rows.append_column(COMMIT_TIMESTAMP, stamps)
    return rows.cast(out)
