"""The ``lakecore`` command: look at, maintain and migrate any table lakecore can open.

Conventions every command follows:

- Time travel is ``--as-of-version N`` / ``--as-of-timestamp TS`` (Spark's ``versionAsOf`` /
  ``timestampAsOf``, Iceberg's ``as-of-timestamp``), never ``--version``, which is the program's.
- ``--json`` prints one JSON document on stdout (``lakecore.cli_render``); progress and errors
  go to stderr.
- An error is one line on stderr, ``error: ClassName: message``, and exit code 1, no traceback
  (set ``LAKECORE_TRACEBACK=1`` to get it); usage errors keep click's exit code 2.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict
from importlib import metadata
from typing import Annotated, Any, ParamSpec

import click
import pyarrow as pa
import typer
from rich.console import Console
from rich.progress import (
    Progress,
    ProgressColumn,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

import lakecore
from lakecore import cli_render as render
from lakecore.errors import InvalidArgumentError, LakecoreError
from lakecore.model.files import live_record_count

app = typer.Typer(
    help="Inspect, maintain and migrate Delta, Hudi and Lance tables.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

P = ParamSpec("P")

UriArg = Annotated[str, typer.Argument(help="table location: path, file://, memory://, s3://")]
AtVersionOpt = Annotated[
    str | None,
    typer.Option("--as-of-version", help="read this version (number, Hudi instant, Lance tag)"),
]
AtTimeOpt = Annotated[
    str | None,
    typer.Option(
        "--as-of-timestamp",
        help="read the table as of this time (ISO-8601, UTC if no offset; or epoch ms)",
    ),
]
OptionsOpt = Annotated[
    str | None, typer.Option("--storage-options", help="JSON object of filesystem options")
]
FormatOpt = Annotated[
    str | None, typer.Option("--format", help="delta, hudi or lance: skip detecting the format")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="print one JSON document")]
LimitOpt = Annotated[
    int | None,
    typer.Option("--limit", min=0, help="at most this many entries [default: 20, all with --json]"),
]
ColumnsOpt = Annotated[
    list[str] | None,
    typer.Option("--columns", "-c", help="columns to read (comma-separated or repeated)"),
]

_TABLE_LIMIT = 20


def _stdout() -> Console:
    # Made per call: the width (COLUMNS) and stream are those of this invocation.
    return Console()


def _fail(exc: BaseException) -> None:
    typer.secho(f"error: {render.one_line(exc)}", fg="red", err=True)
    raise typer.Exit(1)


def _reported(func: Callable[P, None]) -> Callable[P, None]:
    """Run a command so that any error is one line on stderr and exit code 1."""

    @functools.wraps(func)
    def run(*args: P.args, **kwargs: P.kwargs) -> None:
        try:
            func(*args, **kwargs)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise  # typer's own exits and usage errors (exit code 2) stay as they are
        except LakecoreError as exc:
            _fail(exc)
        except Exception as exc:
            # Not a lakecore error: a bug, still one line unless the traceback is asked for.
            if os.environ.get("LAKECORE_TRACEBACK"):
                raise
            _fail(exc)

    return run


def _command(
    name: str | None = None,
) -> Callable[[Callable[P, None]], Callable[P, None]]:
    def register(func: Callable[P, None]) -> Callable[P, None]:
        wrapped = _reported(func)
        app.command(name)(wrapped)
        return wrapped

    return register


def _package_version() -> str:
    try:
        return metadata.version("lakecore")
    except metadata.PackageNotFoundError:  # running from a source tree that is not installed
        return lakecore.__version__


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"lakecore {_package_version()}")
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_show_version, is_eager=True, help="print lakecore's version"
        ),
    ] = False,
) -> None:
    """Inspect, maintain and migrate Delta, Hudi and Lance tables."""


# ---------------------------------------------------------------- arguments


def _json_object(option: str, raw: str | None) -> dict[str, Any] | None:
    """The JSON object given to ``option``; ``InvalidArgumentError`` for anything else."""
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InvalidArgumentError(f"{option} is not valid JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise InvalidArgumentError(f"{option} must be a JSON object, not {raw!r}")
    return value


def _open(uri: str, fmt: str | None, storage_options: str | None) -> lakecore.Table:
    options = _json_object("--storage-options", storage_options)
    return lakecore.open(uri, format=fmt, storage_options=options)


def _version(raw: str | None) -> int | str | None:
    """A version or timestamp as typed: digits are a number (version, epoch ms), else text
    (a Lance tag, ISO-8601); Hudi instants are digits and Hudi takes them either way."""
    if raw is None:
        return None
    return int(raw) if raw.isdigit() else raw


def _snapshot(
    table: lakecore.Table, version: str | None, timestamp: str | None
) -> lakecore.Snapshot:
    return table.snapshot(_version(version), _version(timestamp))


def _columns(raw: list[str] | None) -> list[str] | None:
    if not raw:
        return None
    return [name.strip() for item in raw for name in item.split(",") if name.strip()]


def _limit(limit: int | None, as_json: bool) -> int | None:
    return limit if limit is not None else (None if as_json else _TABLE_LIMIT)


def _header(table: lakecore.Table, snap: lakecore.Snapshot | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {"uri": table.uri, "format": table.format}
    if snap is not None:
        doc["version"] = snap.version
        doc["timestamp"] = render.iso_utc(snap.timestamp)
    return doc


def _emit(document: dict[str, Any]) -> None:
    typer.echo(render.dumps(document))


def _take(batches: Iterator[pa.RecordBatch], schema: pa.Schema, limit: int | None) -> pa.Table:
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


def _progress(*columns: ProgressColumn) -> Progress:
    """Progress on stderr, drawn only on a terminal (a pipe or log gets nothing from it)."""
    err = Console(stderr=True)
    return Progress(*columns, console=err, transient=True, disable=not err.is_terminal)


@contextlib.contextmanager
def _working(description: str) -> Iterator[None]:
    """A spinner with elapsed time on stderr while a long operation runs."""
    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    with _progress(*columns) as bar:
        bar.add_task(description, total=None)
        yield


# ---------------------------------------------------------------- reading


@_command()
def info(
    uri: UriArg,
    as_of_version: AtVersionOpt = None,
    as_of_timestamp: AtTimeOpt = None,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
    storage_options: OptionsOpt = None,
) -> None:
    """Format, version, features, partitioning, size and schema of a table."""
    table = _open(uri, fmt, storage_options)
    snap = _snapshot(table, as_of_version, as_of_timestamp)
    files = snap.files()
    features = snap.features
    doc = _header(table, snap) | {
        "format_version": features.format_version,
        "reader_features": sorted(features.reader_features),
        "writer_features": sorted(features.writer_features),
        "merge_on_read": features.merge_on_read,
        "record_key": list(features.record_key),
        "partition_columns": list(snap.partition_columns),
        "files": files.num_rows,
        "bytes": sum(v or 0 for v in files.column("size").to_pylist()),
        "records": live_record_count(files),
        "properties": len(snap.properties),
        "schema": render.schema_doc(snap.schema),
    }
    if as_json:
        _emit(doc)
        return
    typer.echo(f"{table.uri}  format={table.format}  version={snap.version}")
    out = _stdout()
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
        ("records (live)", str(doc["records"])),
        ("properties", str(doc["properties"])),
    ]
    out.print(render.grid(("", ""), rows))
    out.print(_schema_grid(snap.schema))


def _schema_grid(schema: pa.Schema) -> Any:
    return render.grid(
        ("column", "type", "nullable"),
        ((f.name, str(f.type), "yes" if f.nullable else "no") for f in schema),
    )


@_command()
def schema(
    uri: UriArg,
    as_of_version: AtVersionOpt = None,
    as_of_timestamp: AtTimeOpt = None,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
    storage_options: OptionsOpt = None,
) -> None:
    """The table's columns: name, type, nullability (field metadata with --json)."""
    table = _open(uri, fmt, storage_options)
    snap = _snapshot(table, as_of_version, as_of_timestamp)
    if as_json:
        _emit(_header(table, snap) | {"fields": render.schema_doc(snap.schema)})
        return
    _stdout().print(_schema_grid(snap.schema))


@_command()
def properties(
    uri: UriArg,
    as_of_version: AtVersionOpt = None,
    as_of_timestamp: AtTimeOpt = None,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
    storage_options: OptionsOpt = None,
) -> None:
    """The table's properties (Delta configuration, hoodie.properties, Lance config)."""
    table = _open(uri, fmt, storage_options)
    snap = _snapshot(table, as_of_version, as_of_timestamp)
    if as_json:
        _emit(_header(table, snap) | {"properties": dict(snap.properties)})
        return
    rows = sorted(snap.properties.items())
    _stdout().print(render.grid(("property", "value"), rows, f"{len(rows)} properties"))


@_command()
def history(
    uri: UriArg,
    limit: LimitOpt = None,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
    storage_options: OptionsOpt = None,
) -> None:
    """The table's commits, newest first."""
    table = _open(uri, fmt, storage_options)
    entries = table.history(limit=_limit(limit, as_json))
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
        _emit(_header(table) | {"history": docs})
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
    _stdout().print(render.grid(("version", "timestamp", "operation", "parameters"), rows))


@_command()
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
    table = _open(uri, fmt, storage_options)
    snap = _snapshot(table, as_of_version, as_of_timestamp)
    index = snap.files()
    shown = index.slice(0, _limit(limit, as_json)).to_pylist()
    if as_json:
        _emit(_header(table, snap) | {"total": index.num_rows, "files": shown})
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
    _stdout().print(render.grid(columns, rows, f"{index.num_rows} files"))


@_command()
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
    table = _open(uri, fmt, storage_options)
    snap = _snapshot(table, as_of_version, as_of_timestamp)
    names = _columns(columns)
    scan = snap.scan(columns=names)
    data = _take(scan.to_batches(), snap.output_schema(names), rows)
    _print_rows(_header(table, snap), data, as_json)


def _print_rows(header: dict[str, Any], data: pa.Table, as_json: bool) -> None:
    if as_json:
        _emit(header | {"rows": data.to_pylist()})
        return
    _stdout().print(render.rows_grid(data, f"{data.num_rows} rows"))


@_command()
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
    table = _open(uri, fmt, storage_options)
    planned = table.scan(
        where,
        columns=_columns(columns),
        version=_version(as_of_version),
        timestamp=_version(as_of_timestamp),
    )
    header = _header(table, planned.snapshot)
    if explain:
        plan = planned.explain()
        if as_json:
            _emit(header | {"explain": asdict(plan) | {"files_pruned": plan.files_pruned}})
        else:
            typer.echo(str(plan))
        return
    output = planned.snapshot.output_schema(planned.columns)
    _print_rows(header, _take(planned.to_batches(), output, limit), as_json)


@_command()
def changes(
    uri: UriArg,
    start: Annotated[str, typer.Argument(help="first version of the change feed")],
    end: Annotated[str | None, typer.Argument(help="last version [default: latest]")] = None,
    limit: LimitOpt = None,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
    storage_options: OptionsOpt = None,
) -> None:
    """The rows changed by versions START through END (_change_type, _commit_version, ...)."""
    table = _open(uri, fmt, storage_options)
    begin = _version(start)
    assert begin is not None  # a required argument
    data = table.changes(begin, _version(end))
    shown = data.slice(0, _limit(limit, as_json))
    header = _header(table) | {"start": begin, "end": _version(end), "total": data.num_rows}
    if as_json:
        _emit(header | {"rows": shown.to_pylist()})
        return
    _stdout().print(render.rows_grid(shown, f"{data.num_rows} changed rows"))


# ---------------------------------------------------------------- maintenance


def _report(as_json: bool, document: dict[str, Any], text: str, paths: Sequence[str] = ()) -> None:
    if as_json:
        _emit(document)
        return
    typer.echo(text)
    for path in paths:
        typer.echo(f"  {path}")


@_command()
def vacuum(
    uri: UriArg,
    retention_hours: Annotated[
        float, typer.Option("--retention-hours", help="keep files versions this recent need")
    ] = 168,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="only list the files that would be deleted")
    ] = False,
    enforce_retention: Annotated[
        bool,
        typer.Option(
            "--enforce-retention/--no-enforce-retention",
            help="refuse a retention below 168 hours (readers may still need those files)",
        ),
    ] = True,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
    storage_options: OptionsOpt = None,
) -> None:
    """Delete data files no version within the retention needs (Delta, Lance)."""
    table = _open(uri, fmt, storage_options)
    with _working("vacuum: listing files" if dry_run else "vacuum: deleting files"):
        paths = table.vacuum(retention_hours, dry_run=dry_run, enforce_retention=enforce_retention)
    verb = "would delete" if dry_run else "deleted"
    _report(
        as_json,
        _header(table) | {"operation": "vacuum", "dry_run": dry_run, "files": paths},
        f"vacuum{' (dry run)' if dry_run else ''}: {verb} {len(paths)} file(s)",
        paths,
    )


@_command()
def clean(
    uri: UriArg,
    retain_commits: Annotated[
        int, typer.Option("--retain-commits", min=1, help="commits whose files are kept")
    ] = 10,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
    storage_options: OptionsOpt = None,
) -> None:
    """Delete file slices only commits before the last --retain-commits need (Hudi)."""
    table = _open(uri, fmt, storage_options)
    with _working("clean: deleting files"):
        paths = table.clean(retain_commits)
    _report(
        as_json,
        _header(table) | {"operation": "clean", "files": paths},
        f"clean: deleted {len(paths)} file(s)",
        paths,
    )


@_command()
def optimize(
    uri: UriArg,
    target_file_size: Annotated[
        int | None, typer.Option("--target-file-size", min=1, help="bytes per file to aim for")
    ] = None,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
    storage_options: OptionsOpt = None,
) -> None:
    """Rewrite small data files into bigger ones; rows stay the same (Delta, Lance)."""
    table = _open(uri, fmt, storage_options)
    before = table.snapshot()
    files_before = before.files().num_rows
    with _working("optimize: rewriting small files"):
        version = table.optimize(target_file_size)
    files_after = table.snapshot(version).files().num_rows
    changed = version != before.version
    text = (
        f"optimize: {files_before} -> {files_after} file(s), version {version}"
        if changed
        else f"optimize: nothing to do ({files_before} file(s), version {version})"
    )
    doc = _header(table) | {
        "operation": "optimize",
        "version": version,
        "committed": changed,
        "files_before": files_before,
        "files_after": files_after,
    }
    _report(as_json, doc, text)


@_command()
def compact(
    uri: UriArg,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
    storage_options: OptionsOpt = None,
) -> None:
    """Merge log files into new base files (Hudi merge-on-read compaction)."""
    table = _open(uri, fmt, storage_options)
    with _working("compact: merging log files"):
        instant = table.compact()
    text = (
        "compact: no file slice has log files, nothing to do"
        if instant is None
        else f"compact: wrote version {instant}"
    )
    _report(as_json, _header(table) | {"operation": "compact", "version": instant}, text)


@_command()
def checkpoint(
    uri: UriArg,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
    storage_options: OptionsOpt = None,
) -> None:
    """Write a checkpoint of the latest version (Delta)."""
    table = _open(uri, fmt, storage_options)
    version = table.checkpoint()
    _report(
        as_json,
        _header(table) | {"operation": "checkpoint", "version": version},
        f"checkpoint: written for version {version}",
    )


@_command()
def restore(
    uri: UriArg,
    version: Annotated[str, typer.Argument(help="the version whose rows to bring back")],
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
    storage_options: OptionsOpt = None,
) -> None:
    """Commit a new version whose rows are those of VERSION (Delta, Lance)."""
    table = _open(uri, fmt, storage_options)
    restored = _version(version)
    assert restored is not None  # a required argument
    new_version = table.restore(restored)
    _report(
        as_json,
        _header(table) | {"operation": "restore", "restored": restored, "version": new_version},
        f"restore: version {new_version} holds the rows of version {restored}",
    )


@_command()
def migrate(
    source: Annotated[str, typer.Argument(help="the table to migrate")],
    target: Annotated[str, typer.Argument(help="where the migrated table goes")],
    to: Annotated[str, typer.Option("--to", help="target format: delta, hudi or lance")],
    mode: Annotated[str, typer.Option(help="auto, rewrite or metadata (zero-copy)")] = "auto",
    with_history: Annotated[
        bool, typer.Option("--history", help="replay every source version as one commit")
    ] = False,
    source_format: Annotated[
        str | None, typer.Option("--source-format", help="skip detecting the source's format")
    ] = None,
    target_properties: Annotated[
        str | None, typer.Option("--target-properties", help="JSON object: target properties")
    ] = None,
    as_json: JsonOpt = False,
    storage_options: OptionsOpt = None,
) -> None:
    """Migrate a table into another format (again: only the source's new versions)."""
    options = _json_object("--storage-options", storage_options)
    props = _json_object("--target-properties", target_properties)
    with _progress() as bar:
        task = bar.add_task("source versions", total=None)

        def advance(done: int, total: int, version: int | str) -> None:
            bar.update(task, completed=done, total=total, description=f"source version {version}")

        report = lakecore.migrate(
            source,
            target,
            to,
            mode=mode,
            history=with_history,
            source_format=source_format,
            storage_options=options,
            target_properties=props,
            progress=advance,
        )
    if as_json:
        _emit(asdict(report) | {"versions_translated": report.versions_translated})
        return
    typer.echo(
        f"{report.source_format} -> {report.target_format}: "
        f"{report.versions_translated} source version(s) in {report.commits} commit(s), "
        f"{report.rows} rows, {report.files_rewritten} files written, "
        f"{report.files_removed} removed, {report.deletes_carried} deletes carried, "
        f"{report.seconds:.1f} s"
    )
    for note in report.notes:
        typer.echo(f"note: {note}")


def main() -> None:
    """Entry point of the ``lakecore`` script (errors: one line, exit code 1)."""
    app(prog_name="lakecore")
