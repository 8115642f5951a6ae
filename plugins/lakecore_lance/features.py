"""Lance feature flags: which the reader handles, and the refusal of any other.

``Manifest.reader_feature_flags`` / ``writer_feature_flags`` are bit sets; a reader must refuse
a dataset with a reader flag it does not know (the Lance spec), before reading any fragment.
"""

from __future__ import annotations

from lakecore.errors import UnsupportedFeatureError
from lakecore_lance.proto import table_pb2

DELETION_FILES = 1
"""Fragments may have deletion files (read: deleted rows are dropped)."""
STABLE_ROW_IDS = 2
"""Fragments carry stable row-id sequences (read: not needed to return rows)."""
USE_V2_FORMAT_DEPRECATED = 4
"""Data files were written in the v2 file format (no longer set; the files say so)."""
TABLE_CONFIG = 8
"""The manifest has a table config map (read: exposed as properties)."""
BASE_PATHS = 16
"""Files may live under other base paths (shallow clones, multi-base datasets)."""
DISABLE_TRANSACTION_FILE = 32
"""Transactions are inlined in manifests instead of ``_transactions/`` files."""

NAMES = {
    DELETION_FILES: "deletion_files",
    STABLE_ROW_IDS: "stable_row_ids",
    USE_V2_FORMAT_DEPRECATED: "use_v2_format",
    TABLE_CONFIG: "table_config",
    BASE_PATHS: "base_paths",
    DISABLE_TRANSACTION_FILE: "disable_transaction_file",
}

READABLE = DELETION_FILES | STABLE_ROW_IDS | USE_V2_FORMAT_DEPRECATED | TABLE_CONFIG
"""Reader flags lakecore reads. ``base_paths`` is refused: data files outside the dataset
root are not resolved yet."""
# Every flag of a transaction-inlining writer is a writer flag; readers see no difference.
READABLE_WRITER_ONLY = DISABLE_TRANSACTION_FILE


def flag_names(flags: int) -> frozenset[str]:
    """The names of the bits set in ``flags`` (unknown bits as ``flag_<value>``)."""
    names = set()
    bit = 1
    while bit <= flags:
        if flags & bit:
            names.add(NAMES.get(bit, f"flag_{bit}"))
        bit <<= 1
    return frozenset(names)


def ensure_readable(manifest: table_pb2.Manifest, where: str) -> None:
    """Raise ``UnsupportedFeatureError`` naming the first reader flag lakecore cannot read.

    Called on a manifest before any of its fragments is read.
    """
    unreadable = manifest.reader_feature_flags & ~READABLE
    if not unreadable:
        return
    lowest = unreadable & -unreadable
    name = NAMES.get(lowest, f"flag_{lowest}")
    known = "a known Lance feature lakecore does not read yet" if lowest in NAMES else "unknown"
    raise UnsupportedFeatureError(
        f"lance:{name}",
        f"{where} needs reader feature {name!r} (flag {lowest}; {known}); "
        f"lakecore reads flags {sorted(flag_names(READABLE))}",
    )
