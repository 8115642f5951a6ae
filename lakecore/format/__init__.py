"""The contracts a format plugin implements (see docs/plugins.md).

``capabilities``: ``Capability`` (what a format supports) and ``TableFeatures`` (what one
table uses); ``reading``: ``TableFormat`` and ``SnapshotSource``; ``writing``: ``WritableFormat``,
``FormatWriter``, ``DataFileWriter``, ``SchemaUpdate``; ``maintenance``: ``MaintainableFormat``,
``MergeOnReadFormat``, ``TaggableFormat``.
"""

from __future__ import annotations

from lakecore.format.capabilities import Capability, TableFeatures, capabilities, require
from lakecore.format.maintenance import MaintainableFormat, MergeOnReadFormat, TaggableFormat
from lakecore.format.reading import SnapshotSource, TableFormat
from lakecore.format.writing import DataFileWriter, FormatWriter, SchemaUpdate, WritableFormat

__all__ = [
    "DataFileWriter",
    "Capability",
    "FormatWriter",
    "MaintainableFormat",
    "MergeOnReadFormat",
    "TaggableFormat",
    "SchemaUpdate",
    "SnapshotSource",
    "TableFeatures",
    "TableFormat",
    "WritableFormat",
    "capabilities",
    "require",
]
