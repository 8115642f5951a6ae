"""The ``lakecore`` command: look at, maintain and migrate any table lakecore can open.

Conventions every command follows:

- Time travel is ``--as-of-version N`` / ``--as-of-timestamp TS`` (Spark's ``versionAsOf`` /
  ``timestampAsOf``, Iceberg's ``as-of-timestamp``), never ``--version``, which is the program's.
- ``--json`` prints one JSON document on stdout (``lakecore.cli.render``); progress and errors
  go to stderr.
- An error is one line on stderr, ``error: ClassName: message``, and exit code 1, no traceback
  (set ``LAKECORE_TRACEBACK=1`` to get it); usage errors keep click's exit code 2.
"""

from __future__ import annotations

from lakecore.cli.base import app

# Importing the command modules registers their commands on ``app``.
from lakecore.cli import maintenance, reading  # noqa: F401  isort: skip


def main() -> None:
    """Entry point of the ``lakecore`` script (errors: one line, exit code 1)."""
    app(prog_name="lakecore")


__all__ = ["app", "main"]
