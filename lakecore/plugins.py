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
from lakecore.errors import ArgumentTypeError, PluginNotInstalledError
from lakecore.format import TableFormat

DISABLE_ENV = "LAKECORE_DISABLED_PLUGINS"
BUILTIN_PLUGINS = {
    "delta": "lakecore_delta.plugin",
    "hudi": "lakecore_hudi.plugin",
    "lance": "lakecore_lance.plugin",
}
"""Plugins shipped in this distribution: loaded even when running from a source checkout."""
INSTALL_HINTS = {
    "delta": "the delta plugin ships with lakecore; reinstall lakecore",
    "hudi": "the hudi plugin ships with lakecore; reinstall lakecore",
    "lance": "pip install 'lakecore[lance]'",
}
"""What to do when a built-in format is not registered although nobody disabled it (the
extras that exist: see pyproject.toml; delta and hudi need none)."""
NOT_PROVIDED = frozenset({"iceberg", "paimon", "hive", "parquet", "orc", "csv", "json"})
"""Table and file formats users ask for that no lakecore plugin provides (no extra to install)."""


def format_key(name: object) -> str:
    """The registry key of a format name: case and surrounding spaces do not matter
    (``"Delta"`` is ``"delta"``). Raises ``ArgumentTypeError`` for a name that is no string."""
    if not isinstance(name, str):
        raise ArgumentTypeError(f"format must be a format name such as 'delta', not {name!r}")
    return name.strip().lower()


class FormatRegistry:
    """The formats plugins registered, by name. Receives ``lakecore_register_formats`` calls."""

    def __init__(self, disabled: Iterable[str] = ()) -> None:
        self._formats: dict[str, TableFormat] = {}
        self.disabled = frozenset(disabled)
        self._disabled_keys = frozenset(d.lower() for d in self.disabled)

    def is_disabled(self, name: str) -> bool:
        """Whether ``LAKECORE_DISABLED_PLUGINS`` (or ``disabled``) names format ``name``."""
        return format_key(name) in self._disabled_keys

    def add(self, fmt: TableFormat) -> None:
        """Register ``fmt`` (under its name in lower case); raises ``ValueError`` if that name
        is already taken."""
        if self.is_disabled(fmt.name):
            return
        key = format_key(fmt.name)
        if key in self._formats:
            raise ValueError(f"format {fmt.name!r} is registered twice")
        self._formats[key] = fmt

    def get(self, name: str) -> TableFormat:
        """Return the format called ``name`` (any case: ``"Delta"`` is ``"delta"``).

        Raises ``PluginNotInstalledError`` if absent, saying why: disabled by
        ``LAKECORE_DISABLED_PLUGINS`` (the fix is there, not in an install), a built-in whose
        extra is missing (``pip install 'lakecore[lance]'``), a format lakecore has no plugin
        for (no extra is suggested), or an unknown name (the installed formats are listed);
        ``ArgumentTypeError`` when ``name`` is no string.
        """
        key = format_key(name)
        found = self._formats.get(key)
        if found is not None:
            return found
        raise PluginNotInstalledError(key, self._missing(key))

    def _missing(self, key: str) -> str:
        """Why format ``key`` is not registered, and what the user can do about it."""
        available = ", ".join(self.names()) or "none"
        if self.is_disabled(key):
            return (
                f"format {key!r} is disabled: {DISABLE_ENV} names it; remove it from that "
                "list to use it"
            )
        if key in INSTALL_HINTS:
            return f"format {key!r} is not installed: {INSTALL_HINTS[key]}"
        if key in NOT_PROVIDED:
            return (
                f"lakecore has no {key} support (no plugin or extra provides it); "
                f"the formats it reads here: {available}"
            )
        return (
            f"no installed lakecore plugin provides format {key!r}; the formats installed: "
            f"{available} (a third-party format needs its plugin package installed)"
        )

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
