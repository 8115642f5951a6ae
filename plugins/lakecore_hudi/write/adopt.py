"""Adopting Parquet files another format wrote into a Hudi table (capability ``adopt_files``).

A zero-copy migration in place (``lakecore.migrate(uri, uri, to="hudi", mode="metadata")``)
publishes a Delta table's data files in a Hudi table at the same root without writing data,
as Apache XTable's Hudi target does: Hudi readers take file groups from file names, so a
foreign file can only be listed through the metadata table's ``files`` partition, under
``<file name>_<commit time>_hudiext`` (Hudi's ``ExternalFilePathUtil``; ``_fg%3D<dir>``
before the suffix for a file in a sub-directory of its partition). The file group id is the
file name and the base instant is the commit time.

An adoption is a ``replacecommit`` (operation ``INSERT_OVERWRITE``, as XTable commits its
syncs): its write stats name the adopted files (``path`` = partition path + external name,
``fileId`` = file name; the metadata delta commit of the instant lists them from there,
``mdt.maintain.record_commit``), and ``partitionToReplaceFileIds`` names the file groups of
the files it removes. Removed files stay listed in the ``files`` partition: the replaced
file groups leave the latest view while time travel to earlier instants still reads them,
as with Hudi's own insert overwrites; nothing is deleted (the files belong to the other
format). The instant's inflight file names no file, so a rollback of a failed adoption
deletes nothing but the metadata-table delta commit.

Requirements (``ensure_adoptable``): table version 8 or 9 with the ``files`` partition, and
every file in the directory of its partition (Hudi takes partition values from the path).
A table that adopts files a format wrote without Hudi's meta columns and without the partition
columns (Delta) is created with ``hoodie.populate.meta.fields=false`` and
``hoodie.datasource.write.drop.partition.columns=true`` (``ADOPTION_PROPERTIES``).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import pyarrow as pa

from lakecore.errors import InvalidArgumentError, UnsupportedFeatureError
from lakecore.model import files as fi
from lakecore.storage import Storage
from lakecore_hudi.listing import list_data_files, parse_external_name
from lakecore_hudi.mdt.files_partition import FILES_PARTITION
from lakecore_hudi.mdt.files_records import external_file_name
from lakecore_hudi.names import BaseFile
from lakecore_hudi.partitions import partition_struct, prunable_partition_columns
from lakecore_hudi.state import HudiState
from lakecore_hudi.table_config import TableConfig
from lakecore_hudi.timeline.commit_metadata import (
    CommitMetadata,
    WriteStat,
    encode_commit_metadata,
    stats_by_partition,
)
from lakecore_hudi.timeline.instants import INFLIGHT, REPLACE_COMMIT, make_instant
from lakecore_hudi.timeline.lifecycle import write_inflight
from lakecore_hudi.timeline.rewrite_plans import encode_requested_replace
from lakecore_hudi.write import heartbeat
from lakecore_hudi.write.create import CreateOptions
from lakecore_hudi.write.layout import layout_for
from lakecore_hudi.write.planned import FileGroup, PlannedInstant, start_instant
from lakecore_hudi.write.rollback import rollback_failed_writes, rollback_instant

ADOPT_OPERATION = "INSERT_OVERWRITE"
"""The operation of an adoption's replacecommit (XTable's Hudi target commits so)."""

ADOPTION_PROPERTIES: Mapping[str, str] = {
    "table_type": "COPY_ON_WRITE",
    "metadata_enable": "true",
    "populate_meta_fields": "false",
    "drop_partition_columns": "true",
    "hive_style_partitioning": "true",
    "url_encode_partitions": "true",
}
"""Creation options of a Hudi table over another format's Parquet files (``lakecore.create``
names): copy-on-write, the ``files`` partition that lists them, no ``_hoodie_*`` columns in
them, partition values from hive-style paths escaped as Hive/Spark/Delta escape them."""


def _unfit(options: CreateOptions, partitioned: bool) -> list[str]:
    """The ``option=value`` settings that ``options`` miss for adoption (what
    ``ADOPTION_PROPERTIES`` set and ``target_properties`` must not undo)."""
    needed = [
        ("table_type=COPY_ON_WRITE", options.table_type == "COPY_ON_WRITE"),
        ("table_version=8 or 9", options.table_version in (8, 9)),
        ("metadata_enable=true", options.metadata_enable),
        ("populate_meta_fields=false", not options.populate_meta_fields),
        ("drop_partition_columns=true", options.drop_partition_columns or not partitioned),
        ("hive_style_partitioning=true", options.hive_style or not partitioned),
        ("url_encode_partitions=true", options.url_encode_partitions or not partitioned),
    ]
    return [name for name, fits in needed if not fits]


def table_refusal(
    properties: Mapping[str, str], schema: pa.Schema, partition_by: Sequence[str]
) -> str | None:
    """Why a table created with ``properties`` (``ADOPTION_PROPERTIES`` under the caller's),
    ``schema`` and ``partition_by`` cannot adopt another format's Parquet files as they are
    (None: it can). Checked before the table is created: options that undo what adoption
    needs (Delta's files hold no meta fields and no partition columns, and are listed only
    through the metadata table), and partition columns whose values do not read back from
    path text (timestamps: a path holds no time zone)."""
    try:
        options = CreateOptions.parse(properties, "adopting")
    except ValueError:
        return None  # creation refuses bad options itself, before any IO
    wrong = _unfit(options, bool(partition_by))
    if wrong:
        return (
            "a Hudi table over another format's files in place needs "
            f"{', '.join(wrong)} (Delta's files hold no _hoodie_* meta fields and no "
            "partition columns, and are listed only in the metadata table): leave these "
            "out of target_properties"
        )
    fields = tuple(partition_by)
    if fields and prunable_partition_columns(adopting_config(fields), schema) != fields:
        kinds = ", ".join(f"{f} {schema.field(f).type}" for f in fields if f in schema.names)
        return (
            f"Hudi readers take partition values from the path, and the partition columns "
            f"({kinds}) do not read back from path text (time zones, a key generator)"
        )
    return None


def ensure_adoptable(config: TableConfig) -> None:
    """Raise ``UnsupportedFeatureError`` unless the table can list foreign files: a table
    version lakecore keeps a metadata table for (8, 9) with its ``files`` partition, and no
    other metadata partition (lakecore's column_stats, partition_stats, record_index and
    secondary index records are made from Hudi-named files, not from external ones). Runs
    before anything is written."""
    if config.table_version not in (8, 9) or FILES_PARTITION not in config.metadata_partitions:
        raise UnsupportedFeatureError(
            "adopt_files",
            "a Hudi table lists files written by another format only through its metadata "
            "table's 'files' partition (table version 8 or 9): create it with "
            "metadata_enable=true",
        )
    others = [p for p in config.metadata_partitions if p != FILES_PARTITION]
    building = list(config.metadata_partitions_inflight)
    if others or building:
        name = (others or building)[0]
        raise UnsupportedFeatureError(
            f"hudi-metadata-{name}",
            f"cannot adopt files into this Hudi table: its metadata table has the {name!r} "
            "partition, whose records lakecore makes from Hudi's own files only",
        )


def adopted_stats(state: HudiState, files: pa.Table, instant: str) -> list[WriteStat]:
    """The write stats publishing the file-index rows ``files`` as external base files of
    ``instant``.

    Raises:
        InvalidArgumentError: a file whose directory is not the partition path of its
            partition values (Hudi readers take the values from the path), or one that
            already is a live file of the table; names the file.
    """
    if not files.num_rows:
        return []
    config = state.config
    fields = config.partition_fields
    paths = [str(p) for p in files.column(fi.PATH).to_pylist()]
    sizes = files.column(fi.SIZE).to_pylist()
    counts = (
        files.column(fi.RECORD_COUNT).to_pylist()
        if fi.RECORD_COUNT in files.column_names
        else [None] * files.num_rows
    )
    values = (
        files.column(fi.PARTITION).to_pylist()
        if fi.PARTITION in files.column_names
        else [None] * files.num_rows
    )
    live = {s.path for s in state.slices}
    refusals: dict[tuple[str, str], str | None] = {}  # per partition directory and values
    stats = []
    for path, size, count, value in zip(paths, sizes, counts, values, strict=True):
        if path in live:
            raise InvalidArgumentError(f"cannot adopt {path!r}: it already is a file of the table")
        partition, prefix, name = split_directory(path, fields)
        again = held_refusal(state, path) or name_refusal(path, fields)
        if again is not None:
            raise InvalidArgumentError(f"cannot adopt {path!r}: {again}")
        key = (partition, repr(sorted((value or {}).items())))
        if key not in refusals:
            refusals[key] = path_refusal(config, state.table_schema, path, value or {})
        refusal = refusals[key]
        if refusal is not None:
            raise InvalidArgumentError(f"cannot adopt {path!r}: {refusal}")
        external = external_file_name(name, instant, prefix)
        rows = int(count or 0)
        stats.append(
            WriteStat(
                file_id=f"{prefix}/{name}" if prefix else name,
                path=f"{partition}/{external}" if partition else external,
                partition_path=partition,
                num_writes=rows,
                num_inserts=rows,
                total_write_bytes=int(size or 0),
                file_size_in_bytes=int(size or 0),
            )
        )
    return stats


def split_directory(path: str, fields: Sequence[str]) -> tuple[str, str | None, str]:
    """(partition path, sub-directory inside it or None, file name) of a table-relative
    ``path`` in a table partitioned by ``fields``: the partition path is the first
    ``len(fields)`` directories."""
    directory, _, name = path.rpartition("/")
    segments = directory.split("/") if directory else []
    partition = "/".join(segments[: len(fields)])
    return partition, "/".join(segments[len(fields) :]) or None, name


def name_refusal(path: str, fields: Sequence[str]) -> str | None:
    """Why the file at ``path`` (in a table partitioned by ``fields``) cannot be listed as
    an external file (None: it can): its ``files``-partition entry
    (``<name>_<commit>[_fg%3D<dir>]_hudiext``) would be read back as another file, e.g. a
    name holding ``_<digits>_fg%3D``."""
    partition, prefix, name = split_directory(path, fields)
    entry = external_file_name(name, "0" * 17, prefix)
    found = parse_external_name(partition, entry, 0)
    if found is None or found.info.path != path:
        back = "no file" if found is None else repr(found.info.path)
        return (
            f"Hudi lists it in its metadata table as {entry!r} (with the commit time), which "
            f"reads back as {back}"
        )
    return None


def path_refusal(
    config: TableConfig, schema: pa.Schema, path: str, value: Mapping[str, Any]
) -> str | None:
    """Why a file at ``path`` cannot hold partition values ``value`` in a table of ``config``
    and ``schema`` (None: it can): Hudi readers take the values from the partition path."""
    fields = config.partition_fields
    if not fields:
        return None
    if prunable_partition_columns(config, schema) != fields:
        kinds = ", ".join(f"{f} {schema.field(f).type}" for f in fields if f in schema.names)
        return (
            f"Hudi readers take partition values from the path, and the partition columns "
            f"({kinds}) do not read back from path text (time zones, a key generator)"
        )
    partition = split_directory(path, fields)[0]
    if len(partition.split("/") if partition else []) != len(fields):
        return f"it does not lie in a partition directory of {list(fields)}"
    parsed = partition_struct([partition], fields, schema, config)
    if parsed is None:
        return f"its directory {partition!r} is not a partition path of {list(fields)}"
    found = parsed.to_pylist()[0]
    wanted = {f: value.get(f) for f in fields}
    if not all(_same_value(found.get(f), wanted[f]) for f in fields):
        return f"its directory {partition!r} names partition values {found}, not {wanted}"
    return None


def _same_value(found: Any, wanted: Any) -> bool:
    """Whether a value parsed from a path is the value wanted; NaN (a path may say
    ``NaN``) is itself."""
    if isinstance(found, float) and isinstance(wanted, float) and found != found:
        return wanted != wanted
    return bool(found == wanted)


def held_refusal(state: HudiState, path: str) -> str | None:
    """Why the table of ``state`` cannot adopt the file at ``path`` now: its file group (the
    file name) was adopted and replaced before, and Hudi readers never read a replaced file
    group again (a Delta RESTORE re-adding a file it had removed)."""
    partition, prefix, name = split_directory(path, state.config.partition_fields)
    group = (partition, f"{prefix}/{name}" if prefix else name)
    if group in state.visible.replaced:
        return (
            "the table adopted it before and a later commit removed it; Hudi keeps its file "
            "group replaced, so it would not be read again"
        )
    return None


@functools.lru_cache(maxsize=65536)
def directory_refusal(
    directory: str, values: tuple[tuple[str, Any], ...], types: tuple[tuple[str, pa.DataType], ...]
) -> str | None:
    """``path_refusal`` in a table created with ``ADOPTION_PROPERTIES`` for a file in
    ``directory`` with partition values ``values`` ((column, value) pairs, in partition
    order) of ``types``; cached: a table's files share few directories."""
    fields = [f for f, _ in values]
    schema = pa.schema([pa.field(f, t) for f, t in types])
    return path_refusal(adopting_config(fields), schema, f"{directory}/_", dict(values))


def adopting_config(partition_by: Sequence[str]) -> TableConfig:
    """The configuration (as far as partition paths go) of a table created with
    ``ADOPTION_PROPERTIES``, partitioned by ``partition_by``."""
    raw = {
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.datasource.write.partitionpath.urlencode": "true",
        "hoodie.datasource.write.drop.partition.columns": "true",
        "hoodie.table.partition.fields": ",".join(partition_by),
    }
    return TableConfig(raw, "adopting", "COPY_ON_WRITE", 8)


def replaced_groups(state: HudiState, removed: pa.Table) -> set[FileGroup]:
    """The file groups of the file-index rows ``removed`` (matched by ``path``).

    Raises:
        InvalidArgumentError: a path that is not a live slice of the snapshot.
    """
    if not removed.num_rows:
        return set()
    where = {s.path: (s.partition_path, s.file_id) for s in state.slices}
    paths = [str(p) for p in removed.column(fi.PATH).to_pylist()]
    unknown = sorted({p for p in paths if p not in where})
    if unknown:
        raise InvalidArgumentError(
            f"{len(unknown)} removed file(s) are not live files of Hudi instant "
            f"{state.version}: {unknown[:5]}"
        )
    return {where[p] for p in paths}


def start_adoption(storage: Storage, state: HudiState, at: str | None) -> PlannedInstant:
    """Claim a replacecommit instant (at instant time ``at``, if given) for an adoption that
    no write of the transaction planned: requested and inflight (naming no file), its
    heartbeat beating until the commit completes or aborts it.

    Raises:
        CommitError / CommitConflictError: the instant time could not be claimed.
    """
    config = state.config
    rollback_failed_writes(storage, config)
    ts = start_instant(
        storage, config, REPLACE_COMMIT, encode_requested_replace(ADOPT_OPERATION), at=at
    )
    try:
        workload = encode_commit_metadata(CommitMetadata({}, ADOPT_OPERATION), config.table_version)
        write_inflight(storage, config, REPLACE_COMMIT, ts, workload)
    except BaseException:
        heartbeat.stop(storage, ts)
        with contextlib.suppress(Exception):  # the claim's own error is the one to report
            rollback_instant(
                storage,
                config,
                make_instant(ts, REPLACE_COMMIT, INFLIGHT, config.timeline_layout_version),
            )
        raise
    schema = layout_for(config, state.table_schema).data_avro_json()
    metadata = CommitMetadata({}, ADOPT_OPERATION, extra_metadata={"schema": schema}, replace=True)
    return PlannedInstant(ts, REPLACE_COMMIT, metadata, (), frozenset())


def fold(
    planned: PlannedInstant, stats: Sequence[WriteStat], groups: set[FileGroup]
) -> PlannedInstant:
    """``planned`` also publishing ``stats`` and replacing ``groups`` (which it then
    touches: a concurrent write to them conflicts).

    Raises:
        UnsupportedFeatureError: ``groups`` to replace in an instant that is no replacecommit.
    """
    if groups and planned.action != REPLACE_COMMIT:
        raise UnsupportedFeatureError(
            "hudi-remove-in-write",
            "removing files with adopted ones needs a replacecommit: stage them alone or "
            "with replace_files",
        )
    meta = planned.metadata
    replace_ids = {p: list(ids) for p, ids in meta.partition_to_replace_file_ids.items()}
    for partition, file_id in sorted(groups):
        replace_ids.setdefault(partition, []).append(file_id)
    metadata = replace(
        meta,
        partition_to_write_stats=stats_by_partition(stats, meta.partition_to_write_stats),
        partition_to_replace_file_ids=replace_ids,
    )
    return replace(planned, metadata=metadata, touched=planned.touched | frozenset(groups))


def holds_adopted_files(storage: Storage, state: HudiState) -> bool:
    """Whether the table's ``files`` partition lists external files (adopted ones, live or
    replaced)."""
    if FILES_PARTITION not in state.config.metadata_partitions:
        return False
    listing = list_data_files(storage, state.config, state.timeline, state.options)
    return any(isinstance(f.name, BaseFile) and not f.name.write_token for f in listing)
