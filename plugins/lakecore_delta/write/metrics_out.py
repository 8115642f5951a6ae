"""``commitInfo.operationMetrics``: a commit's ``WriteMetrics`` under the names Delta Spark
gives them per operation (``DESCRIBE HISTORY``), values as strings as Spark writes them.

Operations without metrics in Spark (property, constraint and schema changes) get none; a
transaction of several operations (``"DELETE + WRITE"``) gets the DML names.
"""

from __future__ import annotations

from collections.abc import Callable

from lakecore.model.actions import CommitInfo
from lakecore.model.metrics import WriteMetrics

_Names = dict[str, Callable[[WriteMetrics], int]]


def _written(m: WriteMetrics) -> int:
    """Rows in the files the commit added (Spark's ``numOutputRows``)."""
    return m.rows_inserted + m.rows_updated + m.rows_copied


_WRITE: _Names = {
    "numFiles": lambda m: m.files_added,
    "numOutputRows": _written,
    "numOutputBytes": lambda m: m.bytes_added,
}
_OVERWRITE: _Names = {
    **_WRITE,
    "numRemovedFiles": lambda m: m.files_removed,
    "numRemovedBytes": lambda m: m.bytes_removed,
    "numDeletedRows": lambda m: m.rows_deleted,
    "numCopiedRows": lambda m: m.rows_copied,
}
_FILES: _Names = {
    "numAddedFiles": lambda m: m.files_added,
    "numRemovedFiles": lambda m: m.files_removed,
    "numAddedBytes": lambda m: m.bytes_added,
    "numRemovedBytes": lambda m: m.bytes_removed,
}
_DELETE: _Names = {
    **_FILES,
    "numDeletedRows": lambda m: m.rows_deleted,
    "numCopiedRows": lambda m: m.rows_copied,
}
_UPDATE: _Names = {
    **_FILES,
    "numUpdatedRows": lambda m: m.rows_updated,
    "numCopiedRows": lambda m: m.rows_copied,
}
_MERGE: _Names = {
    "numTargetRowsInserted": lambda m: m.rows_inserted,
    "numTargetRowsUpdated": lambda m: m.rows_updated,
    "numTargetRowsDeleted": lambda m: m.rows_deleted,
    "numTargetRowsCopied": lambda m: m.rows_copied,
    "numOutputRows": _written,
    "numTargetFilesAdded": lambda m: m.files_added,
    "numTargetFilesRemoved": lambda m: m.files_removed,
    "numTargetBytesAdded": lambda m: m.bytes_added,
    "numTargetBytesRemoved": lambda m: m.bytes_removed,
}
_RESTORE: _Names = {
    "numRestoredFiles": lambda m: m.files_added,
    "numRemovedFiles": lambda m: m.files_removed,
    "restoredFilesSize": lambda m: m.bytes_added,
    "removedFilesSize": lambda m: m.bytes_removed,
}
_ANY: _Names = {
    **_FILES,
    "numInsertedRows": lambda m: m.rows_inserted,
    "numUpdatedRows": lambda m: m.rows_updated,
    "numDeletedRows": lambda m: m.rows_deleted,
    "numCopiedRows": lambda m: m.rows_copied,
    "numOutputRows": _written,
}
_BY_OPERATION: dict[str, _Names] = {
    "DELETE": _DELETE,
    "UPDATE": _UPDATE,
    "MERGE": _MERGE,
    "OPTIMIZE": _FILES,
    "RESTORE": _RESTORE,
    "REPLACE FILES": _ANY,
    "ADOPT FILES": _ANY,
}
_NO_METRICS = {
    "SET TBLPROPERTIES",
    "ADD CONSTRAINT",
    "DROP CONSTRAINT",
    "CHANGE SCHEMA",
    "SET TRANSACTION",
    "CREATE TABLE",
}


def operation_metrics(info: CommitInfo) -> dict[str, str] | None:
    """The ``operationMetrics`` of the commit ``info`` describes (None: it has none)."""
    metrics = info.metrics
    if metrics is None or info.operation in _NO_METRICS:
        return None
    if info.operation == "WRITE":
        overwrite = info.parameters.get("mode") == "Overwrite"
        names = _OVERWRITE if overwrite else _WRITE
    else:
        names = _BY_OPERATION.get(info.operation, _ANY)
    out = {name: str(value(metrics)) for name, value in names.items()}
    if info.elapsed_ms is not None and info.operation != "RESTORE":
        out["executionTimeMs"] = str(info.elapsed_ms)
    return out
