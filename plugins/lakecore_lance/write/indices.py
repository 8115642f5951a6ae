"""What lakecore's Lance writes do with the dataset's indices: keep them, as Lance does.

lakecore never builds, rewrites or remaps an index. A commit on an indexed dataset copies the
manifest's index section unchanged into the next manifest (``encode_manifest``), which is what
Lance itself does for these operations:

- append: new fragments are simply not in any index's ``fragment_bitmap`` (readers scan them);
- delete / update / merge / upsert / overwrite with ``where``: deleted rows are masked by the
  deletion files; a fragment dropped because all its rows are deleted stays in the bitmap (as
  pylance 14 leaves it: a bitmap may name fragments that no longer exist);
- add column, rename column, drop of a column no index covers: indices name field ids, which
  these keep;
- restore: the restored version's own index section (its index files are never vacuumed).

Refused with ``UnsupportedFeatureError`` (before anything is committed): a whole-table
overwrite (every indexed row replaced), compaction (row addresses change: the indices would
need remapping) and a schema change that removes an indexed field id (dropping or widening an
indexed column). Raises name the indices concerned.
"""

from __future__ import annotations

from lakecore.errors import UnsupportedFeatureError
from lakecore.storage import Storage
from lakecore_lance.manifest import ManifestFile, read_section
from lakecore_lance.proto import table_pb2
from lakecore_lance.write.changes import Combined

KEEPS_INDICES = frozenset({"append", "delete", "update", "add_columns", "project", "restore"})
"""Combined operations after which every index of the base stays valid as it is (given the
field check of ``ensure_index_safe`` for schema changes)."""


def index_section(storage: Storage, file: ManifestFile, manifest: table_pb2.Manifest) -> bytes:
    """The encoded ``IndexSection`` of ``manifest`` (read from its file ``file``); empty bytes
    when it has none. Raises ``CorruptTableError`` for a truncated section."""
    if not manifest.HasField("index_section"):
        return b""
    return read_section(storage, file, int(manifest.index_section))


def indices_of(section: bytes) -> list[table_pb2.IndexMetadata]:
    """The indices an encoded ``IndexSection`` lists (none for empty bytes)."""
    if not section:
        return []
    parsed = table_pb2.IndexSection()
    parsed.ParseFromString(section)
    return list(parsed.indices)


def ensure_index_safe(combined: Combined, section: bytes) -> None:
    """Raise ``UnsupportedFeatureError`` when ``combined`` applied to a version whose index
    section is ``section`` would leave an index wrong (see the module docstring)."""
    indices = indices_of(section)
    if not indices or combined.operation == "restore":
        return
    names = sorted({i.name for i in indices})
    op = combined.operation
    if op == "overwrite":
        raise UnsupportedFeatureError(
            "lance:indices:overwrite",
            f"a whole-table overwrite of a Lance dataset with indices {names} would need them "
            "rebuilt, which lakecore does not do; overwrite with a where condition, or drop the "
            "indices first",
        )
    if op == "rewrite":
        raise UnsupportedFeatureError(
            "lance:indices:compaction",
            f"compacting a Lance dataset with indices {names} would need them remapped to the "
            "new row addresses, which lakecore does not do; compact with pylance "
            "(compact_files), which remaps them",
        )
    if op not in KEEPS_INDICES:
        raise UnsupportedFeatureError(
            f"lance:indices:{op}", f"lakecore does not {op} a Lance dataset with indices {names}"
        )
    if combined.fields is None:
        return
    kept = {int(f.id) for f in combined.fields}
    for index in indices:
        lost = sorted(int(i) for i in index.fields if int(i) not in kept)
        if lost:
            raise UnsupportedFeatureError(
                "lance:indices:schema",
                f"this schema change removes field id(s) {lost}, which index {index.name!r} "
                "covers (a dropped or widened indexed column); drop the index first",
            )
