"""Changes as data: what a transaction stages and a format translates into its own log.

Every action is a frozen value; each plugin applies each type with its own function. File sets
are Arrow tables in the file-index layout of ``lakecore.model.files`` (never one object per
file).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from lakecore.model.metrics import WriteMetrics, file_metrics, record_count


@dataclass(frozen=True, slots=True)
class AddFiles:
    """New data files (already written, not yet visible): rows in the file-index layout.

    ``owned``: this transaction wrote the files, so aborting it deletes them. False (the
    default) for files that exist independently of the transaction (a restore re-adding old
    files, a zero-copy conversion): an abort never deletes those. Re-added files carry the
    typed stats of the index they come from (true bounds, possibly wider than exact ones),
    never a format's encoded stats; a row with a ``deletion`` keeps its deletes.
    """

    files: pa.Table
    data_change: bool = True
    owned: bool = False


@dataclass(frozen=True, slots=True)
class RemoveFiles:
    """Files that stop being part of the table: rows of the snapshot's file index."""

    files: pa.Table
    data_change: bool = True


POSITIONS = "positions"
"""``DeleteRows`` column: every deleted row position of the file (old and new deletes)."""
POSITIONS_TYPE = pa.large_list(pa.uint64())
"""Type of ``POSITIONS``: ascending positions, numbered as ``TableFormat.read_files`` does."""


@dataclass(frozen=True, slots=True)
class DeleteRows:
    """Row-level deletes on existing files: rows of the snapshot's file index (its column
    types: typed ``min``/``max``/``null_count``, no format encoding of the stats) whose
    ``deletion`` is the NEW state (e.g. a Delta deletion vector covering old and new deletes),
    plus ``positions`` (``POSITIONS_TYPE``): the deleted positions that ``deletion`` encodes,
    so a consumer that cannot decode the format's descriptor (another format's committer, a
    migration) still knows which rows are gone. ``record_count`` is the physical row count
    (deleted rows included). The stats are the file's, possibly describing deleted rows: they
    bound the remaining rows but may no longer be attained (a format that records this, such
    as Delta's ``tightBounds``, must say so).

    ``owned``: this transaction wrote the deletion files the rows name (an abort deletes
    them; see ``AddFiles.owned``)."""

    files: pa.Table
    owned: bool = False


@dataclass(frozen=True, slots=True)
class SetSchema:
    """Replace the table schema (the result of a schema evolution)."""

    schema: pa.Schema


@dataclass(frozen=True, slots=True)
class SetProperties:
    """Set (value str) or unset (value None) table properties."""

    properties: dict[str, str | None]


@dataclass(frozen=True, slots=True)
class SetTransaction:
    """Record that application ``app_id`` committed its write number ``version`` (idempotence)."""

    app_id: str
    version: int


@dataclass(frozen=True, slots=True)
class AddChangeFiles:
    """Change-data files written for this commit (rows with a change-type column);
    ``owned`` as for ``AddFiles``."""

    files: pa.Table
    owned: bool = False


@dataclass(frozen=True, slots=True)
class FormatPayload:
    """A format-specific staged change that only that format's Committer understands.

    Formats whose commits are not Delta-like actions (Hudi: a planned instant with the files
    it wrote and its commit metadata) stage one of these; ``payload`` is the format's own
    object and ``format`` names its owner.
    """

    format: str
    payload: Any


Action = (
    AddFiles
    | RemoveFiles
    | DeleteRows
    | SetSchema
    | SetProperties
    | SetTransaction
    | AddChangeFiles
    | FormatPayload
)


@dataclass(frozen=True, slots=True)
class CommitInfo:
    """What the commit did, for the table's history."""

    operation: str
    parameters: dict[str, Any] = field(default_factory=dict)
    read_predicate: str | None = None
    """SQL of the rows the transaction read (conflict checking); None = blind write."""
    read_whole_table: bool = False
    """The transaction's outcome depends on every row (e.g. overwrite without predicate)."""
    app_metadata: dict[str, str] = field(default_factory=dict)
    """Application key/values kept with the commit (a migration's source version). Formats
    declaring capability ``commit_metadata`` must store them in the commit itself (atomically
    with it) and return them as ``HistoryEntry.app_metadata``; others must raise
    ``UnsupportedFeatureError`` when the dict is not empty."""
    timestamp_ms: int | None = None
    """The commit's timestamp (epoch ms) as time travel by timestamp must see it; None = now.
    A migration replays its source's commit times. Formats declaring capability
    ``commit_timestamps`` must record it as the version's timestamp (``Snapshot.timestamp``,
    ``HistoryEntry.timestamp``, ``snapshot(timestamp=...)``), and raise ``CommitError`` when
    it is not later than the base version's timestamp; others must raise
    ``UnsupportedFeatureError`` when it is set."""
    metrics: WriteMetrics | None = None
    """What the operation wrote, counted by the writer from the files it wrote and the rows
    it changed (``lakecore.model.metrics``). None: the transaction counts the files and bytes
    of the neutral ``AddFiles``/``RemoveFiles`` actions (and rows of ``data_change=False``
    adds as copied). A transaction's commit carries the sum over its operations; formats
    record it where they keep operation metrics (Delta: ``commitInfo.operationMetrics``)."""
    elapsed_ms: int | None = None
    """Milliseconds from the transaction's start until its commit was prepared (set by the
    transaction; Delta records it as ``executionTimeMs``)."""


@dataclass(frozen=True, slots=True)
class Committed:
    """The commit landed as ``version``."""

    version: int | str


@dataclass(frozen=True, slots=True)
class Conflict:
    """Another writer took ``version`` first; nothing of this commit was written."""

    version: int | str


CommitOutcome = Committed | Conflict


def action_metrics(actions: Sequence[Action]) -> WriteMetrics:
    """Files and bytes of the neutral file actions: ``AddFiles`` rows added, ``RemoveFiles``
    rows removed (a path re-added by ``DeleteRows``, a file that only gained deletes, counts
    in neither); rows of ``data_change=False`` adds (a rewrite: optimize) count as copied.
    Format payloads (``FormatPayload``) count nothing: their writer must count."""
    added = [a.files for a in actions if isinstance(a, AddFiles)]
    kept = [a.files for a in actions if isinstance(a, DeleteRows)]
    removed = [a.files for a in actions if isinstance(a, RemoveFiles)]
    metrics = file_metrics(added, removed, kept)
    copied = sum(
        record_count(a.files) for a in actions if isinstance(a, AddFiles) and not a.data_change
    )
    return metrics.with_rows(copied=copied)
