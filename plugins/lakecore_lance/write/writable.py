"""Whether lakecore may write a Lance dataset: the gate every write passes before any work.

``state_of`` gives the Lance state behind a lakecore ``Snapshot`` (``TypeError`` for a
snapshot of another format). ``ensure_writable`` must be called before anything is read or
written for a write, a maintenance operation or a commit: it raises
``UnsupportedFeatureError`` naming the writer feature flag or data storage version lakecore
does not write, and ``CorruptTableError`` for a manifest whose content names another version
than its file name or that lists a fragment id twice. Pure: it reads only the manifest
already loaded.
"""

from __future__ import annotations

from lakecore.errors import CorruptTableError, UnsupportedFeatureError
from lakecore.snapshot import Snapshot
from lakecore_lance import features
from lakecore_lance.proto import table_pb2
from lakecore_lance.source import LanceSnapshotSource
from lakecore_lance.state import LanceState, ensure_unique_fragment_ids
from lakecore_lance.write.changes import WRITABLE_WRITER_FLAGS
from lakecore_lance.write.files_out import WRITABLE_DATA_VERSIONS


def state_of(snapshot: Snapshot) -> LanceState:
    """The Lance state behind a lakecore Snapshot of a Lance dataset."""
    source = snapshot.source
    if not isinstance(source, LanceSnapshotSource):
        raise TypeError("not a Lance snapshot")
    return source.state


def ensure_writable(state: LanceState) -> None:
    """Raise ``UnsupportedFeatureError`` when lakecore cannot write to ``state``'s dataset:
    writer feature flags it does not keep valid (stable row ids, base paths, ...) or a data
    storage version lakecore does not write (legacy 0.1). Indices are kept as they are; the
    operations they forbid are refused at commit (``lakecore_lance.write.indices``).

    Raises ``CorruptTableError`` when the manifest's ``version`` is not the version its file
    name says: the next manifest is numbered from the content, so its name would be taken
    and every commit would retry against itself until the loop gave up.
    """
    m = state.manifest
    ensure_numbered(m, state.version, state.loaded.file.path)
    ensure_unique_fragment_ids(m, state.loaded.file.path)
    unknown = int(m.writer_feature_flags) & ~WRITABLE_WRITER_FLAGS
    if unknown:
        names = sorted(features.flag_names(unknown))
        raise UnsupportedFeatureError(
            f"lance:{names[0]}", f"lakecore does not write Lance datasets with features {names}"
        )
    version = m.data_format.version
    if version not in WRITABLE_DATA_VERSIONS:
        raise UnsupportedFeatureError(
            f"lance:data_storage_version:{version or '0.1'}",
            f"lakecore writes Lance data storage versions {sorted(WRITABLE_DATA_VERSIONS)}, "
            f"not {version or '0.1 (legacy)'}",
        )


def ensure_numbered(manifest: table_pb2.Manifest, version: int, path: str) -> None:
    """Raise ``CorruptTableError`` naming ``path`` unless ``manifest`` says it is ``version``
    (the version its file name gives)."""
    if int(manifest.version) != int(version):
        raise CorruptTableError(
            f"{path} is the manifest of version {version} but says it is version "
            f"{int(manifest.version)}; lakecore does not write on top of it"
        )
