"""Per-file column statistics from Parquet footers: the fallback when there is no metadata table.

Each data file's footer holds, per row group and leaf column, a null count and min/max; the
core stats module (``lakecore.model.stats.footers_stats_columns``) combines them into typed
``min``/``max``/``null_count`` struct columns, one row per file (the file-index layout,
children following the table schema), keeping a statistic only when it is sound for the whole file
(``lakecore.model.parquet_footer``). Floating-point bounds are kept even from writers that
leave NaN out of min/max (the default ``StatsRules``): lakecore's planner assumes a float
column may hold NaN whatever its bounds say. Pyarrow's Statistics already refuse the
statistics Parquet writers are known to get wrong (binary min/max from old parquet-mr, INT96
timestamps). Files that are not Parquet (Lance or ORC base files) get a row of unknowns.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from lakecore.model import files as fi
from lakecore.model.footers import FOOTER_READERS, Footers
from lakecore.model.stats import footers_stats_columns
from lakecore.storage import Storage

__all__ = ["FOOTER_READERS", "footer_stats"]


def footer_stats(
    storage: Storage, paths: Sequence[str], schema: pa.Schema, footers: Footers | None = None
) -> pa.Table:
    """Statistics of the data files ``paths`` from their Parquet footers, read in threads.

    Args:
        storage: Storage the paths are relative to (absolute URIs work too).
        paths: Data files; rows come back in this order.
        schema: The table schema: struct children follow it (lists and maps left out).
        footers: The memo to read the footers through (and leave them in), e.g. a
            snapshot's; a new one of ``storage`` when None.

    Returns:
        Columns ``path`` (string), ``record_count`` (int64, the footer's row count) and
        ``min``, ``max``, ``null_count`` structs; unknown values are null. Non-Parquet files
        (by extension) get nulls throughout.

    Raises:
        CorruptTableError: a ``.parquet`` file has no readable footer (names the file).
        FileNotFoundError: a file does not exist.
    """
    memo = footers if footers is not None else Footers(storage)
    parquet = [p for p in paths if _is_parquet(p)]
    read = iter(memo.read_many(parquet))
    metas = [next(read) if _is_parquet(p) else None for p in paths]
    table: dict[str, pa.Array] = {
        fi.PATH: pa.array(list(paths), pa.string()),
        fi.RECORD_COUNT: pa.array(
            [m.num_rows if m is not None else None for m in metas], pa.int64()
        ),
    }
    # Column-wise over all files (one Arrow array per leaf), not one struct row per file.
    table.update(footers_stats_columns(metas, list(schema)))
    return pa.table(table)


def _is_parquet(path: str) -> bool:
    return path.lower().endswith(".parquet")


def _read_footer(storage: Storage, path: str) -> pq.FileMetaData | None:
    """The footer of data file ``path`` (None when it is not Parquet); raises as
    ``footer_stats``."""
    if not _is_parquet(path):
        return None
    return Footers(storage).get(path)
