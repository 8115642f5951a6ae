"""Plugin loading: entry points of group ``lakecore`` through pluggy, and the format registry.

Set ``LAKECORE_DISABLED_PLUGINS`` to a comma-separated list of plugin (entry-point) or format
names to leave them unloaded.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
from collections.abc import Iterable
from importlib.metadata import entry_points
from typing import Any

import pluggy

from lakecore import hookspecs
from lakecore.errors import PluginNotInstalledError
from lakecore.format import TableFormat

DISABLE_ENV = "LAKECORE_DISABLED_PLUGINS"
BUILTIN_PLUGINS = {
    "delta": "lakecore_delta.plugin",
    "hudi": "lakecore_hudi.plugin",
    "lance": "lakecore_lance.plugin",
}
"""Plugins shipped in this distribution: loaded even when running from a source checkout."""
INSTALL_HINTS = {
    "delta": "the delta plugin ships with lakecore; check LAKECORE_DISABLED_PLUGINS",
    "hudi": "pip install 'lakecore[hudi]'",
    "lance": "pip install 'lakecore[lance]'",
}


class FormatRegistry:
    """The formats plugins registered, by name. Receives ``lakecore_register_formats`` calls."""

    def __init__(self, disabled: Iterable[str] = ()) -> None:
        self._formats: dict[str, TableFormat] = {}
        self.disabled = frozenset(disabled)

    def add(self, fmt: TableFormat) -> None:
        """Register ``fmt``; raises ``ValueError`` if its name is already taken."""
        if fmt.name in self.disabled:
            return
        if fmt.name in self._formats:
            raise ValueError(f"format {fmt.name!r} is registered twice")
        self._formats[fmt.name] = fmt

    def get(self, name: str) -> TableFormat:
        """Return the format called ``name``; raises ``PluginNotInstalledError`` if absent."""
        try:
            return self._formats[name]
        except KeyError:
            hint = INSTALL_HINTS.get(name)
            msg = None
            if name in self.disabled:
                msg = f"format {name!r} is disabled ({DISABLE_ENV})" + (f": {hint}" if hint else "")
            elif hint:
                msg = f"format {name!r} is not installed: {hint}"
            raise PluginNotInstalledError(name, msg) from None

    def names(self) -> list[str]:
        """Return the registered format names, sorted."""
        return sorted(self._formats)

    def formats(self) -> list[TableFormat]:
        """Return the registered formats, sorted by name."""
        return [self._formats[n] for n in self.names()]


def disabled_plugins() -> frozenset[str]:
    """Return the plugin names listed in ``LAKECORE_DISABLED_PLUGINS``."""
    raw = os.environ.get(DISABLE_ENV, "")
    return frozenset(p.strip() for p in raw.split(",") if p.strip())


_FOUND: dict[tuple[Any, ...], tuple[Any, ...]] = {}
_FOUND_LOCK = threading.Lock()


def _project_entry_points() -> tuple[Any, ...]:
    """The entry points of group ``lakecore``, found once per ``sys.path`` (and lookup function).

    Finding them reads the metadata of every installed distribution (~2.5 ms with ~100 of
    them), which was most of a ``lakecore.open`` of a small table; installing a plugin
    distribution into a running process needs ``forget_entry_points()``.
    """
    key = (entry_points, tuple(sys.path))
    with _FOUND_LOCK:
        found = _FOUND.get(key)
        if found is None:
            found = tuple(entry_points(group=hookspecs.PROJECT))
            _FOUND.clear()  # one sys.path at a time: never grows
            _FOUND[key] = found
        return found


def forget_entry_points() -> None:
    """Make the next registry look the entry points up again (a distribution was installed)."""
    with _FOUND_LOCK:
        _FOUND.clear()


def plugin_manager(disabled: Iterable[str] | None = None) -> pluggy.PluginManager:
    """Return a new plugin manager with every enabled plugin loaded."""
    skip = disabled_plugins() if disabled is None else frozenset(disabled)
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    for ep in _project_entry_points():
        if ep.name not in skip and pm.get_plugin(ep.name) is None:
            pm.register(ep.load(), name=ep.name)
    for name, path in BUILTIN_PLUGINS.items():
        if name not in skip and pm.get_plugin(name) is None:
            module = importlib.import_module(path)
            # An entry point under another name may already have registered this module.
            if not pm.is_registered(module):
                pm.register(module, name=name)
    return pm


def load_registry(disabled: Iterable[str] | None = None) -> FormatRegistry:
    """Return a registry filled by every enabled plugin (reads the environment each call)."""
    skip = disabled_plugins() if disabled is None else frozenset(disabled)
    registry = FormatRegistry(disabled=skip)
    plugin_manager(skip).hook.lakecore_register_formats(registry=registry)
    return registry
