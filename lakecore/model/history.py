"""One entry of a table's history (a Delta commit, a Hudi instant, a Lance version)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """What happened at one version: when, which operation, with which parameters."""

    version: int | str
    timestamp: int | None
    """Epoch milliseconds, or None when the format recorded none."""
    operation: str | None
    parameters: dict[str, Any] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    """The format's full record of the change (e.g. Delta's commitInfo)."""
    app_metadata: dict[str, str] = field(default_factory=dict)
    """The ``CommitInfo.app_metadata`` the commit was made with (empty when none)."""
