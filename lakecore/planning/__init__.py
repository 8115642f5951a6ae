"""The stats-pruning scan planner shared by every format (see ``docs/planning.md``).

``Table.scan(where, columns)`` / ``Snapshot.scan`` build a ``Scan``; its ``files()`` (planned
file-index rows, Arrow) and ``context`` (picklable) are what ``read_files(context, files,
columns, residual)`` reads anywhere: the one read path of every format.
"""

from __future__ import annotations

from lakecore.expr.binding import Where, bind, parse_predicate
from lakecore.planning.explain import ScanExplain
from lakecore.planning.read import read_files
from lakecore.planning.scan import Scan
from lakecore.planning.tasks import FileRows, ScanContext, ScanTask, StatsPrecision

__all__ = [
    "FileRows",
    "Scan",
    "ScanContext",
    "ScanExplain",
    "ScanTask",
    "StatsPrecision",
    "Where",
    "bind",
    "parse_predicate",
    "read_files",
]
