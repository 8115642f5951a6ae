"""Snapshot: one version of a table, the same shape for every format."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa

from lakecore.boundary import public_api
from lakecore.errors import StorageError
from lakecore.faults import storage_faults
from lakecore.format import SnapshotSource, TableFeatures

if TYPE_CHECKING:
    import pandas as pd

    from lakecore.expr.binding import Where
    from lakecore.planning.scan import Scan


@public_api
@dataclass(frozen=True, slots=True)
class Snapshot:
    """A table at one version.

    ``schema`` is the logical schema (field ids and physical names in field metadata,
    see ``lakecore.model.schema``). ``timestamp`` is epoch milliseconds. ``features`` says, in
    format-neutral terms, what the table uses (format version, named reader/writer features,
    merge-on-read); the format's own protocol record stays in its ``source``.
    """

    format: str
    version: int | str
    timestamp: int | None
    schema: pa.Schema
    partition_columns: tuple[str, ...]
    properties: dict[str, str]
    features: TableFeatures
    source: SnapshotSource = field(repr=False, compare=False)

    def files(self) -> pa.Table:
        """Return the file index: one row per live data file (see ``lakecore.model.files``).

        Raises ``StorageError`` when the storage fails.
        """
        with storage_faults(f"listing the files of version {self.version}", StorageError):
            return self.source.files()

    def scan(
        self,
        where: Where | None = None,
        columns: Sequence[str] | None = None,
        *,
        limit: int | None = None,
    ) -> Scan:
        """Plan a read of this snapshot's rows matching ``where`` (see ``Table.scan``)."""
        from lakecore.planning.scan import Scan

        return Scan(self, where, columns, limit=limit)

    def to_batches(
        self, columns: Sequence[str] | None = None, *, batch_size: int = 131_072
    ) -> Iterator[pa.RecordBatch]:
        """Yield the snapshot's rows as record batches in the logical schema.

        Streams with bounded memory: at most ``batch_size`` rows per batch (see
        ``Scan.to_batches``). Raises ``SchemaError`` for an unknown column,
        ``InvalidArgumentError`` for a bad ``batch_size``, ``StorageError`` (while iterating)
        when the storage fails.
        """
        # The one read path (``lakecore.planning.read.read_files``), as scans and Spark use.
        return self.scan(columns=columns).to_batches(batch_size)

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        """Export every row as an Arrow C stream (Arrow PyCapsule interface): ``pyarrow.table
        (snapshot)``, ``polars.DataFrame(snapshot)`` and DuckDB stream it batch by batch."""
        return self.scan().__arrow_c_stream__(requested_schema)

    def to_pandas(self, columns: Sequence[str] | None = None) -> pd.DataFrame:
        """Return the rows as a pandas DataFrame (``UnsupportedFeatureError`` without pandas)."""
        return self.scan(columns=columns).to_pandas()

    def head(self, n: int = 5, columns: Sequence[str] | None = None) -> pa.Table:
        """Return the first ``n`` rows, reading only the files needed for them."""
        return self.scan(columns=columns, limit=n).to_arrow()

    def count(self, where: Where | None = None) -> int:
        """Return how many rows match ``where`` (all rows by default), from the file index
        where it is exact (see ``Scan.count``)."""
        return self.scan(where).count()

    def to_arrow(self, columns: Sequence[str] | None = None) -> pa.Table:
        """Return all rows of the snapshot (row-level deletes applied) as one Arrow table.

        Example:
            >>> import lakecore
            >>> snap = lakecore.open("tests/data/people").snapshot()  # doctest: +SKIP
            >>> snap.to_arrow(columns=["name"]).num_rows  # doctest: +SKIP
            3
        """
        # One Scan checks ``columns`` once: an iterator of names (a generator) is read once.
        return self.scan(columns=columns).to_arrow()

    def output_schema(self, columns: Sequence[str] | None = None) -> pa.Schema:
        """Return the schema of ``to_arrow(columns)``; raises ``SchemaError`` on unknown names."""
        from lakecore.model.schema import checked_columns

        if columns is None:
            return self.schema
        return pa.schema([self.schema.field(c) for c in checked_columns(columns, self.schema)])
