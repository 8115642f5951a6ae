"""The files and bytes a staged Lance change adds and removes (``WriteMetrics``), counted
from its fragments: new fragments' data files are added, removed fragments' data files are
removed (an overwrite removes every fragment; a restore compares the two manifests). A
fragment that only gains a deletion file stays: its data files count in neither. Sizes are
the manifest's ``file_size_bytes``, read from the storage where a writer left it out.
"""

from __future__ import annotations

from collections.abc import Iterable

from lakecore.model.metrics import WriteMetrics
from lakecore.storage import Storage
from lakecore_lance.proto import table_pb2
from lakecore_lance.state import DATA_DIR
from lakecore_lance.write.changes import LanceChange


def live_rows(fragments: Iterable[table_pb2.DataFragment]) -> int:
    """Rows of ``fragments`` not deleted by their deletion files."""
    total = 0
    for f in fragments:
        deleted = int(f.deletion_file.num_deleted_rows) if f.HasField("deletion_file") else 0
        total += int(f.physical_rows) - deleted
    return total


def change_metrics(
    storage: Storage, current: table_pb2.Manifest, change: LanceChange
) -> WriteMetrics:
    """Files and bytes ``change`` adds and removes on top of ``current`` (rows: zero)."""
    new = [_parsed(raw) for raw in change.new_fragments]
    if change.operation == "overwrite":
        gone = list(current.fragments)
    elif change.operation == "restore":
        restored = table_pb2.Manifest()
        restored.ParseFromString(change.restored)
        new, gone = list(restored.fragments), list(current.fragments)
    else:
        ids = set(change.removed_fragment_ids)
        gone = [f for f in current.fragments if int(f.id) in ids]
    added, removed = _files(storage, new), _files(storage, gone)
    both = set(added) & set(removed)  # a restore keeps the files both versions have
    return WriteMetrics(
        files_added=len(set(added) - both),
        files_removed=len(set(removed) - both),
        bytes_added=sum(size for path, size in added.items() if path not in both),
        bytes_removed=sum(size for path, size in removed.items() if path not in both),
    )


def new_rows(change: LanceChange) -> int:
    """Rows of ``change``'s new fragments."""
    return sum(int(_parsed(raw).physical_rows) for raw in change.new_fragments)


def _parsed(raw: bytes) -> table_pb2.DataFragment:
    fragment = table_pb2.DataFragment()
    fragment.ParseFromString(raw)
    return fragment


def _files(storage: Storage, fragments: Iterable[table_pb2.DataFragment]) -> dict[str, int]:
    """Data file path -> size of every data file of ``fragments``."""
    out: dict[str, int] = {}
    for f in fragments:
        for d in f.files:
            path = f"{DATA_DIR}/{d.path}"
            out[path] = int(d.file_size_bytes) or storage.head(path).size
    return out
