"""Data-driven conformance suite: lakecore against the real tables of the shared corpus.

The corpus (``../shared/corpus``, see its README.md) holds Delta, Hudi and Lance tables copied
from the projects' own test suites, with the answers of the reference readers in
``expected/<format dir>/<table>.json``. One *case* is one table. For every case the runner opens
the table with ``lakecore.open`` and checks, version by version, the latest version, the
normalized schema, the row count, the order-independent row digest (the corpus's own
``digest.py``) and the number of live files.

Tables the reference reader could not load (``oracle_error``) pass when lakecore either reads
them or refuses them with a typed ``LakecoreError``; ``delta-bad/`` tables follow their
``expect`` field (``error`` / ``ok`` / ``unspecified``). A raw Python exception (``KeyError``,
``ArrowInvalid``, ...) is always a failure. A few per-table expectations taken from the
corpus's ``notes`` live in ``conformance/overrides.py``.

Command line (prints one line per table and ends with ``N passed, M failed``; exit 1 on any
failure)::

    python -m conformance [--corpus PATH] [--format delta|hudi|lance] [--table SUBSTRING]
                          [--verbose]

The corpus defaults to ``$LAKECORE_CORPUS``, else ``../shared/corpus`` next to the repository.

Under pytest (``pytest conformance``) every table is one test; the formats run are those in
``$LAKECORE_CONFORMANCE_FORMATS`` (comma separated, default ``delta``, which includes
``delta-bad/``). A missing corpus fails the run; it is never skipped.
"""

from __future__ import annotations
