"""Lance data files written outside the driver: the ``DataFileWriter`` of a distributed write
(``lakecore.spark.write`` ships it to Spark executors).

Each ``write`` call checks its rows as ``Table.append`` does (and, for an overwrite with
``where``, that every row matches it) and writes them as fragments' data files named
``data/{write id}-{uuid}.lance``; it returns one write-layout row per file (path, size,
rows). ``LanceWriter.add_files`` turns the rows into fragments of the commit (the field ids,
column indices and file version follow from the dataset's fields and data storage version,
which the file writer carries), and ``discard`` deletes every file with the write's prefix.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import ConstraintViolationError
from lakecore.expr.evaluate import evaluate_predicate
from lakecore.model import files as fi
from lakecore.storage import Storage, open_storage
from lakecore_lance.proto import file_pb2, table_pb2
from lakecore_lance.state import DATA_DIR
from lakecore_lance.write.fields import column_ids
from lakecore_lance.write.files_out import WRITABLE_DATA_VERSIONS, write_fragments


def new_write_id() -> str:
    """A fresh prefix for one distributed write's data files."""
    return f"w{uuid.uuid4().hex[:16]}-"


@dataclass(frozen=True, slots=True)
class LanceDataFileWriter:
    """Writes rows as Lance data files of one planned write (picklable; see module doc)."""

    table_uri: str
    table_schema: pa.Schema
    fields: bytes
    """The dataset's fields (a serialized ``file.Schema``)."""
    data_version: str
    prefix: str
    where: str | None = None
    storage_options: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def schema(self) -> pa.Schema:
        """The columns ``write`` takes: every column of the dataset."""
        return self.table_schema

    def storage(self) -> Storage:
        """The dataset's storage, opened from the URI and options (works in any process)."""
        return open_storage(self.table_uri, self.storage_options)

    def field_list(self) -> list[file_pb2.Field]:
        schema = file_pb2.Schema()
        schema.ParseFromString(self.fields)
        return list(schema.fields)

    def write(self, rows: pa.Table, task: int) -> pa.Table:
        """Write ``rows`` as data files (one per 1,048,576 rows); returns their write-layout
        rows. Raises ``SchemaError``/``ConstraintViolationError`` before writing any file."""
        from lakecore_lance.write.rows_in import conform

        table = conform(rows, self.table_schema)
        if self.where is not None:
            outside = pc.invert(pc.fill_null(evaluate_predicate(self.where, table), False))
            count = int(pc.sum(outside.cast(pa.int64())).as_py() or 0)
            if count:
                raise ConstraintViolationError(
                    f"{count} new row(s) do not match where={self.where!r}"
                )
        storage = self.storage()
        out = write_fragments(
            storage, self.field_list(), self.data_version, table, prefix=f"{self.prefix}{task}-"
        )
        fragments = [table_pb2.DataFragment.FromString(raw) for raw in out.fragments]
        return pa.table(
            {
                fi.PATH: pa.array(out.paths, pa.string()),
                fi.SIZE: pa.array([int(f.files[0].file_size_bytes) for f in fragments], pa.int64()),
                fi.RECORD_COUNT: pa.array([int(f.physical_rows) for f in fragments], pa.int64()),
                fi.MODIFICATION_TIME: pa.array([None] * len(fragments), pa.int64()),
            },
            schema=pa.schema(list(fi.BASE_FIELDS)),
        )

    def fragments(self, files: pa.Table) -> tuple[bytes, ...]:
        """The new fragments (ids unassigned) of the data files ``write`` returned."""
        major, minor = WRITABLE_DATA_VERSIONS[self.data_version]
        leaves = column_ids(self.field_list(), self.data_version)
        out = []
        for path, size, count in zip(
            files.column(fi.PATH).to_pylist(),
            files.column(fi.SIZE).to_pylist(),
            files.column(fi.RECORD_COUNT).to_pylist(),
            strict=True,
        ):
            if not str(path).startswith(f"{DATA_DIR}/{self.prefix}"):
                raise ValueError(f"{path} was not written by this write")
            data_file = table_pb2.DataFile(
                path=str(path)[len(DATA_DIR) + 1 :],
                fields=leaves,
                column_indices=list(range(len(leaves))),
                file_major_version=major,
                file_minor_version=minor,
                file_size_bytes=int(size),
            )
            fragment = table_pb2.DataFragment(files=[data_file], physical_rows=int(count))
            out.append(fragment.SerializeToString(deterministic=True))
        return tuple(out)

    def discard(self) -> None:
        """Delete every data file of this write; idempotent."""
        storage = self.storage()
        try:
            listed = storage.list_dir(DATA_DIR)
        except FileNotFoundError:
            return
        for info in listed:
            if info.path.rsplit("/", 1)[-1].startswith(self.prefix):
                storage.delete(f"{DATA_DIR}/{info.path.rsplit('/', 1)[-1]}")
