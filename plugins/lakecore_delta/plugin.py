"""Registers the Delta format with lakecore's plugin manager."""

from __future__ import annotations

from lakecore.hookspecs import hookimpl
from lakecore.plugins import FormatRegistry
from lakecore_delta.format import DeltaFormat


@hookimpl
def lakecore_register_formats(registry: FormatRegistry) -> None:
    """Add the Delta Lake format."""
    registry.add(DeltaFormat())
