"""Unit fingerprints and diffs: a changed delete, data file or count is a new unit."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.migrate.units import diff, fingerprints
from lakecore.model import files as fi


def _index(
    paths: list[str],
    descriptors: list[bytes | None] | None = None,
    data_files: list[list[str] | None] | None = None,
    counts: list[int] | None = None,
) -> pa.Table:
    n = len(paths)
    deletion = pa.array(
        [
            None if d is None else {fi.CARDINALITY: 1, fi.DESCRIPTOR: d}
            for d in (descriptors or [None] * n)
        ],
        fi.DELETION_TYPE,
    )
    return pa.table(
        {
            fi.PATH: pa.array(paths, pa.string()),
            fi.RECORD_COUNT: pa.array(counts or [10] * n, pa.int64()),
            fi.DELETION: deletion,
            fi.DATA_FILES: pa.array(data_files or [None] * n, fi.DATA_FILES_TYPE),
        }
    )


def test_fingerprints_differ_by_every_part() -> None:
    base = _index(
        ["a", "a", "a", "a", "b"],
        [None, b"dv1", None, None, None],
        [None, None, ["a", "log1"], None, None],
        [10, 10, 10, 11, 10],
    )
    keys = fingerprints(base).to_pylist()
    assert len(set(keys)) == 5


def test_fingerprints_are_stable() -> None:
    a = _index(["x/1.parquet", "y"], [b"\x00\xff", None])
    b = _index(["x/1.parquet", "y"], [b"\x00\xff", None])
    assert fingerprints(a).equals(fingerprints(b))


def test_diff_finds_added_and_gone_units() -> None:
    before = _index(["a", "b", "c"])
    held = fingerprints(before)
    after = _index(["a", "b", "d"], [None, b"dv", None])
    d = diff(after, held)
    assert d.added.column(fi.PATH).to_pylist() == ["b", "d"]
    gone = set(d.gone.to_pylist())
    assert gone == {held[1].as_py(), held[2].as_py()}
    assert pc.all(pc.is_in(d.added_keys, value_set=fingerprints(after))).as_py()


def test_diff_against_nothing_adds_everything() -> None:
    after = _index(["a", "b"])
    d = diff(after, pa.array([], pa.binary()))
    assert d.added.num_rows == 2 and len(d.gone) == 0 and not d.empty


def test_diff_of_the_same_units_is_empty() -> None:
    idx = _index(["a", "b"], [b"1", None])
    assert diff(idx, fingerprints(idx)).empty


def test_index_without_optional_columns() -> None:
    idx = pa.table({fi.PATH: ["a", "b"]})
    assert len(set(fingerprints(idx).to_pylist())) == 2
