"""Format detection: one match, several, none; marker directories of missing plugins."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import pytest

import lakecore
from lakecore.detect import detect_format
from lakecore.errors import (
    AmbiguousFormatError,
    FormatDetectionError,
    PluginNotInstalledError,
    TableNotFoundError,
    UnknownFormatError,
)
from lakecore.format import TableFormat
from lakecore.plugins import FormatRegistry
from lakecore.storage import FsspecStorage, Storage

FIRST_COMMIT = "_delta_log/00000000000000000000.json"


@dataclass
class FakeFormat:
    """A format whose detection answer is fixed; records which storage it was asked about."""

    name: str
    matches: bool
    asked: Storage | None = None

    def detect(self, storage: Storage) -> bool:
        self.asked = storage
        return self.matches


def registry_of(*formats: FakeFormat, disabled: tuple[str, ...] = ()) -> FormatRegistry:
    registry = FormatRegistry(disabled=disabled)
    for fmt in formats:
        registry.add(cast(TableFormat, fmt))
    return registry


@pytest.fixture
def storage(tmp_path: Path) -> FsspecStorage:
    return FsspecStorage(str(tmp_path / "table"))


def write_delta_table(root: Path) -> None:
    """Write the smallest valid Delta table: protocol and metadata of an empty table."""
    schema = {
        "type": "struct",
        "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}],
    }
    actions = [
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {
            "metaData": {
                "id": "00000000-0000-0000-0000-000000000000",
                "format": {"provider": "parquet", "options": {}},
                "schemaString": json.dumps(schema),
                "partitionColumns": [],
                "configuration": {},
                "createdTime": 1700000000000,
            }
        },
    ]
    (root / "_delta_log").mkdir(parents=True)
    (root / FIRST_COMMIT).write_text("".join(json.dumps(a) + "\n" for a in actions))


# --- detect_format with fake formats ----------------------------------------------------------


def test_the_one_matching_format_is_returned(storage: FsspecStorage) -> None:
    storage.put("data.bin", b"x")
    yes, no = FakeFormat("yes", True), FakeFormat("no", False)
    assert detect_format(storage, registry_of(no, yes)) is cast(TableFormat, yes)
    assert yes.asked is storage
    assert no.asked is storage  # every format is asked, not only until the first match


def test_several_matches_are_ambiguous(storage: FsspecStorage) -> None:
    storage.put("data.bin", b"x")
    registry = registry_of(FakeFormat("fake_b", True), FakeFormat("fake_a", True))
    with pytest.raises(AmbiguousFormatError) as info:
        detect_format(storage, registry)
    assert info.value.candidates == ("fake_a", "fake_b")
    assert "fake_a" in str(info.value)
    assert "fake_b" in str(info.value)
    assert "format=" in str(info.value)  # says how to resolve it
    assert isinstance(info.value, FormatDetectionError)


def test_ambiguity_lists_only_the_matching_formats(storage: FsspecStorage) -> None:
    storage.put("data.bin", b"x")
    registry = registry_of(FakeFormat("a", True), FakeFormat("b", False), FakeFormat("c", True))
    with pytest.raises(AmbiguousFormatError) as info:
        detect_format(storage, registry)
    assert info.value.candidates == ("a", "c")


def test_unrecognised_files_are_an_unknown_format(storage: FsspecStorage) -> None:
    storage.put("random.bin", b"not a table")
    with pytest.raises(UnknownFormatError, match="asked: a, b"):
        detect_format(storage, registry_of(FakeFormat("a", False), FakeFormat("b", False)))


def test_unknown_format_with_no_formats_installed(storage: FsspecStorage) -> None:
    storage.put("random.bin", b"not a table")
    with pytest.raises(UnknownFormatError, match="asked: none"):
        detect_format(storage, registry_of())


def test_empty_directory_is_not_a_table(storage: FsspecStorage, tmp_path: Path) -> None:
    (tmp_path / "table").mkdir()
    with pytest.raises(TableNotFoundError):
        detect_format(storage, registry_of(FakeFormat("a", False)))


def test_missing_directory_is_not_a_table(storage: FsspecStorage) -> None:
    with pytest.raises(TableNotFoundError):
        detect_format(storage, registry_of(FakeFormat("a", False)))


@pytest.mark.parametrize(
    ("marker_file", "name", "hint"),
    [
        (FIRST_COMMIT, "delta", "LAKECORE_DISABLED_PLUGINS"),
        (".hoodie/hoodie.properties", "hudi", "pip install 'lakecore[hudi]'"),
        ("_versions/1.manifest", "lance", "pip install 'lakecore[lance]'"),
    ],
)
def test_marker_of_a_missing_plugin_names_the_plugin(
    storage: FsspecStorage, marker_file: str, name: str, hint: str
) -> None:
    storage.put(marker_file, b"{}")
    with pytest.raises(PluginNotInstalledError) as info:
        detect_format(storage, registry_of(FakeFormat("other", False)))
    assert info.value.format_name == name
    assert hint in str(info.value)
    assert "not installed" in str(info.value)
    assert storage.root in str(info.value)


def test_marker_of_a_disabled_plugin_says_disabled(storage: FsspecStorage) -> None:
    storage.put(FIRST_COMMIT, b"{}")
    with pytest.raises(PluginNotInstalledError, match="plugin is disabled"):
        detect_format(storage, registry_of(disabled=("delta",)))


def test_empty_marker_directory_is_not_taken_for_a_table(storage: FsspecStorage) -> None:
    storage.put("data.bin", b"x")
    Path(storage.resolve("_delta_log")).mkdir()
    with pytest.raises(UnknownFormatError):
        detect_format(storage, registry_of())


def test_detection_works_on_memory_storage() -> None:
    storage = FsspecStorage("memory://lakecore-test-detect-ambiguous")
    try:
        storage.put("x", b"x")
        with pytest.raises(AmbiguousFormatError):
            detect_format(storage, registry_of(FakeFormat("a", True), FakeFormat("b", True)))
    finally:
        storage.delete("x")


# --- lakecore.open ----------------------------------------------------------------------------


def test_open_delta_table_with_delta_disabled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_delta_table(tmp_path)
    monkeypatch.setenv("LAKECORE_DISABLED_PLUGINS", "delta")
    with pytest.raises(PluginNotInstalledError, match="delta plugin is disabled") as info:
        lakecore.open(str(tmp_path))
    assert info.value.format_name == "delta"


def test_open_with_a_disabled_format_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_delta_table(tmp_path)
    monkeypatch.setenv("LAKECORE_DISABLED_PLUGINS", "delta")
    with pytest.raises(PluginNotInstalledError, match="'delta' is disabled"):
        lakecore.open(str(tmp_path), format="delta")


def test_open_with_an_unknown_format_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAKECORE_DISABLED_PLUGINS", "delta")
    (tmp_path / "x").write_bytes(b"x")
    with pytest.raises(PluginNotInstalledError, match="'no-such-format'"):
        lakecore.open(str(tmp_path), format="no-such-format")


def test_open_unknown_format(tmp_path: Path) -> None:
    (tmp_path / "random.bin").write_bytes(b"not a table")
    with pytest.raises(UnknownFormatError):
        lakecore.open(str(tmp_path))


def test_open_empty_directory(tmp_path: Path) -> None:
    with pytest.raises(TableNotFoundError):
        lakecore.open(str(tmp_path))


def test_open_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(TableNotFoundError):
        lakecore.open(str(tmp_path / "missing"))


def test_open_detects_delta(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("lakecore_delta.plugin", reason="the delta plugin is not built yet")
    monkeypatch.delenv("LAKECORE_DISABLED_PLUGINS", raising=False)
    write_delta_table(tmp_path)
    table = lakecore.open(str(tmp_path))
    assert table.format == "delta"
    assert lakecore.open(tmp_path.as_uri(), format="delta").format == "delta"
