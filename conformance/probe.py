"""Probe a table the lenient way: run the load steps in order and keep the first error."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import lakecore
from conformance.outcome import describe_error

T = TypeVar("T")


@dataclass
class Probe:
    """How far lakecore got with a table: open -> version -> snapshot -> files -> to_arrow."""

    format: str | None = None
    latest: int | str | None = None
    version: int | str | None = None  # the snapshot's version
    num_files: int | None = None
    num_rows: int | None = None
    error: Exception | None = None
    error_stage: str | None = None

    def run(self, stage: str, step: Callable[[], T]) -> T | None:
        """Run ``step`` unless an earlier step failed; on error record it and return None."""
        if self.error is not None:
            return None
        try:
            return step()
        except Exception as exc:  # every failure mode is reported, never raised
            self.error, self.error_stage = exc, stage
            return None

    @property
    def loaded(self) -> bool:
        """Whether the snapshot and its file list loaded (rows may still have failed)."""
        return self.num_files is not None

    def describe(self) -> str:
        """One line: what loaded and where it stopped."""
        parts = []
        if self.loaded:
            parts.append(f"loads v{self.version} ({self.num_files} files)")
        if self.num_rows is not None:
            parts.append(f"reads {self.num_rows} rows")
        if self.error is not None:
            parts.append(f"{self.error_stage} raises {describe_error(self.error)}")
        return "; ".join(parts) or "nothing ran"


def probe_table(path: Path, version: int | str | None = None, read_rows: bool = True) -> Probe:
    """Open ``path`` with lakecore and load ``version`` (latest by default) step by step."""
    p = Probe()
    table = p.run("open", lambda: lakecore.open(str(path)))
    if table is None:
        return p
    p.format = p.run("format", lambda: table.format)
    p.latest = p.run("version", lambda: table.version)
    snap = p.run("snapshot", lambda: table.snapshot(version=version))
    if snap is None:
        return p
    p.version = snap.version
    files = p.run("files", snap.files)
    if files is None:
        return p
    p.num_files = files.num_rows
    if read_rows:
        rows = p.run("to_arrow", snap.to_arrow)
        p.num_rows = None if rows is None else rows.num_rows
    return p
