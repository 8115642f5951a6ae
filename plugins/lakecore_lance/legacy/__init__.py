"""The legacy (v0.1) Lance data file format, read without pylance.

pylance's ``LanceFileReader`` refuses legacy files ("Attempt to use the Lance current-format
reader to read v1 metadata") and offers no other file-level reader for them, so lakecore
implements the format: footer and metadata (``layout.py``), the manifest schema's field tree
and logical types (``fields.py``), the page encodings (``decode.py``), and the per-batch
statistics the writer kept (``stats.py``). The entry points are :func:`read_legacy_file` and
:func:`read_legacy_statistics`.
"""

from __future__ import annotations

from lakecore_lance.legacy.fields import LegacyField, fields_from_proto, logical_to_arrow
from lakecore_lance.legacy.reader import read_legacy_file
from lakecore_lance.legacy.stats import read_legacy_statistics

__all__ = [
    "LegacyField",
    "fields_from_proto",
    "logical_to_arrow",
    "read_legacy_file",
    "read_legacy_statistics",
]
