"""Registers the Hudi format with lakecore's plugin manager."""

from __future__ import annotations

from lakecore.hookspecs import hookimpl
from lakecore.plugins import FormatRegistry
from lakecore_hudi.format import HudiFormat


@hookimpl
def lakecore_register_formats(registry: FormatRegistry) -> None:
    """Add the Apache Hudi format."""
    registry.add(HudiFormat())
