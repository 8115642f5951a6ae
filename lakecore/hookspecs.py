"""The hooks a lakecore plugin may implement (entry-point group ``lakecore``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from lakecore.plugins import FormatRegistry

PROJECT = "lakecore"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def lakecore_register_formats(registry: FormatRegistry) -> None:
    """Called once when the plugin manager loads, to add the plugin's TableFormats."""
