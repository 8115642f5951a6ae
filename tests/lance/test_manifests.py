"""Manifest naming (V1/V2), framing, hints, latest-version lookups and feature flags."""

from __future__ import annotations

import json
import shutil
import struct
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from lakecore_lance import features
from lakecore_lance.format import LanceFormat
from lakecore_lance.manifest import (
    U64_MAX,
    ManifestFile,
    find_manifest,
    latest_manifest,
    manifest_path,
    parse_manifest_name,
    read_manifest,
)

import lakecore
from lakecore.errors import (
    CorruptTableError,
    TableNotFoundError,
    UnsupportedFeatureError,
    VersionNotFoundError,
)
from lakecore.storage import FileInfo, Storage, open_storage

from .helpers import lance, rewrite_manifest


def test_manifest_names() -> None:
    assert manifest_path(5, "v1") == "_versions/5.manifest"
    assert manifest_path(5, "v2") == f"_versions/{U64_MAX - 5:020d}.manifest"
    assert parse_manifest_name("_versions/18446744073709551610.manifest") == ManifestFile(
        5, "_versions/18446744073709551610.manifest", "v2"
    )
    assert parse_manifest_name("_versions/12.manifest") == ManifestFile(
        12, "_versions/12.manifest", "v1"
    )
    for other in ("latest_version_hint.json", "3.manifest-1b2c", "x.manifest", "3.txn"):
        assert parse_manifest_name(f"_versions/{other}") is None
    assert parse_manifest_name(f"_versions/{'9' * 20}.manifest") is None  # > u64::MAX


class CountingStorage:
    """A storage wrapper counting list calls and how many listed entries were consumed."""

    def __init__(self, inner: Storage) -> None:
        self.inner = inner
        self.listed = 0
        self.full_listings = 0

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def list_from(self, path: str) -> Iterator[FileInfo]:
        for info in self.inner.list_from(path):
            self.listed += 1
            yield info

    def list_dir(self, path: str) -> list[FileInfo]:
        self.full_listings += 1
        return self.inner.list_dir(path)


def _dataset(path: Path, versions: int, v2: bool) -> None:
    for i in range(versions):
        lance.write_dataset(
            pa.table({"id": [i]}),
            str(path),
            mode="create" if i == 0 else "append",
            enable_v2_manifest_paths=v2,
        )


def test_latest_v2_reads_the_first_listed_name_only(tmp_path: Path) -> None:
    _dataset(tmp_path / "v2", 4, v2=True)
    storage = CountingStorage(open_storage(str(tmp_path / "v2")))
    assert latest_manifest(storage).version == 4  # type: ignore[arg-type]
    assert storage.listed == 1 and storage.full_listings == 0


def test_latest_v1_lists_the_directory_and_ignores_hints(tmp_path: Path) -> None:
    path = tmp_path / "v1"
    _dataset(path, 3, v2=False)
    assert sorted(p.name for p in (path / "_versions").iterdir())[:3] == [
        "1.manifest",
        "2.manifest",
        "3.manifest",
    ]
    # Stale hints: an older _latest.manifest and a wrong latest_version_hint.json.
    shutil.copy(path / "_versions" / "1.manifest", path / "_latest.manifest")
    (path / "_versions" / "latest_version_hint.json").write_text(json.dumps({"version": 1}))
    table = lakecore.open(str(path))
    assert table.format == "lance" and table.version == 3
    assert table.to_arrow().num_rows == 3
    assert table.snapshot(version=2).to_arrow().num_rows == 2


def test_find_manifest_tries_both_namings(tmp_path: Path) -> None:
    _dataset(tmp_path / "a", 2, v2=True)
    _dataset(tmp_path / "b", 2, v2=False)
    assert find_manifest(open_storage(str(tmp_path / "a")), 1).naming == "v2"
    assert find_manifest(open_storage(str(tmp_path / "b")), 1).naming == "v1"
    with pytest.raises(VersionNotFoundError, match=r"versions 1\.\.2"):
        find_manifest(open_storage(str(tmp_path / "b")), 7)


def test_footer_and_framing_are_checked(tmp_path: Path) -> None:
    path = tmp_path / "bad"
    _dataset(path, 1, v2=False)
    storage = open_storage(str(path))
    file = find_manifest(storage, 1)
    assert read_manifest(storage, file).manifest.version == 1
    manifest = path / "_versions" / "1.manifest"
    data = manifest.read_bytes()
    manifest.write_bytes(data[:-4] + b"NOPE")
    with pytest.raises(CorruptTableError, match="bad magic"):
        read_manifest(storage, file)
    manifest.write_bytes(data[:-16] + struct.pack("<qHH", len(data), 0, 2) + b"LANC")
    with pytest.raises(CorruptTableError, match="outside the file"):
        read_manifest(storage, file)
    manifest.write_bytes(b"LANC")
    with pytest.raises(CorruptTableError, match="too short"):
        read_manifest(storage, file)


def test_no_dataset(tmp_path: Path) -> None:
    (tmp_path / "_versions").mkdir()
    assert not LanceFormat().detect(open_storage(str(tmp_path)))
    with pytest.raises(TableNotFoundError):
        LanceFormat().latest_version(open_storage(str(tmp_path)))


@pytest.mark.parametrize(
    ("flag", "name"),
    [(64, "flag_64"), (1 << 40, "flag_1099511627776"), (features.BASE_PATHS, "base_paths")],
)
def test_unreadable_feature_flags_are_refused_before_any_fragment(
    tmp_path: Path, flag: int, name: str
) -> None:
    path = tmp_path / "flags"
    _dataset(path, 2, v2=False)
    rewrite_manifest(
        path / "_versions" / "2.manifest",
        lambda m: setattr(m, "reader_feature_flags", m.reader_feature_flags | flag),
    )
    shutil.rmtree(path / "data")  # nothing of the fragments may be read
    table = lakecore.open(str(path))
    with pytest.raises(UnsupportedFeatureError, match=name) as info:
        table.snapshot()
    assert info.value.feature == f"lance:{name}"
    # Version 1 has no such flag.
    assert table.snapshot(version=1).files().num_rows == 1


def test_known_flags_are_readable(tmp_path: Path) -> None:
    path = tmp_path / "known"
    ds = lance.write_dataset(
        pa.table({"id": list(range(10))}), str(path), enable_stable_row_ids=True
    )
    ds.delete("id < 2")
    snap = lakecore.open(str(path)).snapshot()
    assert {"deletion_files", "stable_row_ids"} <= snap.features.reader_features
    assert snap.features.merge_on_read
    assert sorted(snap.to_arrow().column("id").to_pylist()) == list(range(2, 10))


def test_data_file_paths_may_not_escape_the_root(tmp_path: Path) -> None:
    path = tmp_path / "escape"
    _dataset(path, 1, v2=False)

    def escape(m: object) -> None:
        m.fragments[0].files[0].path = "../../outside.lance"  # type: ignore[attr-defined]

    rewrite_manifest(path / "_versions" / "1.manifest", escape)
    with pytest.raises(CorruptTableError, match=r"outside\.lance"):
        lakecore.open(str(path)).snapshot()
