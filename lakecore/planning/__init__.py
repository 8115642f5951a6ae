"""The stats-pruning scan planner shared by every format (see ``docs/planning.md``).

``Table.scan(where, columns)`` / ``Snapshot.scan`` build a ``Scan``; its ``tasks()`` are
picklable ``ScanTask``s that ``read_tasks(context, tasks, columns)`` reads anywhere.
"""

from __future__ import annotations

from lakecore.expr.binding import Where, bind, parse_predicate
from lakecore.planning.explain import ScanExplain
from lakecore.planning.read import read_tasks
from lakecore.planning.scan import Scan
from lakecore.planning.tasks import ScanContext, ScanTask, StatsPrecision

__all__ = [
    "Scan",
    "ScanContext",
    "ScanExplain",
    "ScanTask",
    "StatsPrecision",
    "Where",
    "bind",
    "parse_predicate",
    "read_tasks",
]
