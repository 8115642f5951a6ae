"""Delta data files written outside the driver: the ``DataFileWriter`` of a distributed write.

``DeltaWriter.file_writer`` makes one per write (``lakecore.spark.write`` ships it to Spark
executors). Each ``write`` call checks its rows exactly as ``Table.append`` does (generated
columns, types, NOT NULL, CHECK constraints and invariants, and for an overwrite with
``where`` that every row matches it) and writes them with the same code
(``write_data_files``: Hive partition directories, physical names under column mapping,
typed stats), below the write's own directory ``write-<uuid>/`` of the table root. Delta
paths are relative to the root at any depth, so the files are committed where they are, and
a write that does not commit is undone by deleting that one directory.
"""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import ConstraintViolationError
from lakecore.expr.evaluate import evaluate_predicate
from lakecore.storage import Storage, open_storage
from lakecore_delta.write.constraints import check_rows, fill_generated
from lakecore_delta.write.data_files import FileLayout, write_data_files
from lakecore_delta.write.data_in import conform_to_schema

log = logging.getLogger(__name__)
WRITE_DIRECTORY_PREFIX = "write-"
"""Directories of distributed writes under the table root: ``write-<uuid>``."""


def new_write_directory() -> str:
    """A fresh directory name for one distributed write's files."""
    return f"{WRITE_DIRECTORY_PREFIX}{uuid.uuid4().hex}"


@dataclass(frozen=True, slots=True)
class DeltaFileWriter:
    """Writes rows as Delta data files of one planned write (picklable; see module doc)."""

    table_uri: str
    layout: FileLayout
    """The table's layout, ``prefix`` the write's own directory."""
    constraints: dict[str, str]
    generated: dict[str, str]
    where: str | None = None
    storage_options: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def schema(self) -> pa.Schema:
        """The columns ``write`` takes: every column of the table."""
        return self.layout.schema

    def storage(self) -> Storage:
        """The table's storage, opened from the URI and options (works in any process)."""
        return open_storage(self.table_uri, self.storage_options)

    def checked(self, rows: pa.Table) -> pa.Table:
        """``rows`` conformed to the table and checked as ``Table.append`` checks them.

        Raises ``SchemaError`` or ``ConstraintViolationError`` (rows outside ``where`` too).
        """
        table = fill_generated(rows, self.generated, verify=True)
        table = conform_to_schema(table, self.layout.schema)
        check_rows(table, self.constraints)
        if self.where is not None:
            outside = pc.invert(pc.fill_null(evaluate_predicate(self.where, table), False))
            count = int(pc.sum(outside.cast(pa.int64())).as_py() or 0)
            if count:
                raise ConstraintViolationError(
                    f"{count} new row(s) do not match where={self.where!r}"
                )
        return table

    def write(self, rows: pa.Table, task: int) -> pa.Table:
        """Write ``rows`` as data files below the write's directory; return their index rows
        (write layout). File names are random UUIDs, so ``task`` only identifies the caller."""
        return write_data_files(self.storage(), self.layout, self.checked(rows))

    def discard(self) -> None:
        """Delete the write's directory (best effort: a failure is logged, vacuum removes
        what stays)."""
        storage = self.storage()
        try:
            if "://" not in storage.root:  # a local directory: its empty folders go too
                shutil.rmtree(os.path.join(storage.root, self.layout.prefix), ignore_errors=True)
                return
            for info in storage.list_all(self.layout.prefix):
                storage.delete(info.path)
        except FileNotFoundError:
            return
        except OSError:
            log.warning("could not remove the files of a failed write in %s", self.layout.prefix)
