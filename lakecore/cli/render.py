"""How the ``lakecore`` command shows things: JSON documents, readable cells, one-line errors.

Kept apart from ``lakecore.cli`` (the commands) so the conversions can be tested alone. Rules:
``--json`` prints exactly one JSON document on stdout (timestamps ISO-8601 in UTC, bytes as
base64, decimals as text, non-finite floats as ``"NaN"``/``"Infinity"``/``"-Infinity"``);
tables print readable timestamps (``2024-01-31 12:00:00 UTC``) and sizes.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa
from rich.table import Table as RichTable
from rich.text import Text

_UTC = dt.timezone.utc
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""C0 controls but tab and line feed, DEL and the C1 controls."""


def iso_utc(epoch_ms: int | None) -> str | None:
    """Epoch milliseconds as ISO-8601 text in UTC (``2024-01-31T12:00:00.000+00:00``)."""
    if epoch_ms is None:
        return None
    moment = dt.datetime.fromtimestamp(epoch_ms / 1000, tz=_UTC)
    return moment.isoformat(timespec="milliseconds")


def readable_utc(epoch_ms: int | None) -> str:
    """Epoch milliseconds for people: ``2024-01-31 12:00:00 UTC`` (``-`` when unknown)."""
    if epoch_ms is None:
        return "-"
    moment = dt.datetime.fromtimestamp(epoch_ms / 1000, tz=_UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def readable_size(n: int | None) -> str:
    """Bytes for people (``1.5 MiB``)."""
    if n is None:
        return "-"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def jsonable(value: Any) -> Any:
    """``value`` made of JSON types only (see the module docstring for the conversions)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=str) if isinstance(value, set | frozenset) else value
        return [jsonable(v) for v in items]
    if isinstance(value, dt.datetime):
        # An aware moment is shown in UTC; a naive one (timestamp_ntz) is wall time, kept as is.
        return (value if value.tzinfo is None else value.astimezone(_UTC)).isoformat()
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, decimal.Decimal):
        return str(value)
    return str(value)


def dumps(document: Any) -> str:
    """One JSON document (``jsonable`` applied, so never ``NaN`` literals)."""
    return json.dumps(jsonable(document), ensure_ascii=False, allow_nan=False)


def visible(text: str) -> str:
    """``text`` with control characters spelt as escapes (``\\x1b``), line breaks and tabs
    kept: values, column names and messages from a table must not drive the terminal (colour,
    clearing the screen, a carriage return overwriting what was printed)."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def cell(value: Any) -> Text:
    """A value as a table cell: ``null`` for None, timestamps with a space, nested as JSON.

    A ``Text`` so that brackets in data are never taken for rich markup.
    """
    if value is None:
        return Text("null", style="dim")
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:  # timestamp_ntz: wall time, no zone to name
            return Text(value.isoformat(sep=" "))
        return Text(value.astimezone(_UTC).replace(tzinfo=None).isoformat(sep=" ") + " UTC")
    if isinstance(value, str):
        return Text(visible(value))
    if isinstance(value, dt.date | dt.time | decimal.Decimal | bool | int | float):
        return Text(str(value))
    return Text(json.dumps(jsonable(value), ensure_ascii=False))


def grid(
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    title: str | None = None,
    show_header: bool = True,
) -> RichTable:
    """A rich table of ``rows`` (cells go through ``cell`` unless they are ``Text`` already)."""
    table = RichTable(title=title, show_header=show_header)
    for name in columns:
        table.add_column(Text(visible(name)), overflow="fold")  # never cut a value short
    for row in rows:
        table.add_row(*[v if isinstance(v, Text) else cell(v) for v in row])
    return table


def rows_grid(data: pa.Table, title: str | None = None) -> RichTable:
    """The rows of an Arrow table as a rich table."""
    return grid(
        data.column_names,
        ([row[c] for c in data.column_names] for row in data.to_pylist()),
        title,
    )


def schema_doc(schema: pa.Schema) -> list[dict[str, Any]]:
    """The fields of ``schema`` as JSON objects: name, type, nullable, metadata."""
    return [
        {
            "name": f.name,
            "type": str(f.type),
            "nullable": f.nullable,
            "metadata": {
                k.decode("utf-8", "replace"): v.decode("utf-8", "replace")
                for k, v in (f.metadata or {}).items()
            },
        }
        for f in schema
    ]


def one_line(exc: BaseException) -> str:
    """``exc`` as one line: ``ClassName: message`` with newlines and colour codes removed."""
    message = " ".join(
        visible(part.strip()) for part in _ANSI.sub("", str(exc)).splitlines() if part.strip()
    )
    name = type(exc).__name__
    return f"{name}: {message}" if message else name


__all__ = [
    "cell",
    "dumps",
    "grid",
    "iso_utc",
    "jsonable",
    "one_line",
    "readable_size",
    "readable_utc",
    "rows_grid",
    "schema_doc",
    "visible",
]
