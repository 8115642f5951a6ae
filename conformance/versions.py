"""Check one version of a table against its expected version entry."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from conformance.cases import Case, Corpus
from conformance.outcome import Findings, describe_error, error_kind
from conformance.rows import row_problems
from conformance.schema import compare_schema, describe_schema, relax
from lakecore.snapshot import Snapshot
from lakecore.table import Table


def check_version(
    corpus: Corpus,
    case: Case,
    table: Table,
    version: int | str | None,
    entry: dict[str, Any],
    found: Findings,
) -> None:
    """Check snapshot ``version`` (None = latest) of ``table``: files, schema, rows, digest."""
    label = f"v{version}: " if version is not None else "latest: "
    try:
        snap = table.snapshot(version=version)
    except Exception as exc:
        found.fail(f"{label}snapshot raises {describe_error(exc)}")
        return
    if version is not None and snap.version != version:
        found.fail(f"{label}snapshot.version is {snap.version!r}")
    _check_files(snap, entry, label, found)
    if entry.get("read_error"):
        _check_unreadable(snap, label, found)
        return
    if entry.get("schema") is not None:
        failures, notes = compare_schema(snap.schema, entry["schema"])
        found.extend(failures, notes, prefix=f"{label}schema: ")
    try:
        rows = snap.to_arrow()
    except Exception as exc:
        found.fail(f"{label}to_arrow raises {describe_error(exc)}")
        return
    _check_row_schema(snap.schema, rows, label, found)
    found.extend(row_problems(corpus, case, entry, rows), [], prefix=label)


def _check_files(snap: Snapshot, entry: dict[str, Any], label: str, found: Findings) -> None:
    try:
        num_files = snap.files().num_rows
    except Exception as exc:
        found.fail(f"{label}files() raises {describe_error(exc)}")
        return
    want = entry.get("num_files")
    if want is not None and num_files != want:
        found.fail(f"{label}{num_files} files, expected {want}")


def _check_unreadable(snap: Snapshot, label: str, found: Findings) -> None:
    """The oracle could not read this version's rows: lakecore may read them or refuse typed."""
    try:
        rows = snap.to_arrow()
    except Exception as exc:
        if error_kind(exc) == "untyped":
            found.fail(
                f"{label}oracle could not read rows; to_arrow raises untyped {describe_error(exc)}"
            )
        else:
            found.note(f"{label}oracle could not read rows; to_arrow raises {describe_error(exc)}")
        return
    found.note(f"{label}oracle could not read rows; lakecore reads {rows.num_rows}")


def _check_row_schema(schema: pa.Schema, rows: pa.Table, label: str, found: Findings) -> None:
    """to_arrow must return the columns and types snapshot.schema announces."""
    announced = [(d["name"], relax(d["type"])) for d in describe_schema(schema)]
    returned = [(d["name"], relax(d["type"])) for d in describe_schema(rows.schema)]
    if announced != returned:
        found.fail(f"{label}to_arrow schema {returned} differs from snapshot.schema {announced}")


def check_unloadable(table: Table, version: int | str, oracle_error: str, found: Findings) -> None:
    """The oracle could not load ``version``: lakecore may load it or refuse (typed/ValueError)."""
    label = f"v{version}: "
    try:
        snap = table.snapshot(version=version)
        num_files = snap.files().num_rows
    except Exception as exc:
        if error_kind(exc) == "untyped" and not isinstance(exc, ValueError):
            found.fail(
                f"{label}oracle could not load it; lakecore raises untyped {describe_error(exc)}"
            )
        else:
            found.note(f"{label}oracle could not load it; lakecore raises {describe_error(exc)}")
        return
    found.note(
        f"{label}oracle could not load it ({oracle_error.splitlines()[0][:80]}); "
        f"lakecore loads it with {num_files} files"
    )
