"""What lakecore keeps in a Delta commit's ``commitInfo`` for the migration contract:
application key/values (capability ``commit_metadata``) and a given commit timestamp
(capability ``commit_timestamps``, as an in-commit timestamp).

Key/values go in ``commitInfo.appMetadata``, a JSON object of strings. The protocol lets a
writer store any JSON in ``commitInfo``; Spark's ``userMetadata`` is one free-form string that
users set themselves (``spark.databricks.delta.commitInfo.userMetadata``) and delta-rs spreads
its ``custom_metadata`` over the top level of ``commitInfo``, so neither could hold a dict
without clashing with what other writers put there.

A given timestamp is only honest where readers use it for time travel: Delta readers take a
commit's time from its ``inCommitTimestamp`` when the table enables in-commit timestamps
(``delta.enableInCommitTimestamps=true``, writer feature ``inCommitTimestamp``), and from the
commit file's modification time otherwise, which a writer cannot choose.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lakecore.errors import CommitError, UnsupportedFeatureError
from lakecore.model.actions import CommitInfo

APP_METADATA = "appMetadata"
"""The ``commitInfo`` field holding ``CommitInfo.app_metadata`` (a JSON object of strings)."""
ENABLE_ICT = "delta.enableInCommitTimestamps"
"""The table property enabling in-commit timestamps."""
ICT_FEATURE = "inCommitTimestamp"
"""The writer feature of in-commit timestamps (``UnsupportedFeatureError.feature``)."""


def ict_enabled(configuration: Mapping[str, Any]) -> bool:
    """Whether a table with ``configuration`` records in-commit timestamps."""
    return str(configuration.get(ENABLE_ICT, "false")).lower() == "true"


def ensure_commit_timestamps(configuration: Mapping[str, Any]) -> None:
    """Raise ``UnsupportedFeatureError`` (feature ``inCommitTimestamp``, naming the property
    to set) unless the table records in-commit timestamps: without them Delta readers time
    travel by the commit files' modification times, which no writer can set."""
    if not ict_enabled(configuration):
        raise UnsupportedFeatureError(
            ICT_FEATURE,
            "a commit timestamp can only be given on a Delta table with in-commit timestamps "
            f"(readers otherwise use the commit file's modification time); create the table "
            f"with properties={{{ENABLE_ICT!r}: 'true'}}",
        )


def commit_timestamp(
    info: CommitInfo, configuration: Mapping[str, Any], now: int, floor: int
) -> int | None:
    """The ``inCommitTimestamp`` of a commit made with ``info`` (None: the table has none).

    ``floor`` is the previous commit's timestamp: in-commit timestamps must strictly increase.
    Without ``info.timestamp_ms`` that is ``max(now, floor + 1)``, as the protocol asks.

    Raises:
        UnsupportedFeatureError: ``info.timestamp_ms`` is set on a table without in-commit
            timestamps (``ensure_commit_timestamps``).
        CommitError: ``info.timestamp_ms`` is not later than ``floor``.
    """
    if not ict_enabled(configuration):
        if info.timestamp_ms is not None:
            ensure_commit_timestamps(configuration)
        return None
    if info.timestamp_ms is None:
        return max(now, floor + 1)
    if info.timestamp_ms <= floor:
        raise CommitError(
            f"commit timestamp {info.timestamp_ms} is not later than the previous commit's "
            f"in-commit timestamp {floor}; Delta commit timestamps must strictly increase"
        )
    return int(info.timestamp_ms)


def app_metadata_field(info: CommitInfo) -> dict[str, Any]:
    """The ``commitInfo`` fields holding ``info.app_metadata`` (none when it is empty)."""
    if not info.app_metadata:
        return {}
    return {APP_METADATA: {str(k): str(v) for k, v in info.app_metadata.items()}}


def app_metadata_of(commit_info: Mapping[str, Any]) -> dict[str, str]:
    """The key/values a ``commitInfo`` holds in ``appMetadata`` (empty when it has none or
    holds something else there: another writer's field of that name is not ours)."""
    raw = commit_info.get(APP_METADATA)
    if not isinstance(raw, dict):
        return {}
    return {str(k): v for k, v in raw.items() if isinstance(v, str)}
