"""The state of a Hudi table at one instant: config, visible instants, file slices, schema."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import pyarrow as pa

from lakecore.errors import CorruptTableError, UnsupportedFeatureError, VersionNotFoundError
from lakecore.storage import Storage
from lakecore_hudi.archived_writes import (
    ArchivedWrites,
    load_archived_writes,
    needs_archive,
    timeline_start,
    with_archived_completions,
)
from lakecore_hudi.as_of_instant import non_write_instant
from lakecore_hudi.avro_schema import avro_to_arrow
from lakecore_hudi.base_files import read_base_schema
from lakecore_hudi.keys import META_FIELDS
from lakecore_hudi.listing import list_data_files, uses_metadata_table
from lakecore_hudi.merge import MergeSpec
from lakecore_hudi.options import ReadOptions
from lakecore_hudi.partitions import formats_timestamps, prunable_partition_columns
from lakecore_hudi.table_config import TableConfig, read_table_config
from lakecore_hudi.timeline.active import Timeline, load_timeline
from lakecore_hudi.timeline.commit_metadata import CommitMetadata, parse_commit_metadata
from lakecore_hudi.timeline.instants import COMPLETED, REQUESTED, Instant
from lakecore_hudi.timeline.rewrite_plans import parse_clustering_plan
from lakecore_hudi.view import FileSlice, SliceFile, Visible, latest_slices
from lakecore_hudi.view_walk import SliceWalker
from lakecore_hudi.written_files import check_written_files, log_writers

REPLACE_ACTIONS = ("replacecommit", "clustering")
EVENT_TIME_PAYLOADS = ("DefaultHoodieRecordPayload", "PartialUpdateAvroPayload")


@dataclass(frozen=True, slots=True)
class HudiState:
    """A table at one completed instant (``instant`` None: no completed write yet).

    ``metadata`` holds the commit metadata loading parsed, by instant time (every visible
    write's, when ``load_state`` made the state): later steps take it from here rather than
    reading those files again.
    """

    config: TableConfig
    timeline: Timeline
    instant: Instant | None
    visible: Visible
    slices: tuple[FileSlice, ...]
    table_schema: pa.Schema
    options: ReadOptions
    metadata: Mapping[str, CommitMetadata] = field(default_factory=dict)

    @property
    def schema(self) -> pa.Schema:
        """The snapshot's output schema (meta fields left out with ``drop_meta_fields``)."""
        if not self.options.drop_meta_fields:
            return self.table_schema
        return pa.schema([f for f in self.table_schema if f.name not in META_FIELDS])

    @property
    def version(self) -> str:
        """The instant timestamp, or "" for a table without a completed write."""
        return self.instant.timestamp if self.instant is not None else ""

    @property
    def merge_spec(self) -> MergeSpec:
        """How this table's records combine (merge mode, ordering field, key fields)."""
        return merge_spec(self.config)

    def is_valid_instant(self, timestamp: str) -> bool:
        """Whether a log block written by ``timestamp`` is part of this snapshot."""
        return self.visible.includes(timestamp)


def merge_spec(config: TableConfig) -> MergeSpec:
    """Event-time ordering when the merge mode or payload says so and a field orders."""
    mode = (config.record_merge_mode or "").upper()
    payload = config.payload_class or ""
    event = mode == "EVENT_TIME_ORDERING" or (
        not mode and any(payload.endswith(p) for p in EVENT_TIME_PAYLOADS)
    )
    return MergeSpec(config.record_key_fields, config.precombine_field, event)


def load_state(
    storage: Storage,
    version: str | None,
    timestamp_ms: int | None,
    options: ReadOptions,
) -> HudiState:
    """Load the table at instant ``version``, at ``timestamp_ms``, or the latest.

    Raises ``TableNotFoundError``/``CorruptTableError`` from the config and timeline, and
    ``VersionNotFoundError`` for an instant that is not a completed instant of the table or
    whose files were cleaned (``written_files.check_written_files``). A completed instant that
    writes no data (clean, rollback, indexing, ...) reads as the latest write at or before it
    (``as_of_instant``). Reads the commit metadata of every visible write instant.
    """
    config = read_table_config(storage)
    timeline = load_timeline(storage, config)
    writes = timeline.completed_write_instants()
    cutoff = instant_text(timestamp_ms) if timestamp_ms is not None and version is None else None
    as_of = non_write_instant(storage, config, timeline, writes, version)
    if as_of:
        version, cutoff = None, version
    archived = _archived_writes(storage, config, writes, version, cutoff)
    instant = _pick(archived.writes + writes, version, cutoff, as_of)
    upto = [
        i
        for i in archived.writes + writes
        if instant is not None and i.timestamp <= instant.timestamp
    ]
    metas = _metadata_of(storage, config, timeline, upto, archived)
    visible = Visible(
        instants=frozenset(i.timestamp for i in upto),
        completion={i.timestamp: i.completion_time for i in upto if i.completion_time},
        replaced=_replaced(upto, metas),
        # Archived writes are listed themselves when time travel reached into the archive.
        archived_before="" if archived.writes else timeline_start(timeline),
    )
    files: list[SliceFile] = []
    if instant is not None:
        files = list_data_files(storage, config, timeline, options)
        visible = with_archived_completions(storage, config, files, visible)
        if config.table_version < 8:
            later = [i for i in writes if i.timestamp > instant.timestamp]
            visible = replace(
                visible, log_writers=_log_writers(storage, timeline, upto, metas, later)
            )
    return _state_of(storage, config, timeline, instant, upto, metas, visible, files, options)


def earlier_state(
    storage: Storage,
    base: HudiState,
    instant: Instant,
    files: Sequence[SliceFile],
    walker: SliceWalker | None = None,
    files_checked: bool = False,
) -> HudiState:
    """The table at ``instant``, a completed write on ``base``'s active timeline at or before
    ``base.instant``, built from what loading ``base`` read (timeline, commit metadata, the
    archived completions) and the listing ``files`` (``list_data_files``), as ``load_state``
    would load it: a walk over many instants reads the table once, not once per instant.
    ``walker`` (a ``SliceWalker`` of ``files``) builds the slices from the walk's previous
    state; ``files_checked`` says ``all_written_listed`` held for the writes up to ``instant``
    (the per-state written-files check could not raise, and is skipped).

    Raises:
        VersionNotFoundError, CorruptTableError: as ``load_state`` (files cleaned since).
    """
    config, timeline = base.config, base.timeline
    writes = timeline.completed_write_instants()
    upto = [i for i in writes if i.timestamp <= instant.timestamp]
    metas = {
        i.timestamp: base.metadata.get(i.timestamp) or commit_metadata(storage, timeline, i)
        for i in upto
    }
    start = timeline_start(timeline)
    completion = {k: v for k, v in base.visible.completion.items() if k < start}
    completion.update((i.timestamp, i.completion_time) for i in upto if i.completion_time)
    visible = Visible(
        instants=frozenset(i.timestamp for i in upto),
        completion=completion,
        replaced=_replaced(upto, metas),
        archived_before=start,
        log_writers=base.visible.log_writers,
    )
    return _state_of(
        storage,
        config,
        timeline,
        instant,
        upto,
        metas,
        visible,
        files,
        base.options,
        walker,
        files_checked,
    )


def _state_of(
    storage: Storage,
    config: TableConfig,
    timeline: Timeline,
    instant: Instant | None,
    upto: list[Instant],
    metas: dict[str, CommitMetadata],
    visible: Visible,
    files: Sequence[SliceFile],
    options: ReadOptions,
    walker: SliceWalker | None = None,
    files_checked: bool = False,
) -> HudiState:
    """The state at ``instant`` of the writes ``upto``: its slices of the listing ``files``
    (checked against what the writes wrote, unless ``files_checked``), and its schema."""
    slices: tuple[FileSlice, ...] = ()
    if instant is not None:
        by_completion = config.table_version >= 8
        if walker is not None:
            slices = walker.view(visible).slices
        else:
            slices = tuple(latest_slices(files, visible, by_completion))
        if not files_checked:
            check_written_files(
                metas.items(),
                files,
                slices,
                visible,
                by_completion,
                instant == timeline.completed_write_instants()[-1],
                storage.root,
                listed_by_metadata=uses_metadata_table(config, options),
            )
    schema = _schema(storage, upto, metas, slices, config)
    ensure_partition_values(config, schema, storage.root)
    return HudiState(config, timeline, instant, visible, slices, schema, options, metas)


def _log_writers(
    storage: Storage,
    timeline: Timeline,
    upto: Sequence[Instant],
    metas: Mapping[str, CommitMetadata],
    later: Sequence[Instant],
) -> dict[str, str]:
    """Table version 6: log path -> the first completed write that wrote it, over the writes
    ``upto`` (whose metadata loading read) and the ``later`` ones (read here: only time
    travel has any). States before a log's writer leave it out (``Visible.log_writers``),
    and so do the earlier states built from this one (``earlier_state``)."""
    written = [(i.timestamp, metas[i.timestamp]) for i in upto if i.timestamp in metas]
    written += [(i.timestamp, commit_metadata(storage, timeline, i)) for i in later]
    return log_writers(written, storage.root)


def ensure_partition_values(config: TableConfig, schema: pa.Schema, root: str) -> None:
    """A table whose data files leave the partition columns out
    (``hoodie.datasource.write.drop.partition.columns=true``) is read with the values its
    partition paths hold, typed by the table schema (``partitions.partition_struct``); raise
    ``UnsupportedFeatureError`` when its paths do not map back to values (a timestamp-based
    or custom key generator, a type a path cannot hold): reading nulls would be wrong rows."""
    if not (config.drop_partition_columns and config.partition_fields):
        return
    if prunable_partition_columns(config, schema) != config.partition_fields:
        raise UnsupportedFeatureError(
            "hoodie.datasource.write.drop.partition.columns",
            f"{root}: partition columns {list(config.partition_fields)} are not stored in the "
            "data files (drop.partition.columns=true) and its partition paths do not map back "
            "to their values (key generator or column type)",
        )


def _metadata_of(
    storage: Storage,
    config: TableConfig,
    timeline: Timeline,
    upto: Sequence[Instant],
    archived: ArchivedWrites,
) -> dict[str, CommitMetadata]:
    """Commit metadata of the writes ``upto``: from the archive for archived ones, else from
    their completed files; a completed file archived (deleted) since the timeline was listed
    is read from the archive too.

    Raises:
        CorruptTableError: undecodable metadata, or a file gone from both places.
    """
    metas: dict[str, CommitMetadata] = {}
    gone: list[Instant] = []
    for i in upto:
        if i.timestamp in archived.metadata:
            metas[i.timestamp] = archived.metadata[i.timestamp]
            continue
        try:
            metas[i.timestamp] = commit_metadata(storage, timeline, i)
        except FileNotFoundError:
            gone.append(i)
    if gone:
        found = load_archived_writes(storage, config, None, since=gone[0].timestamp).metadata
        for i in gone:
            if i.timestamp not in found:
                raise CorruptTableError(
                    f"{timeline.path_of(i)}: the completed instant's file is missing and the "
                    "archived timeline does not hold it"
                )
            metas[i.timestamp] = found[i.timestamp]
    return metas


def _archived_writes(
    storage: Storage,
    config: TableConfig,
    writes: Sequence[Instant],
    version: str | None,
    cutoff: str | None,
) -> ArchivedWrites:
    """The archived writes before the active ones when time travel asks for an older instant
    (``archived_writes``); none otherwise."""
    if not needs_archive(writes, version, cutoff):
        return ArchivedWrites((), {})
    return load_archived_writes(storage, config, writes[0].timestamp if writes else None)


def _pick(
    writes: Sequence[Instant], version: str | None, cutoff: str | None, as_of: bool
) -> Instant | None:
    """The write instant ``version`` names, the last write at or before ``cutoff``, or the
    latest; ``as_of``: ``cutoff`` is a non-write instant, which reads as the empty table when
    no write precedes it."""
    if version is not None:
        wanted = str(version)
        if not wanted and not writes:
            return None  # "" is the version of the table before its first commit
        for i in writes:
            if i.timestamp == wanted:
                return i
        raise VersionNotFoundError(
            f"{wanted!r} is not a completed commit of this Hudi table (completed: {_range(writes)})"
        )
    if cutoff is not None:
        older = [i for i in writes if i.timestamp <= cutoff]
        if not older and as_of:
            return None
        if not older:
            raise VersionNotFoundError(
                f"the table has no completed commit at or before {cutoff} ({_range(writes)})"
            )
        return older[-1]
    return writes[-1] if writes else None


def _range(writes: Sequence[Instant]) -> str:
    return f"{writes[0].timestamp}..{writes[-1].timestamp}" if writes else "none"


def instant_text(timestamp_ms: int) -> str:
    """Epoch ms -> Hudi instant text (yyyyMMddHHmmssSSS, UTC): how time travel by timestamp
    finds its instant, and the instant time of a commit made at ``timestamp_ms``
    (``instant_epoch_ms`` is its inverse). lakecore renders instant times in UTC whatever
    ``hoodie.table.timeline.timezone`` says, and creates tables with it set to UTC."""
    moment = dt.datetime.fromtimestamp(timestamp_ms / 1000, tz=dt.timezone.utc)
    return moment.strftime("%Y%m%d%H%M%S") + f"{moment.microsecond // 1000:03d}"


def instant_epoch_ms(timestamp: str) -> int | None:
    """Hudi instant text (UTC) -> epoch ms; None if it is not a date-time."""
    try:
        moment = dt.datetime.strptime(timestamp[:14], "%Y%m%d%H%M%S").replace(
            tzinfo=dt.timezone.utc
        )
    except ValueError:
        return None
    millis = int(timestamp[14:17]) if len(timestamp) >= 17 and timestamp[14:17].isdigit() else 0
    return int(moment.timestamp() * 1000) + millis


def commit_metadata(storage: Storage, timeline: Timeline, instant: Instant) -> CommitMetadata:
    """Parse the commit metadata of a completed write instant.

    A completed ``replacecommit`` must say which file groups it replaced, or rows it replaced
    come back. Hudi's writers always write ``partitionToReplaceFileIds`` (an empty map when
    nothing was replaced, e.g. an overwrite of an empty table). Java's reader takes empty
    content or a missing key as "nothing replaced" and fails on a null map; hudi-rs refuses
    empty content. lakecore refuses all three, and an empty map when the instant's requested
    or inflight plan names replaced file groups (a clustering plan always does).

    Raises:
        CorruptTableError: undecodable metadata, or a completed replacecommit that does not
            say what it replaced (empty content, no or null ``partitionToReplaceFileIds``, or
            none of the file groups its plan replaces); names the file.
    """
    data = timeline.read_details(storage, instant)
    path = timeline.path_of(instant)
    meta = parse_commit_metadata(data, path)
    if instant.action not in REPLACE_ACTIONS or meta.partition_to_replace_file_ids:
        return meta
    if not meta.replace:  # empty content, or the key missing or null
        what = "is empty" if not data.strip() else "has no partitionToReplaceFileIds"
        raise CorruptTableError(
            f"{path}: the completed replacecommit {what}; it must list the file groups it "
            "replaced (reading it as 'nothing replaced' would bring replaced rows back)"
        )
    planned = sorted(_planned_replacements(storage, timeline, instant))
    if planned:
        raise CorruptTableError(
            f"{path}: the completed replacecommit names no replaced file group, but its plan "
            f"replaces {len(planned)} (e.g. {planned[0][1]} in partition {planned[0][0]!r}); "
            "its metadata is damaged"
        )
    return meta


def _planned_replacements(
    storage: Storage, timeline: Timeline, instant: Instant
) -> set[tuple[str, str]]:
    """File groups the requested / inflight files of ``instant`` say it replaces."""
    out: set[tuple[str, str]] = set()
    for pending in timeline.instants:
        if pending.timestamp != instant.timestamp or pending.state == COMPLETED:
            continue
        try:
            data = timeline.read_details(storage, pending)
        except FileNotFoundError:
            continue  # archived or cleaned up: nothing to compare with
        path = timeline.path_of(pending)
        if pending.state == REQUESTED:
            out.update(parse_clustering_plan(data, path).file_groups())
        else:
            out.update(parse_commit_metadata(data, path).replaced_file_ids())
    return out


def _replaced(
    upto: list[Instant], metas: Mapping[str, CommitMetadata]
) -> frozenset[tuple[str, str]]:
    out: set[tuple[str, str]] = set()
    for i in upto:
        if i.action not in REPLACE_ACTIONS:
            continue
        meta = metas[i.timestamp]
        for partition, file_ids in meta.partition_to_replace_file_ids.items():
            out.update((partition, fid) for fid in file_ids)
    return frozenset(out)


def _schema(
    storage: Storage,
    upto: list[Instant],
    metas: Mapping[str, CommitMetadata],
    slices: tuple[FileSlice, ...],
    config: TableConfig,
) -> pa.Schema:
    avro = None
    source = "hoodie.properties (hoodie.table.create.schema)"
    for i in reversed(upto):
        if i.action in ("commit", "deltacommit", *REPLACE_ACTIONS):
            avro = metas[i.timestamp].extra_metadata.get("schema")
            if avro:
                source = f"the writer schema of instant {i.timestamp} ({i.file_name})"
                break
    if not avro:
        avro = config.create_schema
    data = (
        _without_meta(avro_to_arrow(avro, source)) if avro else _base_file_schema(storage, slices)
    )
    if data is None:
        raise CorruptTableError(
            f"cannot find the schema of the Hudi table at {storage.root}: no commit schema, "
            "no hoodie.table.create.schema and no base file"
        )
    fields = [_partition_field_type(f, config) for f in data]
    if config.drop_partition_columns:
        # A writer that drops partition columns may record a schema without them; Hudi's
        # schema resolver adds them back as strings (their text in the path).
        names = {f.name for f in fields}
        fields += [pa.field(c, pa.string()) for c in config.partition_fields if c not in names]
    if config.populate_meta_fields:
        fields = [pa.field(name, pa.string(), nullable=False) for name in META_FIELDS] + fields
    return pa.schema(fields)


def _partition_field_type(f: pa.Field, config: TableConfig) -> pa.Field:
    """Timestamp-based key generators make partition fields strings (Hudi's own readers, and
    its later commits' schemas, type them so), whatever the first commit recorded."""
    if formats_timestamps(config) and f.name in config.partition_fields:
        return f.with_type(pa.string())
    return f


def _without_meta(schema: pa.Schema) -> pa.Schema:
    return pa.schema([f for f in schema if f.name not in META_FIELDS])


def _base_file_schema(storage: Storage, slices: tuple[FileSlice, ...]) -> pa.Schema | None:
    for s in slices:
        if s.base_file is not None:
            return _without_meta(read_base_schema(storage, s.base_file.path))
    return None
