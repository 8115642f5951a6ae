"""Reading one file slice: its base file, merged with its log files unless read-optimized."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pyarrow as pa

from lakecore.storage import Storage
from lakecore_hudi.base_files import base_file_format, iter_base_file, read_base_file
from lakecore_hudi.conform import conform
from lakecore_hudi.merge import MergeSpec, merge_slice
from lakecore_hudi.merge_many import merge_slices
from lakecore_hudi.names import is_log_file
from lakecore_hudi.parallel import gather, submit_chunks

BASE_READERS = 4
"""Threads reading the base files of a batch of merged slices (``read_merged``)."""


@dataclass(frozen=True, slots=True)
class SliceReader:
    """Reads slices of one snapshot.

    ``table_schema`` is every column of the table (meta fields included when the table has
    them: merging needs record keys); ``is_valid_instant`` says which log blocks are part of
    the snapshot; ``read_optimized`` skips log files.
    """

    storage: Storage
    table_schema: pa.Schema
    spec: MergeSpec
    is_valid_instant: Callable[[str], bool]
    read_optimized: bool = False

    def read(
        self, base_path: str | None, log_paths: Sequence[str], columns: Sequence[str]
    ) -> pa.Table:
        """Return the live rows of a slice with ``columns`` (names of ``table_schema``)."""
        merging = bool(log_paths) and not self.read_optimized
        wanted = self.table_schema.names if merging else list(columns)
        base = self._base(base_path, wanted)
        if not merging:
            return base.select(list(columns))
        from lakecore_hudi.log.scanner import read_log_records

        records = read_log_records(
            self.storage, list(log_paths), self.table_schema, self.is_valid_instant
        )
        merged = merge_slice(base, records.data, records.deletes, self.spec)
        return merged.select(list(columns))

    def read_merged(
        self, slices: Sequence[tuple[str | None, Sequence[str]]], columns: Sequence[str]
    ) -> list[pa.Table]:
        """``read`` of each ``(base_path, log_paths)`` (every one with log files, not
        read-optimized), computed together: one log decoding per writer schema and one merge
        for all of them (``merge_many``), so many small slices do not each pay the fixed
        costs. Same rows, same order, as ``read`` one by one."""
        from lakecore_hudi.log.scanner import read_slices_log_records

        paths = [base_path for base_path, _ in slices]
        # Base files are read on other threads while this one reads and decodes the logs.
        with ThreadPoolExecutor(BASE_READERS, thread_name_prefix="lakecore-hudi") as pool:
            pending = submit_chunks(pool, self._read_raw, paths, BASE_READERS)
            records = read_slices_log_records(
                self.storage, [list(logs) for _, logs in slices], self.table_schema,
                self.is_valid_instant,
            )  # fmt: skip
            bases = self._conformed(gather(pending))
        parts = [(b, r.data, r.deletes) for b, r in zip(bases, records, strict=True)]
        return [rows.select(list(columns)) for rows in merge_slices(parts, self.spec)]

    def read_pieces(
        self, base_path: str | None, log_paths: Sequence[str], columns: Sequence[str]
    ) -> Iterator[pa.Table]:
        """The rows of ``read`` in order, in pieces: a slice read without merging from a
        Parquet base file streams (bounded memory); a merged slice (log files) or a Lance
        base file comes as one piece, since merging by key needs the whole slice."""
        merging = bool(log_paths) and not self.read_optimized
        if (
            merging
            or base_path is None
            or is_log_file(base_path)
            or base_file_format(base_path) != "PARQUET"
        ):
            yield self.read(base_path, log_paths, columns)
            return
        schema = pa.schema([self.table_schema.field(c) for c in columns])
        pieces = 0
        for raw in iter_base_file(self.storage, base_path, columns):
            pieces += 1
            yield conform(raw, schema)
        if not pieces:  # none of the columns is in the file: read() gives its rows (nulls)
            yield self.read(base_path, log_paths, columns)

    def _read_raw(self, path: str | None) -> pa.Table | None:
        """A base file's rows as stored (None for no base file or a log file)."""
        if path is None or is_log_file(path):
            return None
        return read_base_file(self.storage, path, self.table_schema.names)

    def _conformed(self, raw: Sequence[pa.Table | None]) -> list[pa.Table]:
        """Each of ``raw`` (``_read_raw``'s) in ``table_schema`` (empty for None); tables of
        one schema are conformed together (one call, not one each)."""
        schema = self.table_schema
        present = [t for t in raw if t is not None]
        if not present or any(t.schema != present[0].schema for t in present):
            return [schema.empty_table() if t is None else conform(t, schema) for t in raw]
        together = conform(pa.concat_tables(present), schema)
        out, start = [], 0
        for t in raw:
            if t is None:
                out.append(schema.empty_table())
                continue
            out.append(together.slice(start, t.num_rows))
            start += t.num_rows
        return out

    def _base(self, path: str | None, columns: Sequence[str]) -> pa.Table:
        schema = pa.schema([self.table_schema.field(c) for c in columns])
        if path is None or is_log_file(path):
            return schema.empty_table()
        raw = read_base_file(self.storage, path, columns)
        return conform(raw, schema)
