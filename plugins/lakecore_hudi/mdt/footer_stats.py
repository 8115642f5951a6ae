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

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq

from lakecore.errors import CorruptTableError, StorageError
from lakecore.faults import open_input
from lakecore.model import files as fi
from lakecore.model.stats import footers_stats_columns
from lakecore.storage import Storage

__all__ = ["FOOTER_READERS", "footer_stats"]

FOOTER_READERS = 8
"""Footers read at once (each is a few KB near the end of its file)."""


def footer_stats(storage: Storage, paths: Sequence[str], schema: pa.Schema) -> pa.Table:
    """Statistics of the data files ``paths`` from their Parquet footers, read in threads.

    Args:
        storage: Storage the paths are relative to (absolute URIs work too).
        paths: Data files; rows come back in this order.
        schema: The table schema: struct children follow it (lists and maps left out).

    Returns:
        Columns ``path`` (string), ``record_count`` (int64, the footer's row count) and
        ``min``, ``max``, ``null_count`` structs; unknown values are null. Non-Parquet files
        (by extension) get nulls throughout.

    Raises:
        CorruptTableError: a ``.parquet`` file has no readable footer (names the file).
        FileNotFoundError: a file does not exist.
    """
    with ThreadPoolExecutor(FOOTER_READERS) as pool:
        footers = list(pool.map(lambda p: _read_footer(storage, p), paths))
    table: dict[str, pa.Array] = {
        fi.PATH: pa.array(list(paths), pa.string()),
        fi.RECORD_COUNT: pa.array(
            [m.num_rows if m is not None else None for m in footers], pa.int64()
        ),
    }
    # Column-wise over all files (one Arrow array per leaf), not one struct row per file.
    table.update(footers_stats_columns(footers, list(schema)))
    return pa.table(table)


def _read_footer(storage: Storage, path: str) -> pq.FileMetaData | None:
    if not path.lower().endswith(".parquet"):
        return None
    try:
        with open_input(storage, path, "base file") as f:
            return pq.read_metadata(pa.BufferReader(_footer_bytes(f)))
    except (FileNotFoundError, StorageError):
        raise
    except (pa.ArrowInvalid, OSError) as exc:
        raise CorruptTableError(f"{path}: not a readable Parquet file ({exc})") from exc


def _footer_bytes(f: BinaryIO) -> bytes:
    """A minimal Parquet file holding only ``f``'s footer: ``PAR1`` + footer + length + ``PAR1``.

    Reads exactly the footer (pyarrow's own reader takes the last 64 KiB of every file, most
    of a small file: a planner reading hundreds of footers read half the table). Raises
    ``pa.ArrowInvalid`` when ``f`` does not end like a plain Parquet file.
    """
    size = f.seek(0, os.SEEK_END)
    if size < 12:
        raise pa.ArrowInvalid(f"{size} bytes is too small for a Parquet file")
    f.seek(size - 8)
    trailer = f.read(8)
    length = int.from_bytes(trailer[:4], "little")
    if trailer[4:] != b"PAR1" or length > size - 12:
        raise pa.ArrowInvalid("no plain Parquet footer at the end of the file")
    f.seek(size - 8 - length)
    return b"PAR1" + f.read(length + 8)
