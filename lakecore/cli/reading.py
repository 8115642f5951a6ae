"""The commands that read a table: info, schema, properties, history, files, head, scan,
changes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict
from typing import Annotated, Any

import pyarrow as pa
import typer

from lakecore.cli import render
from lakecore.cli.base import (
    AtTimeOpt,
    AtVersionOpt,
    ColumnsOpt,
    FormatOpt,
    JsonOpt,
    LimitOpt,
    OptionsOpt,
    UriArg,
    column_list,
    command,
    doc_header,
    emit,
    entry_limit,
    given_version,
    open_table,
    snapshot_at,
    stdout,
    version_arg,
)
from lakecore.model.files import live_record_count


def take_rows(batches: Iterator[pa.RecordBatch], schema: pa.Schema, limit: int | None) -> pa.Table:
    """The first ``limit`` rows of ``batches`` (all when None); stops reading once it has them."""
    taken: list[pa.RecordBatch] = []
    count = 0
    for batch in batches:
        if limit is not None and count + batch.num_rows >= limit:
            taken.append(batch.slice(0, limit - count))
            break
        taken.append(batch)
        count += batch.num_rows
    return pa.Table.from_batches(taken, schema=schema)


@command()
def info(
    uri: UriArg,
    as_of_version: AtVersionOpt = None,
    as_of_timestamp: AtTimeOpt = None,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
    storage_options: OptionsOpt = None,
) -> None:
    """Format, version, features, partitioning, size and schema of a table."""
    table = open_table(uri, fmt, storage_options)
    snap = snapshot_at(table, as_of_version, as_of_timestamp)
    files = snap.files()
    features = snap.features
    doc = doc_header(table, snap) | {
        "format_version": features.format_version,
        "reader_features": sorted(features.reader_features),
        "writer_features": sorted(features.writer_features),
        "merge_on_read": features.merge_on_read,
        "record_key": list(features.record_key),
        "partition_columns": list(snap.partition_columns),
        "files": files.num_rows,
        "bytes": sum(v or 0 for v in files.column("size").to_pylist()),
        "records": index_live_records(files),
        "properties": dict(snap.properties),
        "schema": render.schema_doc(snap.schema),
    }
    if as_json:
        emit(doc)
        return
    typer.echo(f"{table.uri}  format={table.format}  version={snap.version}")
    out = stdout()
    rows = [
        ("timestamp", render.readable_utc(snap.timestamp)),
        ("format version", features.format_version),
        ("reader features", ", ".join(doc["reader_features"]) or "-"),
        ("writer features", ", ".join(doc["writer_features"]) or "-"),
        ("merge on read", "yes" if features.merge_on_read else "no"),
        ("record key", ", ".join(features.record_key) or "-"),
        ("partition columns", ", ".join(snap.partition_columns) or "-"),
        ("files", str(doc["files"])),
        ("size", render.readable_size(doc["bytes"])),
        ("records (live)", "unknown" if doc["records"] is None else str(doc["records"])),
        ("properties", str(len(snap.properties))),
    ]
    out.print(render.grid(("", ""), rows, show_header=False))
    out.print(_schema_grid(snap.schema))


def index_live_records(files: pa.Table) -> int | None:
    """Live rows by the file index (record counts minus deleted rows), without reading data;
    None when a file's count is unknown (e.g. a merge-on-read slice whose logs decide it)."""
    if files.column("record_count").null_count:
        return None
    return live_record_count(files)


def _schema_grid(schema: pa.Schema) -> Any:
    return render.grid(
        ("column", "type", "nullable"),
        ((f.name, str(f.type), "yes" if f.nullable else "no") for f in schema),
    )


@command()
def schema(
    uri: UriArg,
    as_of_version: AtVersionOpt = None,
    as_of_timestamp: AtTimeOpt = None,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
    storage_options: OptionsOpt = None,
) -> None:
    """The table's columns: name, type, nullability (field metadata with --json)."""
    table = open_table(uri, fmt, storage_options)
    snap = snapshot_at(table, as_of_version, as_of_timestamp)
    if as_json:
        emit(doc_header(table, snap) | {"fields": render.schema_doc(snap.schema)})
        return
    stdout().print(_schema_grid(snap.schema))


@command()
def properties(
    uri: UriArg,
    as_of_version: AtVersionOpt = None,
    as_of_timestamp: AtTimeOpt = None,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
    storage_options: OptionsOpt = None,
) -> None:
    """The table's properties (Delta configuration, hoodie.properties, Lance config)."""
    table = open_table(uri, fmt, storage_options)
    snap = snapshot_at(table, as_of_version, as_of_timestamp)
    if as_json:
        emit(doc_header(table, snap) | {"properties": dict(snap.properties)})
        return
    rows = sorted(snap.properties.items())
    stdout().print(render.grid(("property", "value"), rows, f"{len(rows)} properties"))


@command()
def history(
    uri: UriArg,
    limit: LimitOpt = None,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
    storage_options: OptionsOpt = None,
) -> None:
    """The table's commits, newest first."""
    table = open_table(uri, fmt, storage_options)
    entries = table.history(limit=entry_limit(limit, as_json))
    if as_json:
        docs = [
            {
                "version": e.version,
                "timestamp": render.iso_utc(e.timestamp),
                "operation": e.operation,
                "parameters": e.parameters,
                "app_metadata": e.app_metadata,
                "info": e.info,
            }
            for e in entries
        ]
        emit(doc_header(table) | {"history": docs})
        return
    rows = [
        (
            str(e.version),
            render.readable_utc(e.timestamp),
            e.operation,
            json.dumps(render.jsonable(e.parameters)) if e.parameters else "",
        )
        for e in entries
    ]
    stdout().print(render.grid(("version", "timestamp", "operation", "parameters"), rows))


@command()
def files(
    uri: UriArg,
    as_of_version: AtVersionOpt = None,
    as_of_timestamp: AtTimeOpt = None,
    limit: LimitOpt = None,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
    storage_options: OptionsOpt = None,
) -> None:
    """The live data files of a version (the file index)."""
    table = open_table(uri, fmt, storage_options)
    snap = snapshot_at(table, as_of_version, as_of_timestamp)
    index = snap.files()
    shown = index.slice(0, entry_limit(limit, as_json)).to_pylist()
    if as_json:
        emit(doc_header(table, snap) | {"total": index.num_rows, "files": shown})
        return
    rows = [
        (
            f["path"],
            render.readable_size(f.get("size")),
            f.get("record_count"),
            (f.get("deletion") or {}).get("cardinality", 0),
            f.get("partition"),
            render.readable_utc(f.get("modification_time")),
        )
        for f in shown
    ]
    columns = ("path", "size", "records", "deleted", "partition", "modified")
    stdout().print(render.grid(columns, rows, f"{index.num_rows} files"))


@command()
def head(
    uri: UriArg,
    rows: Annotated[int, typer.Option("--rows", "-n", min=0, help="how many rows")] = 10,
    columns: ColumnsOpt = None,
    as_of_version: AtVersionOpt = None,
    as_of_timestamp: AtTimeOpt = None,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
    storage_options: OptionsOpt = None,
) -> None:
    """The first rows of a version (reads only the files it needs)."""
    table = open_table(uri, fmt, storage_options)
    snap = snapshot_at(table, as_of_version, as_of_timestamp)
    names = column_list(columns)
    scan = snap.scan(columns=names)
    data = take_rows(scan.to_batches(), snap.output_schema(names), rows)
    _print_rows(doc_header(table, snap), data, as_json)


def _print_rows(header: dict[str, Any], data: pa.Table, as_json: bool) -> None:
    if as_json:
        emit(header | {"rows": data.to_pylist()})
        return
    stdout().print(render.rows_grid(data, f"{data.num_rows} rows"))


@command()
def scan(
    uri: UriArg,
    where: Annotated[
        str | None, typer.Option("--where", "-w", help="Spark SQL predicate on the rows")
    ] = None,
    columns: ColumnsOpt = None,
    limit: Annotated[
        int | None, typer.Option("--limit", min=0, help="at most this many rows [default: all]")
    ] = None,
    explain: Annotated[
        bool, typer.Option("--explain", help="show the plan (files pruned, bytes), read nothing")
    ] = False,
    as_of_version: AtVersionOpt = None,
    as_of_timestamp: AtTimeOpt = None,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
    storage_options: OptionsOpt = None,
) -> None:
    """The rows matching --where, pruned by partitions and file stats (see --explain)."""
    table = open_table(uri, fmt, storage_options)
    planned = table.scan(
        where,
        columns=column_list(columns),
        version=version_arg(as_of_version),
        timestamp=version_arg(as_of_timestamp),
    )
    header = doc_header(table, planned.snapshot)
    if explain:
        plan = planned.explain()
        if as_json:
            emit(header | {"explain": asdict(plan) | {"files_pruned": plan.files_pruned}})
        else:
            typer.echo(str(plan))
        return
    output = planned.snapshot.output_schema(planned.columns)
    _print_rows(header, take_rows(planned.to_batches(), output, limit), as_json)


@command()
def changes(
    uri: UriArg,
    start: Annotated[str, typer.Argument(help="first version of the change feed")],
    end: Annotated[str | None, typer.Argument(help="last version [default: latest]")] = None,
    limit: LimitOpt = None,
    include_meta: Annotated[
        bool,
        typer.Option(
            "--include-meta",
            help="keep the format's system columns (Hudi's _hoodie_*); other formats have none",
        ),
    ] = False,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
    storage_options: OptionsOpt = None,
) -> None:
    """The rows changed by versions START through END (_change_type, _commit_version, ...)."""
    table = open_table(uri, fmt, storage_options)
    begin = given_version(start)
    data = table.changes(begin, version_arg(end), include_meta=include_meta)
    shown = data.slice(0, entry_limit(limit, as_json))
    header = doc_header(table) | {"start": begin, "end": version_arg(end), "total": data.num_rows}
    if as_json:
        emit(header | {"rows": shown.to_pylist()})
        return
    stdout().print(render.rows_grid(shown, f"{data.num_rows} changed rows"))
