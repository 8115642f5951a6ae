"""The file index of a Lance version: one row per fragment, in manifest order.

``path`` is the fragment's first data file and ``data_files`` all of them (each holds some of
the fields), ``size`` the first file's bytes, ``record_count`` the fragment's
``physical_rows`` (deleted rows included), and ``deletion`` the neutral struct (rows deleted
plus the deletion file's path as descriptor). ``min``/``max``/``null_count`` come from the
dataset's BTREE and ZONEMAP scalar indices where they cover a fragment
(``lakecore_lance.index_stats``); without them (no index, another column, a fragment the index
does not cover) the struct columns are absent or null: the fragment "might match".
"""

from __future__ import annotations

import pyarrow as pa

from lakecore.errors import CorruptTableError, UnsupportedFeatureError
from lakecore.model import files as fi
from lakecore.storage import Storage
from lakecore_lance.deletions import deletion_path, read_deleted
from lakecore_lance.index_stats import fragment_stats
from lakecore_lance.state import DATA_DIR, LanceState

FRAGMENT_ID = "fragment_id"
"""Lance-specific file-index column: the fragment's id."""


def build_file_index(storage: Storage, state: LanceState) -> pa.Table:
    """The file index of ``state``'s version (see the module docstring).

    Raises ``UnsupportedFeatureError`` for a file under another base path and
    ``CorruptTableError`` for a fragment without data files or a deletion file that does not
    say how many rows it deletes and cannot be read.
    """
    paths: list[str] = []
    sizes: list[int | None] = []
    counts: list[int | None] = []
    data_files: list[list[str]] = []
    deletions: list[dict[str, object] | None] = []
    ids: list[int] = []
    for fragment in state.manifest.fragments:
        if not fragment.files:
            raise CorruptTableError(
                f"fragment {fragment.id} of version {state.version} has no data files"
            )
        # Only paths and the first file's size: building each file's field lists
        # (state.data_file_info) was ~40% of the index of 1,000 fragments.
        files: list[str] = []
        for data_file in fragment.files:
            if data_file.HasField("base_id"):
                raise UnsupportedFeatureError(
                    "lance:base_paths",
                    f"fragment {fragment.id} has data file {data_file.path!r} under base path "
                    f"{data_file.base_id}; lakecore reads files under the dataset root only",
                )
            files.append(f"{DATA_DIR}/{data_file.path}")
        paths.append(files[0])
        sizes.append(int(fragment.files[0].file_size_bytes) or None)
        # 0: written before physical_rows existed (unknown here; the data files tell).
        counts.append(int(fragment.physical_rows) or None)
        data_files.append(files)
        ids.append(int(fragment.id))
        if fragment.HasField("deletion_file"):
            deletion = fragment.deletion_file
            if deletion.HasField("base_id"):
                raise UnsupportedFeatureError(
                    "lance:base_paths",
                    f"the deletion file of fragment {fragment.id} is under base path "
                    f"{deletion.base_id}; lakecore reads files under the dataset root only",
                )
            path = deletion_path(int(fragment.id), deletion)
            count = int(deletion.num_deleted_rows)
            if count == 0:
                # Writers before num_deleted_rows existed leave it 0: count the file itself.
                count = len(read_deleted(storage, path))
            deletions.append({fi.CARDINALITY: count, fi.DESCRIPTOR: path.encode()})
        else:
            deletions.append(None)
    columns: dict[str, pa.Array] = {
        fi.PATH: pa.array(paths, pa.string()),
        fi.SIZE: pa.array(sizes, pa.int64()),
        fi.RECORD_COUNT: pa.array(counts, pa.int64()),
        fi.MODIFICATION_TIME: pa.array([None] * len(paths), pa.int64()),
    }
    fields = list(fi.BASE_FIELDS)
    stats = fragment_stats(storage, state, ids)
    if stats is not None:
        for name, values in ((fi.MIN, stats.min), (fi.MAX, stats.max)):
            columns[name] = values
            fields.append(pa.field(name, values.type))
        columns[fi.NULL_COUNT] = stats.null_count
        fields.append(pa.field(fi.NULL_COUNT, stats.null_count.type))
    columns[fi.DELETION] = pa.array(deletions, fi.DELETION_TYPE)
    columns[fi.DATA_FILES] = pa.array(data_files, fi.DATA_FILES_TYPE)
    columns[FRAGMENT_ID] = pa.array(ids, pa.int64())
    fields += [
        pa.field(fi.DELETION, fi.DELETION_TYPE),
        pa.field(fi.DATA_FILES, fi.DATA_FILES_TYPE),
        pa.field(FRAGMENT_ID, pa.int64()),
    ]
    return pa.table(columns, schema=pa.schema(fields))
