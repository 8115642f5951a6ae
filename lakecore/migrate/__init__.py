"""Migration between table formats (``lakecore.migrate``): format-neutral, never loses a delete.

See ``lakecore.migrate.run`` for the engine and docs/migration.md for what it carries over.
"""

from __future__ import annotations

from lakecore.migrate.report import MigrationReport
from lakecore.migrate.run import MODES, migrate

__all__ = ["MODES", "MigrationReport", "migrate"]
