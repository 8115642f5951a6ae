"""What a write did: ``WriteMetrics`` (counted by the writer that did it) and ``WriteResult``
(what every write of ``Table`` returns: the committed version plus the metrics).

The numbers are counts of what was actually written and committed, never estimates:

- ``files_added``/``bytes_added``: data files the commit publishes that were not live before
  (new files; for a restore, the files it brings back); ``files_removed``/``bytes_removed``:
  data files that stop being live (a Delta file that only gains a deletion vector stays live:
  it is neither; deletion-vector, change-data and log files are not data files).
- ``rows_inserted``: new rows (appended, overwriting, or inserted by a merge/upsert);
  ``rows_updated``/``rows_deleted``: rows changed/removed by the operation;
  ``rows_copied``: rows written again unchanged (copy-on-write rewrites of the files holding
  changed rows, the rows an overwrite keeps, the rows optimize/compaction rewrite).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, fields

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.model.files import DATA_FILES, PATH, RECORD_COUNT, SIZE


@dataclass(frozen=True, slots=True)
class WriteMetrics:
    """Counts of what one operation (or one transaction: the sum) wrote; see the module."""

    files_added: int = 0
    files_removed: int = 0
    rows_inserted: int = 0
    rows_updated: int = 0
    rows_deleted: int = 0
    rows_copied: int = 0
    bytes_added: int = 0
    bytes_removed: int = 0

    def __add__(self, other: WriteMetrics) -> WriteMetrics:
        return WriteMetrics(
            **{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)}
        )

    def with_rows(
        self, *, inserted: int = 0, updated: int = 0, deleted: int = 0, copied: int = 0
    ) -> WriteMetrics:
        """These file counts with the given row counts (a writer counts rows itself)."""
        return WriteMetrics(
            files_added=self.files_added,
            files_removed=self.files_removed,
            rows_inserted=int(inserted),
            rows_updated=int(updated),
            rows_deleted=int(deleted),
            rows_copied=int(copied),
            bytes_added=self.bytes_added,
            bytes_removed=self.bytes_removed,
        )

    def to_dict(self) -> dict[str, int]:
        """The counts by field name."""
        return asdict(self)


def file_metrics(
    added: Iterable[pa.Table], removed: Iterable[pa.Table], kept: Iterable[pa.Table] = ()
) -> WriteMetrics:
    """Files and bytes of file-index rows ``added`` and ``removed`` (their ``size`` column);
    a path of ``kept`` (a file that stays live, e.g. a Delta file given a deletion vector) or
    both removed and added counts in neither. Row counts are left at zero. Arrow compute
    throughout: an overwrite removes every file of a table that may have millions."""
    added_paths, added_sizes = _paths_and_sizes(added)
    removed_paths, removed_sizes = _paths_and_sizes(removed)
    kept_paths, _ = _paths_and_sizes(kept)
    new = _outside(added_paths, removed_paths, kept_paths)
    gone = _outside(removed_paths, added_paths, kept_paths)
    return WriteMetrics(
        files_added=_count_true(new),
        files_removed=_count_true(gone),
        bytes_added=_sum(added_sizes.filter(new)),
        bytes_removed=_sum(removed_sizes.filter(gone)),
    )


def _paths_and_sizes(tables: Iterable[pa.Table]) -> tuple[pa.Array, pa.Array]:
    """The ``path`` and ``size`` (0 when absent) columns of ``tables``, concatenated."""
    paths: list[pa.Array] = [pa.array([], pa.string())]
    sizes: list[pa.Array] = [pa.array([], pa.int64())]
    for t in tables:
        if t.num_rows == 0 or PATH not in t.column_names:
            continue
        paths.append(t.column(PATH).combine_chunks().cast(pa.string()))
        if SIZE in t.column_names:
            size = t.column(SIZE).combine_chunks().cast(pa.int64())
            sizes.append(pc.fill_null(size, 0))
        else:
            sizes.append(pa.repeat(pa.scalar(0, pa.int64()), t.num_rows))
    return pa.concat_arrays(paths), pa.concat_arrays(sizes)


def _outside(paths: pa.Array, *others: pa.Array) -> pa.Array:
    """Mask of ``paths`` in none of ``others``."""
    mask = pc.is_valid(paths)
    for other in others:
        if len(other):
            mask = pc.and_(mask, pc.invert(pc.is_in(paths, value_set=other)))
    return mask


def _count_true(mask: pa.Array) -> int:
    return int(pc.sum(mask.cast(pa.int64())).as_py() or 0)


def _sum(values: pa.Array) -> int:
    return int(pc.sum(values).as_py() or 0)


def record_count(files: pa.Table) -> int:
    """Rows in the files of ``files`` (their ``record_count``, before row-level deletes)."""
    if files.num_rows == 0 or RECORD_COUNT not in files.column_names:
        return 0
    return int(pc.sum(files.column(RECORD_COUNT)).as_py() or 0)


def index_change(before: pa.Table, after: pa.Table, size_of: Callable[[str], int]) -> WriteMetrics:
    """Files and bytes between two file indexes of one table (a rewrite that changed no row:
    compaction): every data file of ``before`` no longer read is removed, every one of
    ``after`` not read before is added, and the rows of the added units are copied.
    ``size_of(path)`` gives the size of a data file that is not a unit's ``path`` (the
    index holds only those sizes)."""
    old, new = _data_files(before), _data_files(after)
    gone = [p for p in old if p not in new]
    born = [p for p in new if p not in old]

    def size(files: dict[str, int | None], path: str) -> int:
        known = files[path]
        return int(known) if known is not None else size_of(path)

    added_units = after.filter(pc.invert(pc.is_in(after.column(PATH), before.column(PATH))))
    return WriteMetrics(
        files_added=len(born),
        files_removed=len(gone),
        rows_copied=record_count(added_units),
        bytes_added=sum(size(new, p) for p in born),
        bytes_removed=sum(size(old, p) for p in gone),
    )


def _data_files(index: pa.Table) -> dict[str, int | None]:
    """Every data file the index reads, with its size when the index has it (a unit's
    ``path``)."""
    out: dict[str, int | None] = {}
    paths = index.column(PATH).to_pylist()
    sizes = index.column(SIZE).to_pylist() if SIZE in index.column_names else [None] * len(paths)
    lists = (
        index.column(DATA_FILES).to_pylist()
        if DATA_FILES in index.column_names
        else [None] * len(paths)
    )
    for path, size, files in zip(paths, sizes, lists, strict=True):
        out[str(path)] = size
        for other in files or ():
            out.setdefault(str(other), None)
    return out


@dataclass(frozen=True, slots=True)
class WriteResult:
    """What a write returns: the version it committed and what it wrote.

    ``version`` is the committed version (a Hudi instant time is a ``str``); when the
    operation changed nothing and committed nothing, the table's current version.
    ``operation`` is the operation recorded in the table's history (``"WRITE"``,
    ``"DELETE"``, ``"MERGE"``, ...). ``seconds``: wall time of the whole operation, from
    its start to the commit. The counts are ``WriteMetrics``' (``lakecore.model.metrics``).

    Example:
        >>> import tempfile, lakecore, pyarrow as pa
        >>> table = lakecore.create(tempfile.mkdtemp(), pa.schema([("x", pa.int64())]))
        >>> result = table.append(pa.table({"x": [1, 2, 3]}))
        >>> result.version, result.rows_inserted, result.files_added
        (1, 3, 1)
    """

    version: int | str
    operation: str
    files_added: int = 0
    files_removed: int = 0
    rows_inserted: int = 0
    rows_updated: int = 0
    rows_deleted: int = 0
    rows_copied: int = 0
    bytes_added: int = 0
    bytes_removed: int = 0
    seconds: float = 0.0
    committed: bool = True
    """False when the operation found nothing to change and made no commit."""

    @classmethod
    def of(
        cls,
        version: int | str,
        operation: str,
        metrics: WriteMetrics,
        seconds: float,
        committed: bool = True,
    ) -> WriteResult:
        """The result of committing ``version`` with ``metrics``."""
        return cls(version, operation, **metrics.to_dict(), seconds=seconds, committed=committed)

    @property
    def metrics(self) -> WriteMetrics:
        """The counts alone."""
        return WriteMetrics(**{f.name: getattr(self, f.name) for f in fields(WriteMetrics)})

    def to_dict(self) -> dict[str, int | str | float | bool]:
        """Every field by name (JSON-ready)."""
        return asdict(self)


__all__ = [
    "WriteMetrics",
    "WriteResult",
    "file_metrics",
    "index_change",
    "record_count",
]
