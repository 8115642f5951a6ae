"""The file index: one Arrow table per snapshot, one row per live data file.

Columns every format fills (absent information is null):

- ``path`` (string): where the file is, relative to the table root or an absolute URI; decoded
  (no URL escapes).
- ``size`` (int64): bytes. ``record_count`` (int64): rows in the file, before row-level deletes;
  exact or null: ``count()``/``head`` add it up (minus ``deletion.cardinality``) without
  reading, so a row whose live rows only reading decides (a Hudi slice with log files)
  must leave it null.
- ``modification_time`` (int64): epoch milliseconds.
- ``partition`` (struct): one typed child per partition column, by logical name.
- ``min``, ``max``, ``null_count`` (struct): per-column statistics by logical name; nested
  columns are nested structs. A null value means "unknown", never "no value".

- ``deletion`` (struct ``DELETION_TYPE``, null when the row has no row-level deletes):
  ``cardinality`` (int64, rows deleted) and ``descriptor`` (binary), the format's own opaque
  description of the deletes (Delta: its deletion-vector descriptor). Only the format decodes
  it: ``TableFormat.deleted_positions`` answers which row positions are deleted.
- ``data_files`` (list<string>, optional): every data file the row is read from, in the
  format's reading order, ``path`` first; null or absent means ``path`` alone. A row is one
  unit of reading: a Hudi file slice lists its base file then its log files in merge order (a
  log-only slice: its log files, ``path`` the first), a Lance fragment its data files (each
  holding some of the fields). ``size`` and ``record_count`` are those of ``path`` (for a Hudi
  slice, of its base file; ``record_count`` null when it has log files).

The write layout (``AddFiles`` rows, what ``DataFileWriter.write`` returns) is the same with
the stats typed by ``lakecore.model.stats`` (``stats_types``: exact bounds of the data columns,
no format encoding such as Delta's ``stats`` JSON; the format renders its own at commit), and
``partition`` holding the typed values of the file's partition.
"""

from __future__ import annotations

import pyarrow as pa

PATH = "path"
SIZE = "size"
RECORD_COUNT = "record_count"
MODIFICATION_TIME = "modification_time"
PARTITION = "partition"
MIN = "min"
MAX = "max"
NULL_COUNT = "null_count"
DELETION = "deletion"
CARDINALITY = "cardinality"
DESCRIPTOR = "descriptor"
DELETION_TYPE = pa.struct([(CARDINALITY, pa.int64()), (DESCRIPTOR, pa.binary())])
"""The neutral ``deletion`` column: rows deleted plus the format's opaque descriptor."""
DATA_FILES = "data_files"
DATA_FILES_TYPE = pa.list_(pa.string())

FILE_COLUMNS = (PATH, SIZE, RECORD_COUNT, MODIFICATION_TIME, PARTITION, MIN, MAX, NULL_COUNT)
"""The columns describing one data file with its typed stats: what an index row keeps when
it is published again (a re-added or adopted file), without its deletes or reading list."""

BASE_FIELDS: tuple[pa.Field, ...] = (
    pa.field(PATH, pa.string(), nullable=False),
    pa.field(SIZE, pa.int64()),
    pa.field(RECORD_COUNT, pa.int64()),
    pa.field(MODIFICATION_TIME, pa.int64()),
)


def live_record_count(files: pa.Table) -> int:
    """Rows in the index's files after row-level deletes (files without a count are skipped)."""
    import pyarrow.compute as pc

    total = pc.sum(files.column(RECORD_COUNT)).as_py() or 0
    if DELETION in files.column_names:
        deleted = pc.sum(pc.struct_field(files.column(DELETION), CARDINALITY)).as_py() or 0
        total -= deleted
    return int(total)
