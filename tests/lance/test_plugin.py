"""The Lance plugin is built in; without the ``lance`` extra it stays unregistered."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from lakecore_lance import plugin

import lakecore
from lakecore.errors import PluginNotInstalledError
from lakecore.plugins import load_registry

from .helpers import lance


def test_registered_and_detected(tmp_path: Path) -> None:
    assert "lance" in load_registry(disabled=[]).names()
    lance.write_dataset(pa.table({"id": [1, 2]}), str(tmp_path / "ds"))
    table = lakecore.open(str(tmp_path / "ds"))
    assert table.format == "lance"
    c = lakecore.Capability
    assert table.capabilities == frozenset(
        {
            c.TIME_TRAVEL_BY_TIMESTAMP,
            c.CHANGE_FEED,
            c.WRITE,
            c.OVERWRITE,
            c.DELETE,
            c.UPDATE,
            c.MERGE,
            c.UPSERT,
            c.OPTIMIZE,
            c.SCHEMA_EVOLUTION,
            c.RESTORE,
            c.VACUUM,
            c.TAGS,
            c.REPLACE_FILES,
            c.COMMIT_METADATA,
            c.COMMIT_TIMESTAMPS,
        }
    )
    with pytest.raises(lakecore.UnsupportedFeatureError) as info:
        table.checkpoint()
    assert info.value.feature == "checkpoint"


def test_without_the_extra_the_install_hint_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lance.write_dataset(pa.table({"id": [1]}), str(tmp_path / "ds"))
    monkeypatch.setattr(plugin, "REQUIRED_MODULES", ("lance", "no_such_module_for_lakecore"))
    assert "lance" not in load_registry(disabled=[]).names()
    with pytest.raises(PluginNotInstalledError, match=r"pip install 'lakecore\[lance\]'"):
        lakecore.open(str(tmp_path / "ds"))
