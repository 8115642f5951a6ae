"""The commands that change a table: vacuum, clean, optimize, compact, checkpoint, restore,
migrate. Each prints what it did (``--json``: one document)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Annotated, Any

import typer

import lakecore
from lakecore.cli.base import (
    FormatOpt,
    JsonOpt,
    OptionsOpt,
    UriArg,
    command,
    doc_header,
    emit,
    given_version,
    json_object,
    open_table,
    progress,
    working,
)
from lakecore.cli.write_metrics import metrics_doc, metrics_text


def _report(as_json: bool, document: dict[str, Any], text: str, paths: Sequence[str] = ()) -> None:
    if as_json:
        emit(document)
        return
    typer.echo(text)
    for path in paths:
        typer.echo(f"  {path}")


@command()
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
    table = open_table(uri, fmt, storage_options)
    with working("vacuum: listing files" if dry_run else "vacuum: deleting files"):
        paths = table.vacuum(retention_hours, dry_run=dry_run, enforce_retention=enforce_retention)
    verb = "would delete" if dry_run else "deleted"
    _report(
        as_json,
        doc_header(table) | {"operation": "vacuum", "dry_run": dry_run, "files": paths},
        f"vacuum{' (dry run)' if dry_run else ''}: {verb} {len(paths)} file(s)",
        paths,
    )


@command()
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
    table = open_table(uri, fmt, storage_options)
    with working("clean: deleting files"):
        paths = table.clean(retain_commits)
    _report(
        as_json,
        doc_header(table) | {"operation": "clean", "files": paths},
        f"clean: deleted {len(paths)} file(s)",
        paths,
    )


@command()
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
    table = open_table(uri, fmt, storage_options)
    before = table.snapshot()
    files_before = before.files().num_rows
    with working("optimize: rewriting small files"):
        result = table.optimize(target_file_size)
    version = result.version
    files_after = table.snapshot(version).files().num_rows
    text = (
        f"optimize: {files_before} -> {files_after} file(s), version {version}\n"
        + metrics_text(result)
        if result.committed
        else f"optimize: nothing to do ({files_before} file(s), version {version})"
    )
    doc = doc_header(table) | {
        "operation": "optimize",
        "version": version,
        "committed": result.committed,
        "files_before": files_before,
        "files_after": files_after,
        "metrics": metrics_doc(result),
    }
    _report(as_json, doc, text)


@command()
def compact(
    uri: UriArg,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
    storage_options: OptionsOpt = None,
) -> None:
    """Merge log files into new base files (Hudi merge-on-read compaction)."""
    table = open_table(uri, fmt, storage_options)
    with working("compact: merging log files"):
        result = table.compact()
    doc: dict[str, Any]
    if result is None:
        text = "compact: no file slice has log files, nothing to do"
        doc = {"operation": "compact", "version": None}
    else:
        text = f"compact: wrote version {result.version}\n{metrics_text(result)}"
        doc = {"operation": "compact", "version": result.version, "metrics": metrics_doc(result)}
    _report(as_json, doc_header(table) | doc, text)


@command()
def checkpoint(
    uri: UriArg,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
    storage_options: OptionsOpt = None,
) -> None:
    """Write a checkpoint of the latest version (Delta)."""
    table = open_table(uri, fmt, storage_options)
    version = table.checkpoint()
    _report(
        as_json,
        doc_header(table) | {"operation": "checkpoint", "version": version},
        f"checkpoint: written for version {version}",
    )


@command()
def restore(
    uri: UriArg,
    version: Annotated[str, typer.Argument(help="the version whose rows to bring back")],
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
    storage_options: OptionsOpt = None,
) -> None:
    """Commit a new version whose rows are those of VERSION (Delta, Lance)."""
    table = open_table(uri, fmt, storage_options)
    restored = given_version(version)
    result = table.restore(restored)
    doc = {"operation": "restore", "restored": restored, "version": result.version}
    _report(
        as_json,
        doc_header(table) | doc | {"metrics": metrics_doc(result)},
        f"restore: version {result.version} holds the rows of version {restored}\n"
        + metrics_text(result),
    )


@command()
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
    options = json_object("--storage-options", storage_options)
    props = json_object("--target-properties", target_properties)
    with progress() as bar:
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
        emit(asdict(report) | {"versions_translated": report.versions_translated})
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
