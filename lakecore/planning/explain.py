"""``ScanExplain``: what a planned scan will read, and how much pruning saved."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ScanExplain:
    """Counts of a planned scan. ``str()`` renders them for people.

    ``files_after_partition_pruning`` counts the files left after the partition stage (the
    predicate evaluated on partition values only); ``files_after_stats_pruning`` after the
    min/max/null-count stage too: those are the files the scan reads. ``bytes_to_read`` and
    ``records_to_read`` (before row-level deletes; None if a file has no count) cover those.
    """

    format: str
    table_uri: str
    version: int | str
    predicate: str | None
    columns: tuple[str, ...] | None
    files_total: int
    files_after_partition_pruning: int
    files_after_stats_pruning: int
    bytes_total: int
    bytes_to_read: int
    records_to_read: int | None

    @property
    def files_pruned(self) -> int:
        """Files the scan skips."""
        return self.files_total - self.files_after_stats_pruning

    def __str__(self) -> str:
        share = self.bytes_to_read / self.bytes_total if self.bytes_total else 0.0
        records = "unknown" if self.records_to_read is None else f"{self.records_to_read:,}"
        columns = "all" if self.columns is None else ", ".join(self.columns) or "(none)"
        return "\n".join(
            [
                f"Scan of {self.format} table {self.table_uri} at version {self.version}",
                f"  predicate: {self.predicate or '(none)'}",
                f"  columns:   {columns}",
                f"  files:     {self.files_total:,} total"
                f" -> {self.files_after_partition_pruning:,} after partition pruning"
                f" -> {self.files_after_stats_pruning:,} after stats pruning",
                f"  bytes:     {_size(self.bytes_to_read)} to read of {_size(self.bytes_total)}"
                f" ({share:.1%})",
                f"  records:   {records} to read (before row-level deletes)",
            ]
        )


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:,.0f} {unit}" if unit == "B" else f"{value:,.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")
