"""The ``lakecore`` command: look at any table lakecore can open."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table as RichTable

import lakecore
from lakecore.errors import LakecoreError

app = typer.Typer(help="Inspect and migrate Delta, Hudi and Lance tables.", no_args_is_help=True)
console = Console()

UriArg = Annotated[str, typer.Argument(help="table location: path, file://, memory://, s3://")]
VersionOpt = Annotated[str | None, typer.Option("--version", "-v", help="version to read")]
OptionsOpt = Annotated[
    str | None, typer.Option("--storage-options", help="JSON object of filesystem options")
]


def _open(uri: str, storage_options: str | None) -> lakecore.Table:
    options: dict[str, Any] | None = json.loads(storage_options) if storage_options else None
    return lakecore.open(uri, storage_options=options)


def _version(raw: str | None) -> int | str | None:
    if raw is None:
        return None
    return int(raw) if raw.isdigit() else raw


@app.command()
def info(uri: UriArg, version: VersionOpt = None, storage_options: OptionsOpt = None) -> None:
    """Format, version, schema, partitioning and size of a table."""
    table = _open(uri, storage_options)
    snap = table.snapshot(_version(version))
    files = snap.files()
    console.print(f"[bold]{table.uri}[/]  format={table.format}  version={snap.version}")
    console.print(f"partition columns: {list(snap.partition_columns) or '-'}")
    console.print(f"files: {files.num_rows}  bytes: {sum(files.column('size').to_pylist())}")
    console.print(str(snap.schema))


@app.command()
def files(
    uri: UriArg,
    version: VersionOpt = None,
    limit: int = 20,
    storage_options: OptionsOpt = None,
) -> None:
    """The live data files of a version."""
    index = _open(uri, storage_options).snapshot(_version(version)).files()
    grid = RichTable(title=f"{index.num_rows} files")
    for col in ("path", "size", "record_count", "partition"):
        grid.add_column(col)
    for row in index.slice(0, limit).to_pylist():
        grid.add_row(row["path"], str(row["size"]), str(row["record_count"]), str(row["partition"]))
    console.print(grid)


@app.command()
def history(uri: UriArg, limit: int = 20, storage_options: OptionsOpt = None) -> None:
    """The table's commits, newest first."""
    grid = RichTable()
    for col in ("version", "timestamp", "operation", "parameters"):
        grid.add_column(col)
    for e in _open(uri, storage_options).history(limit=limit):
        grid.add_row(str(e.version), str(e.timestamp), str(e.operation), json.dumps(e.parameters))
    console.print(grid)


@app.command()
def head(
    uri: UriArg, version: VersionOpt = None, rows: int = 10, storage_options: OptionsOpt = None
) -> None:
    """The first rows of a version."""
    data = _open(uri, storage_options).snapshot(_version(version)).to_arrow()
    console.print(data.slice(0, rows).to_pandas().to_string() if rows else "")


@app.command()
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
    storage_options: OptionsOpt = None,
) -> None:
    """Migrate a table into another format (again: only the source's new versions)."""
    from rich.progress import Progress

    options: dict[str, Any] | None = json.loads(storage_options) if storage_options else None
    properties: dict[str, str] | None = json.loads(target_properties) if target_properties else None
    with Progress(console=console, transient=True) as bar:
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
            target_properties=properties,
            progress=advance,
        )
    console.print(
        f"{report.source_format} -> {report.target_format}: "
        f"{report.versions_translated} source version(s) in {report.commits} commit(s), "
        f"{report.rows} rows, {report.files_rewritten} files written, "
        f"{report.files_removed} removed, {report.deletes_carried} deletes carried, "
        f"{report.seconds:.1f} s"
    )
    for note in report.notes:
        console.print(f"note: {note}")


def main() -> None:
    """Entry point of the ``lakecore`` script: errors become one line and exit code 1."""
    try:
        app()
    except LakecoreError as exc:
        console.print(f"[red]{type(exc).__name__}[/]: {exc}")
        raise SystemExit(1) from None
