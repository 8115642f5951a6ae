"""Hudi base files written outside the driver: the ``DataFileWriter`` of a distributed write.

``HudiWriter.file_writer`` claims the write's instant first (requested, then an inflight file
with an empty workload; its heartbeat is kept alive by the driver) and returns a
``HudiFileWriter`` holding that instant. Each ``write`` call (one per Spark task) checks its
rows as ``Table.append`` does, renders their record keys and partition paths, and writes one
new file group per partition path it holds: a base file
``<fileId>_<task>-<stage>-0_<instant>.parquet`` (``.lance`` on a Lance table) in the file
schema (meta columns first), plus the partition's ``.hoodie_partition_metadata``. A failed
write is rolled back like any failed Hudi write: the rollback lists the base files named with
the instant.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import ConstraintViolationError
from lakecore.expr.evaluate import evaluate_predicate
from lakecore.model import files as fi
from lakecore.model.stats import data_stats, stats_columns
from lakecore.storage import Storage, open_storage
from lakecore_hudi.names import base_file_name, new_file_id, write_token
from lakecore_hudi.write.files_out import (
    join_path,
    new_records,
    write_base_file,
    write_partition_metadata,
)
from lakecore_hudi.write.lance_base import base_file_extension
from lakecore_hudi.write.layout import WriteLayout
from lakecore_hudi.write.rows_in import KEY, PARTITION, conform, keyed

ROWS_PER_TASK_INDEX = 10_000
"""Files of one task are numbered ``task * ROWS_PER_TASK_INDEX + n`` in their sequence numbers."""


@dataclass(frozen=True, slots=True)
class HudiFileWriter:
    """Writes rows as new file groups of one claimed instant (picklable; see module doc)."""

    table_uri: str
    layout: WriteLayout
    instant: str
    action: str
    operation: str
    where: str | None = None
    storage_options: dict[str, Any] = field(default_factory=dict, repr=False)
    mode: str = "append"
    """What ``HudiWriter.file_writer`` planned: ``append``, ``overwrite`` or ``replace``."""

    @property
    def schema(self) -> pa.Schema:
        """The columns ``write`` takes: the data columns (meta columns are filled here)."""
        return self.layout.data_schema

    def storage(self) -> Storage:
        """The table's storage, opened from the URI and options (works in any process)."""
        return open_storage(self.table_uri, self.storage_options)

    def checked(self, rows: pa.Table) -> pa.Table:
        """``rows`` conformed to the data schema, with their record keys and partition paths
        (``rows_in.keyed``); raises ``SchemaError``/``ConstraintViolationError``."""
        table = keyed(conform(rows, self.layout.data_schema), self.layout)
        if self.where is not None and table.num_rows:
            outside = pc.invert(pc.fill_null(evaluate_predicate(self.where, table), False))
            count = int(pc.sum(outside.cast(pa.int64())).as_py() or 0)
            if count:
                raise ConstraintViolationError(
                    f"{count} new row(s) do not match the overwrite predicate {self.where!r}"
                )
        return table

    def write(self, rows: pa.Table, task: int) -> pa.Table:
        """Write ``rows`` as one new file group per partition path; return the base files'
        index rows (write layout: typed partition values and stats of the data columns)."""
        table = self.checked(rows)
        storage = self.storage()
        layout = self.layout
        stage = int(self.instant[-9:])
        data_fields = list(layout.data_schema)
        part_fields = [layout.data_schema.field(c) for c in layout.partition_fields]
        paths, sizes, counts, partitions, stats = [], [], [], [], []
        ext = base_file_extension(layout.config)
        groups = sorted(pc.unique(table.column(PARTITION)).to_pylist()) if table.num_rows else []
        for n, partition in enumerate(groups):
            part = table.filter(pc.equal(table.column(PARTITION), partition))
            name = base_file_name(new_file_id(), write_token(task, stage, 0), self.instant, ext)
            write_partition_metadata(storage, partition, self.instant)
            records = new_records(
                part,
                part.column(KEY),
                partition,
                self.instant,
                task * ROWS_PER_TASK_INDEX + n,
                name,
                layout,
            )
            path = join_path(partition, name)
            sizes.append(write_base_file(storage, path, records))
            paths.append(path)
            counts.append(part.num_rows)
            partitions.append({f.name: part.column(f.name)[0].as_py() for f in part_fields})
            stats.append(data_stats(part, data_fields))
        now = int(time.time() * 1000)
        columns: dict[str, pa.Array] = {
            fi.PATH: pa.array(paths, pa.string()),
            fi.SIZE: pa.array(sizes, pa.int64()),
            fi.RECORD_COUNT: pa.array(counts, pa.int64()),
            fi.MODIFICATION_TIME: pa.array([now] * len(paths), pa.int64()),
            fi.PARTITION: pa.array(
                partitions, pa.struct([pa.field(f.name, f.type) for f in part_fields])
            ),
        }
        columns.update(stats_columns(stats, data_fields))
        return pa.table(columns)
