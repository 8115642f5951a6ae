"""Column ranges of base files whose footers a Parquet reader cannot take at face value
(``lakecore_hudi.mdt.file_ranges``, which a write into a table with ``column_stats`` /
``partition_stats`` calls for every file it writes and for the partition's other files).

- a date bound after year 9999 (Python cannot hold it) is unknown: the write commits;
- a column chunk whose physical type is not its schema column's is ``CorruptTableError``
  (pyarrow aborts the process on such a chunk's statistics: run in a child process);
- string statistics that are not UTF-8 are ``CorruptTableError`` naming the file.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from lakecore_hudi.mdt.file_ranges import base_file_ranges

import lakecore
from lakecore.errors import CorruptTableError
from lakecore.storage import open_storage
from tests.hudi.write.helpers import copy_corpus_table
from tests.reliability.test_session8_attacks import _hudi_table_with_mistyped_chunk
from tests.reliability.test_session8_attacks_hudi import _invalid_utf8_table


def _base_file(root: Path) -> str:
    (base,) = [p for p in root.rglob("*.parquet") if ".hoodie" not in p.relative_to(root).parts]
    return str(base.relative_to(root))


def test_a_write_of_a_date_after_year_9999_commits_with_the_bound_unknown(
    tmp_path: Path,
) -> None:
    """The corpus table keeps ``column_stats`` and ``partition_stats`` of ``txn_date``."""
    root = copy_corpus_table("cow_v9_txns_simple_overwrite", tmp_path)
    table = lakecore.open(str(root))
    before = table.version
    full = table.to_arrow()
    data = full.drop_columns([c for c in full.column_names if c.startswith("_hoodie")])
    data = data.slice(0, 1)
    far_date = pa.array([5_000_000], pa.date32())  # days: the year ~15659
    for name, value in (("txn_date", far_date), ("txn_id", pa.array(["far"]))):
        data = data.set_column(data.column_names.index(name), data.schema.field(name), value)
    table.append(data)
    after = lakecore.open(str(root))
    assert after.version != before
    assert after.scan("txn_id = 'far'").to_arrow().num_rows == 1
    # The file's txn_date bounds are unknown to the metadata table: pruning keeps the file.
    assert after.scan("txn_date > DATE '9000-01-01'").to_arrow().num_rows == 1
    written = max(
        (p for p in root.rglob("*.parquet") if ".hoodie" not in p.relative_to(root).parts),
        key=lambda p: p.stat().st_mtime_ns,
    )
    (far,) = base_file_ranges(open_storage(str(root)), str(written.relative_to(root)), ["txn_date"])
    assert (far.min_value, far.max_value, far.null_count, far.value_count) == (None, None, 0, 1)


def test_a_mistyped_column_chunk_is_corrupt_table_error_not_an_abort(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _hudi_table_with_mistyped_chunk(root)
    code = (
        "from lakecore_hudi.mdt.file_ranges import base_file_ranges\n"
        "from lakecore.errors import CorruptTableError\n"
        "from lakecore.storage import open_storage\n"
        "try:\n"
        f"    base_file_ranges(open_storage({str(root)!r}), {_base_file(root)!r}, ['f'])\n"
        "    print('read')\n"
        "except CorruptTableError as exc:\n"
        "    print('corrupt', exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stdout.startswith("corrupt"), done.stdout
    assert _base_file(root).rsplit("/", 1)[-1] in done.stdout


def test_non_utf8_string_statistics_are_corrupt_table_error_naming_the_file(
    tmp_path: Path,
) -> None:
    root = tmp_path / "t"
    _invalid_utf8_table(root)
    path = _base_file(root)
    with pytest.raises(CorruptTableError, match=path.rsplit("/", 1)[-1]):
        base_file_ranges(open_storage(str(root)), path, ["s"])
    # The sound columns of the same file still read.
    (ids,) = base_file_ranges(open_storage(str(root)), path, ["id"])
    assert (ids.min_value, ids.max_value) == (1, 2)
