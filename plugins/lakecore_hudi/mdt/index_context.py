"""What a metadata-table record generator is told about one data instant.

Shared by the ``*_records`` generator modules (``column_stats``, ``partition_stats``,
``record_index``, ``secondary_index_*``) and the maintenance machinery (``mdt.maintain``)
that calls them: the contract is ``notes/mdt_contract.md`` of session 7.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lakecore.storage import Storage
from lakecore_hudi.table_config import TableConfig
from lakecore_hudi.timeline.commit_metadata import CommitMetadata

__all__ = ["IndexContext"]


@dataclass(frozen=True)
class IndexContext:
    """One data instant as a metadata-table partition generator sees it.

    ``instant`` is still INFLIGHT when generators run: the completed timeline read through
    ``storage`` is the state BEFORE it. ``meta`` holds the write stats of a write or
    compaction (None for a clean); ``cleaned`` maps partitions to the file names a clean
    deleted and ``replaced`` partitions to the file ids a replace commit replaced (both ``{}``
    otherwise). ``table_version`` is the METADATA table's version (8 or 9); ``index_defs``
    is the parsed ``.hoodie/.index_defs/index.json`` (``{}`` if absent).
    """

    storage: Storage
    config: TableConfig
    instant: str
    action: str
    meta: CommitMetadata | None
    cleaned: Mapping[str, Sequence[str]]
    replaced: Mapping[str, Sequence[str]]
    table_version: int
    index_defs: Mapping[str, Any]
    memo: dict[str, Any] = field(default_factory=dict, init=False, compare=False, repr=False)
    """What one generator read for this instant that another may reuse (``group_changes``);
    not copied by ``dataclasses.replace``, so a derived context starts empty."""
