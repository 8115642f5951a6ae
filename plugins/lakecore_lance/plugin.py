"""Registers the Lance format with lakecore's plugin manager (when the ``lance`` extra is there)."""

from __future__ import annotations

import importlib.util

from lakecore.hookspecs import hookimpl
from lakecore.plugins import FormatRegistry

REQUIRED_MODULES = ("lance", "google.protobuf", "pyroaring")
"""What the ``lance`` extra installs: without them the format stays unregistered, so opening a
Lance dataset raises ``PluginNotInstalledError`` with the install hint."""


def dependencies_installed() -> bool:
    """Whether every module of ``REQUIRED_MODULES`` can be imported (imports none of them)."""
    return all(importlib.util.find_spec(name) is not None for name in REQUIRED_MODULES)


@hookimpl
def lakecore_register_formats(registry: FormatRegistry) -> None:
    """Add the Lance format, if its dependencies are installed."""
    if not dependencies_installed():
        return
    from lakecore_lance.format import LanceFormat

    registry.add(LanceFormat())
