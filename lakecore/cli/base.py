"""What every ``lakecore`` command shares: the app, its options, error reporting, output.

Commands register with ``@command()``: any error they raise becomes one line on stderr and
exit code 1 (see ``lakecore.cli``).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
from collections.abc import Callable, Iterator
from importlib import metadata
from typing import Annotated, Any, NoReturn, ParamSpec

import click
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
from lakecore.cli import render
from lakecore.errors import InvalidArgumentError, LakecoreError

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

TABLE_LIMIT = 20


def stdout() -> Console:
    """A console on stdout for tables."""
    # Made per call: the width (COLUMNS) and stream are those of this invocation.
    return Console()


def _fail(exc: BaseException) -> NoReturn:
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


def command(
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


def json_object(option: str, raw: str | None) -> dict[str, Any] | None:
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


def open_table(uri: str, fmt: str | None, storage_options: str | None) -> lakecore.Table:
    options = json_object("--storage-options", storage_options)
    return lakecore.open(uri, format=fmt, storage_options=options)


def version_arg(raw: str | None) -> int | str | None:
    """A version or timestamp as typed: digits are a number (version, epoch ms), else text
    (a Lance tag, ISO-8601); Hudi instants are digits and Hudi takes them either way."""
    return None if raw is None else given_version(raw)


def given_version(raw: str) -> int | str:
    """A version argument as typed (see ``version_arg``)."""
    return int(raw) if raw.isdigit() else raw


def snapshot_at(
    table: lakecore.Table, version: str | None, timestamp: str | None
) -> lakecore.Snapshot:
    return table.snapshot(version_arg(version), version_arg(timestamp))


def column_list(raw: list[str] | None) -> list[str] | None:
    """The names of ``--columns`` (comma-separated or repeated), None when not given.

    Raises ``InvalidArgumentError`` when it was given but names no column (``--columns ""``
    would otherwise print rows of no columns, or nothing at all).
    """
    if not raw:
        return None
    names = [name.strip() for item in raw for name in item.split(",") if name.strip()]
    if not names:
        raise InvalidArgumentError(f"--columns names no column: {','.join(raw)!r}")
    return names


def entry_limit(limit: int | None, as_json: bool) -> int | None:
    return limit if limit is not None else (None if as_json else TABLE_LIMIT)


def doc_header(table: lakecore.Table, snap: lakecore.Snapshot | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {"uri": table.uri, "format": table.format}
    if snap is not None:
        doc["version"] = snap.version
        doc["timestamp"] = render.iso_utc(snap.timestamp)
    return doc


def emit(document: dict[str, Any]) -> None:
    typer.echo(render.dumps(document))


def progress(*columns: ProgressColumn) -> Progress:
    """Progress on stderr, drawn only on a terminal (a pipe or log gets nothing from it)."""
    err = Console(stderr=True)
    return Progress(*columns, console=err, transient=True, disable=not err.is_terminal)


@contextlib.contextmanager
def working(description: str) -> Iterator[None]:
    """A spinner with elapsed time on stderr while a long operation runs."""
    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    with progress(*columns) as bar:
        bar.add_task(description, total=None)
        yield
