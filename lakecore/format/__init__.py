"""The contracts a format plugin implements (see docs/plugins.md).

``reading``: ``TableFormat`` and ``SnapshotSource``; ``writing``: ``WritableFormat``,
``FormatWriter``, ``SchemaUpdate``; ``maintenance``: ``MaintainableFormat``,
``MergeOnReadFormat``.
"""

from __future__ import annotations

from lakecore.format.maintenance import MaintainableFormat, MergeOnReadFormat
from lakecore.format.reading import SnapshotSource, TableFormat
from lakecore.format.writing import FormatWriter, SchemaUpdate, WritableFormat

__all__ = [
    "FormatWriter",
    "MaintainableFormat",
    "MergeOnReadFormat",
    "SchemaUpdate",
    "SnapshotSource",
    "TableFormat",
    "WritableFormat",
]
