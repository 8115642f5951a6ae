"""What a migration did."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class MigrationReport:
    """The outcome of one ``lakecore.migrate`` run.

    ``versions`` pairs each source version this run translated with the target version that
    holds it (a source version whose rows did not change maps to the target version that
    already held them, and commits nothing).
    """

    source: str
    target: str
    source_format: str
    target_format: str
    mode: str
    versions: tuple[tuple[int | str, int | str], ...] = ()
    files_adopted: int = 0
    """Source data files the target uses as they are (zero-copy)."""
    files_rewritten: int = 0
    """Data files the target wrote."""
    files_removed: int = 0
    """Target data files replaced because their source unit changed or went away."""
    units_rewritten: int = 0
    """Source units (Delta files, Hudi file slices, Lance fragments) whose rows were written."""
    rows: int = 0
    """Rows written to the target."""
    deletes_carried: int = 0
    """Row-level deletes of the source (deletion vectors, deletion files: their cardinality)
    on rewritten units: rows the target left out."""
    commits: int = 0
    """Target commits this run made (data and schema changes)."""
    seconds: float = 0.0
    timestamps_kept: bool = False
    """Whether the target's commits carry the source's commit timestamps."""
    notes: tuple[str, ...] = field(default=())
    """What the run could not carry over exactly, in words (empty when nothing)."""

    @property
    def versions_translated(self) -> int:
        """How many source versions this run translated."""
        return len(self.versions)
