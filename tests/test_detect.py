"""Format detection: one match, several, none; marker directories of missing plugins."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import pyarrow as pa
import pytest

import lakecore
from lakecore.detect import detect_format
from lakecore.errors import (
    AmbiguousFormatError,
    ArgumentTypeError,
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
        (FIRST_COMMIT, "delta", "ships with lakecore"),
        (".hoodie/hoodie.properties", "hudi", "ships with lakecore"),
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
    # Only the lance extra exists: no hint may name lakecore[delta] or lakecore[hudi].
    assert "lakecore[delta]" not in str(info.value)
    assert "lakecore[hudi]" not in str(info.value)


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


# --- hints that must not mislead (issue 14) -----------------------------------------------------


def test_open_with_a_disabled_format_points_at_the_variable_not_an_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_delta_table(tmp_path)
    for disabled in ("hudi", "lance", "delta"):
        monkeypatch.setenv("LAKECORE_DISABLED_PLUGINS", disabled)
        with pytest.raises(PluginNotInstalledError) as named:
            lakecore.open(str(tmp_path), format=disabled)
        assert "LAKECORE_DISABLED_PLUGINS" in str(named.value), disabled
        assert "pip install" not in str(named.value), disabled
    with pytest.raises(PluginNotInstalledError) as detected:
        lakecore.open(str(tmp_path))  # delta still disabled: found by its marker
    assert "LAKECORE_DISABLED_PLUGINS" in str(detected.value)
    assert "pip install" not in str(detected.value)


@pytest.mark.parametrize("name", ["Delta", "DELTA", " delta ", "dElTa"])
def test_format_names_ignore_case(tmp_path: Path, name: str) -> None:
    write_delta_table(tmp_path)
    assert lakecore.open(str(tmp_path), format=name).format == "delta"
    assert lakecore.is_table(str(tmp_path), format=name)


def test_create_takes_a_format_name_in_any_case(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64())])
    assert lakecore.create(str(tmp_path / "t"), schema, "Delta").format == "delta"


@pytest.mark.parametrize("name", ["iceberg", "Iceberg", "parquet", "no-such-format"])
def test_a_format_no_plugin_provides_suggests_no_extra(tmp_path: Path, name: str) -> None:
    write_delta_table(tmp_path)
    with pytest.raises(PluginNotInstalledError) as info:
        lakecore.open(str(tmp_path), format=name)
    message = str(info.value)
    assert "pip install" not in message
    assert "lakecore[" not in message
    assert "delta" in message  # names what is installed
    assert info.value.format_name == name.lower()


@pytest.mark.parametrize("name", [None, 1, ["delta"], b"delta"])
def test_a_format_that_is_no_name_is_an_argument_type_error(tmp_path: Path, name: object) -> None:
    write_delta_table(tmp_path)
    with pytest.raises(ArgumentTypeError, match="format must be a format name"):
        FormatRegistry().get(name)  # type: ignore[arg-type]
    if name is not None:
        with pytest.raises(ArgumentTypeError):
            lakecore.open(str(tmp_path), format=name)  # type: ignore[arg-type]


def test_a_path_to_a_file_is_not_empty_or_missing(tmp_path: Path) -> None:
    write_delta_table(tmp_path / "t")
    for file in (tmp_path / "t" / FIRST_COMMIT, tmp_path / "data.parquet"):
        file.write_bytes(file.read_bytes() if file.exists() else b"PAR1")
        for fmt in (None, "delta"):
            with pytest.raises(TableNotFoundError) as info:
                lakecore.open(str(file), format=fmt)
            assert "is a file, not a table" in str(info.value), (file, fmt)
            assert "empty or missing" not in str(info.value)
        assert not lakecore.is_table(str(file))


def test_a_folder_of_tables_names_the_tables(tmp_path: Path) -> None:
    for name in ("a", "b", "nested/c", "d", "e"):
        write_delta_table(tmp_path / name)
    for fmt in (None, "delta"):
        with pytest.raises(TableNotFoundError) as info:
            lakecore.open(str(tmp_path), format=fmt)
        message = str(info.value)
        assert "empty or missing" not in message
        assert "holds only folders" in message
        assert "tables below it: a, b, d and 2 more" in message
    assert not lakecore.is_table(str(tmp_path))


def test_a_folder_of_folders_without_tables(tmp_path: Path) -> None:
    (tmp_path / "x" / "y").mkdir(parents=True)
    (tmp_path / "x" / "y" / "data.csv").write_text("a,b\n")
    with pytest.raises(TableNotFoundError, match="holds only folders") as info:
        lakecore.open(str(tmp_path))
    assert "tables below" not in str(info.value)


def test_empty_and_missing_locations_still_say_so(tmp_path: Path) -> None:
    for where in (tmp_path, tmp_path / "missing"):
        with pytest.raises(TableNotFoundError, match="empty or missing"):
            lakecore.open(str(where))
        assert not lakecore.is_table(str(where))


# --- lakecore.is_table ------------------------------------------------------------------------


def test_is_table_answers_per_format(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64())])
    lakecore.create(str(tmp_path / "d"), schema, "delta")
    lakecore.create(str(tmp_path / "h"), schema, "hudi", [], {"record_key": "id"})
    assert lakecore.is_table(str(tmp_path / "d"))
    assert lakecore.is_table((tmp_path / "h").as_uri())
    assert lakecore.is_table(str(tmp_path / "h"), format="hudi")
    assert not lakecore.is_table(str(tmp_path / "h"), format="delta")
    assert not lakecore.is_table(str(tmp_path / "none"))
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "x.bin").write_bytes(b"x")
    assert not lakecore.is_table(str(tmp_path / "junk"))
    with pytest.raises(PluginNotInstalledError):
        lakecore.is_table(str(tmp_path / "d"), format="iceberg")


def test_is_table_with_a_disabled_plugin_is_false(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_delta_table(tmp_path)
    monkeypatch.setenv("LAKECORE_DISABLED_PLUGINS", "delta")
    assert not lakecore.is_table(str(tmp_path))
