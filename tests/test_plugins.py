"""The format registry, plugin loading through entry points, and LAKECORE_DISABLED_PLUGINS."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import pytest

import lakecore.plugins as plugins
from lakecore.errors import LakecoreError, PluginNotInstalledError
from lakecore.format import TableFormat
from lakecore.hookspecs import hookimpl
from lakecore.plugins import (
    BUILTIN_PLUGINS,
    FormatRegistry,
    disabled_plugins,
    load_registry,
    plugin_manager,
)
from lakecore.storage import Storage

BUILTINS = ["delta", "hudi", "lance"]
"""The plugins this distribution ships; tests disable them to see only their fakes."""


@dataclass
class FakeFormat:
    """Just enough of a TableFormat for the registry and detection."""

    name: str
    matches: bool = True

    def detect(self, storage: Storage) -> bool:
        return self.matches


def fake(name: str) -> TableFormat:
    """A FakeFormat, typed as the TableFormat it stands in for."""
    return cast(TableFormat, FakeFormat(name))


class FakePlugin:
    """A third-party plugin object, as an entry point would load it."""

    def __init__(self, *formats: TableFormat) -> None:
        self.formats = formats

    @hookimpl
    def lakecore_register_formats(self, registry: FormatRegistry) -> None:
        for fmt in self.formats:
            registry.add(fmt)


@dataclass
class FakeEntryPoint:
    name: str
    plugin: Any

    def load(self) -> Any:
        return self.plugin


def _install(monkeypatch: pytest.MonkeyPatch, *eps: FakeEntryPoint) -> None:
    """Make ``eps`` the only entry points of group ``lakecore``."""

    def entry_points(*, group: str) -> list[FakeEntryPoint]:
        assert group == "lakecore"
        return list(eps)

    monkeypatch.setattr(plugins, "entry_points", entry_points)


# --- FormatRegistry ---------------------------------------------------------------------------


def test_registry_add_and_get() -> None:
    registry = FormatRegistry()
    b, a = fake("b"), fake("a")
    registry.add(b)
    registry.add(a)
    assert registry.get("a") is a
    assert registry.get("b") is b
    assert registry.names() == ["a", "b"]
    assert registry.formats() == [a, b]


def test_registry_rejects_a_duplicate_name() -> None:
    registry = FormatRegistry()
    first = fake("delta")
    registry.add(first)
    with pytest.raises(ValueError, match="'delta' is registered twice"):
        registry.add(fake("delta"))
    assert registry.get("delta") is first


@pytest.mark.parametrize(
    ("name", "hint"),
    [
        ("lance", "pip install 'lakecore[lance]'"),
        # Delta and Hudi need no extra (issue 14: no hint names an extra that does not exist).
        ("hudi", "ships with lakecore"),
        ("delta", "ships with lakecore"),
    ],
)
def test_registry_get_missing_format_gives_install_hint(name: str, hint: str) -> None:
    with pytest.raises(PluginNotInstalledError) as info:
        FormatRegistry().get(name)
    assert info.value.format_name == name
    assert hint in str(info.value)
    assert "not installed" in str(info.value)
    assert isinstance(info.value, LakecoreError)


def test_registry_get_unknown_format_names_it() -> None:
    with pytest.raises(PluginNotInstalledError, match="no iceberg support") as info:
        FormatRegistry().get("iceberg")
    assert info.value.format_name == "iceberg"
    with pytest.raises(PluginNotInstalledError, match="'no-such-format'"):
        FormatRegistry().get("no-such-format")


def test_registry_skips_disabled_formats_and_says_so() -> None:
    registry = FormatRegistry(disabled=["lance"])
    registry.add(fake("lance"))
    assert registry.names() == []
    with pytest.raises(PluginNotInstalledError, match="'lance' is disabled"):
        registry.get("lance")


# --- environment ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [("", set()), ("delta", {"delta"}), (" delta , hudi,,", {"delta", "hudi"})],
)
def test_disabled_plugins_reads_the_environment(
    monkeypatch: pytest.MonkeyPatch, value: str, expected: set[str]
) -> None:
    monkeypatch.setenv("LAKECORE_DISABLED_PLUGINS", value)
    assert disabled_plugins() == expected


def test_disabled_plugins_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LAKECORE_DISABLED_PLUGINS", raising=False)
    assert disabled_plugins() == frozenset()


# --- loading plugins --------------------------------------------------------------------------


def test_entry_point_plugins_register_formats(monkeypatch: pytest.MonkeyPatch) -> None:
    fmt = fake("fake")
    _install(monkeypatch, FakeEntryPoint("fake-plugin", FakePlugin(fmt)))
    registry = load_registry(disabled=BUILTINS)
    assert registry.names() == ["fake"]
    assert registry.get("fake") is fmt


def test_disabling_an_entry_point_by_plugin_name(monkeypatch: pytest.MonkeyPatch) -> None:
    _install(monkeypatch, FakeEntryPoint("fake-plugin", FakePlugin(fake("fake"))))
    monkeypatch.setenv("LAKECORE_DISABLED_PLUGINS", "delta,hudi,lance,fake-plugin")
    registry = load_registry()
    assert registry.names() == []
    assert registry.disabled == {"delta", "hudi", "lance", "fake-plugin"}


def test_disabling_by_format_name(monkeypatch: pytest.MonkeyPatch) -> None:
    plugin = FakePlugin(fake("one"), fake("two"))
    _install(monkeypatch, FakeEntryPoint("fake-plugin", plugin))
    registry = load_registry(disabled=[*BUILTINS, "two"])
    assert registry.names() == ["one"]


def test_environment_disables_the_builtin_delta_plugin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAKECORE_DISABLED_PLUGINS", "delta")
    registry = load_registry()
    assert "delta" not in registry.names()
    with pytest.raises(PluginNotInstalledError, match="'delta' is disabled"):
        registry.get("delta")


def test_explicit_disabled_overrides_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    _install(monkeypatch, FakeEntryPoint("fake-plugin", FakePlugin(fake("fake"))))
    monkeypatch.setenv("LAKECORE_DISABLED_PLUGINS", "fake-plugin")
    assert load_registry(disabled=BUILTINS).names() == ["fake"]


def test_plugin_manager_knows_the_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    _install(monkeypatch)
    pm = plugin_manager(disabled=BUILTINS)
    assert pm.get_plugins() == set()
    assert pm.hook.lakecore_register_formats.spec is not None


def test_builtin_hudi_plugin_registers_hudi() -> None:
    registry = load_registry(disabled=[])
    assert registry.get("hudi").name == "hudi"
    assert sorted(BUILTIN_PLUGINS) == sorted(BUILTINS)


def test_builtin_delta_plugin_registers_delta() -> None:
    pytest.importorskip("lakecore_delta.plugin", reason="the delta plugin is not built yet")
    registry = load_registry(disabled=[])
    assert registry.get("delta").name == "delta"
