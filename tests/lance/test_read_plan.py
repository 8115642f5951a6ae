"""How Lance fragments are read fast (benchmarks/lance.py): fragments whose manifest entries
list the same fields share one read plan, a small data file comes back in one batch without
asking the stream for its end, small fragments are read in threads, and the read-ahead window
is bounded in rows. Results and errors stay those of the per-fragment path."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path
from typing import Any

import lakecore_lance.data_files as data_files
import lakecore_lance.fragment_tasks as fragment_tasks
import lakecore_lance.read_plan as read_plan
import lakecore_lance.scan as lance_scan
import pyarrow as pa
import pytest

import lakecore
from lakecore.errors import CorruptTableError

from .helpers import lance, reference, sort_rows


def _append(path: Path, start: int, rows: int, mode: str = "append", **extra: Any) -> None:
    ids = range(start, start + rows)
    columns: dict[str, Any] = {"id": pa.array(ids, pa.int64()), "name": [f"n{i}" for i in ids]}
    columns.update({k: [fn(i) for i in ids] for k, fn in extra.items()})
    lance.write_dataset(pa.table(columns), str(path), mode=mode)


def test_fragments_listing_the_same_fields_are_planned_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "ds"
    for f in range(3):
        _append(path, f * 10, 10, mode="create" if f == 0 else "append")
    lance.dataset(str(path)).add_columns({"x": "id * 2"})  # a second file per fragment
    for f in range(3, 5):
        _append(path, f * 10, 10, x=lambda i: i * 2)  # one file holding all three fields
    planned: list[int] = []
    real = read_plan.plan

    def plan(infos: Any, ancestor: Any, ids: Any) -> Any:
        planned.append(len(infos))
        return real(infos, ancestor, ids)

    monkeypatch.setattr(read_plan, "plan", plan)
    table = lakecore.open(str(path))
    assert sort_rows(table.to_arrow()).equals(sort_rows(reference(path)))
    assert sorted(planned) == [1, 2]  # two layouts among five fragments
    planned.clear()
    got = table.to_arrow(columns=["x", "id"])
    want = reference(path).select(["x", "id"])
    assert sort_rows(got).equals(sort_rows(want))
    assert sorted(planned) == [1, 2]


class _Stream:
    def __init__(self, real: pa.RecordBatchReader, calls: dict[str, int]) -> None:
        self._real, self._calls = real, calls

    def read_next_batch(self) -> pa.RecordBatch:
        self._calls["next"] += 1
        return self._real.read_next_batch()


class _Results:
    def __init__(self, real: Any, calls: dict[str, int]) -> None:
        self._real, self._calls = real, calls

    def to_batches(self) -> _Stream:
        return _Stream(self._real.to_batches(), self._calls)

    def to_table(self) -> pa.Table:
        self._calls["to_table"] += 1
        return self._real.to_table()


def _counting_reader(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    import lance.file

    calls = {"open": 0, "next": 0, "to_table": 0}
    real_class = lance.file.LanceFileReader

    class Reader:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            calls["open"] += 1
            self._real = real_class(*args, **kwargs)

        def num_rows(self) -> int:
            return int(self._real.num_rows())

        def metadata(self) -> Any:
            return self._real.metadata()

        def read_all(self, **kwargs: Any) -> _Results:
            return _Results(self._real.read_all(**kwargs), calls)

    monkeypatch.setattr(lance.file, "LanceFileReader", Reader)
    return calls


def test_a_small_file_is_one_batch_without_the_stream_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "ds"
    for f in range(4):
        _append(path, f * 20, 20, mode="create" if f == 0 else "append")
    calls = _counting_reader(monkeypatch)
    got = lakecore.open(str(path)).to_arrow()
    assert sort_rows(got).equals(sort_rows(reference(path)))
    assert calls == {"open": 4, "next": 4, "to_table": 0}
    # Files of more rows than one batch holds are read to the end as before.
    monkeypatch.setattr(lance_scan, "BATCH_ROWS", 8)
    monkeypatch.setattr(data_files, "BATCH_ROWS", 8)
    calls.update(open=0, next=0, to_table=0)
    got = lakecore.open(str(path)).to_arrow()
    assert sort_rows(got).equals(sort_rows(reference(path)))
    assert calls == {"open": 4, "next": 0, "to_table": 4}


def _data_files(path: Path) -> list[Path]:
    fragments = lance.dataset(str(path)).get_fragments()
    return [path / "data" / f.data_files()[0].path for f in fragments]


def test_data_file_errors_name_the_file(tmp_path: Path) -> None:
    source = tmp_path / "src"
    _append(source, 0, 20, mode="create")
    _append(source, 20, 10)
    cases = 0
    for name, damage, message in [
        ("missing", lambda files: files[0].unlink(), "is missing"),
        ("garbage", lambda files: files[0].write_bytes(b"x" * 64), "cannot (read|decode) data"),
        (
            "fewer rows",  # the 20-row fragment's file replaced by the 10-row one's
            lambda files: shutil.copyfile(files[1], files[0]),
            "holds 10 rows but its fragment has 20",
        ),
    ]:
        copy = tmp_path / name
        shutil.copytree(source, copy)
        damage(_data_files(copy))
        with pytest.raises(CorruptTableError, match=message):
            lakecore.open(str(copy)).to_arrow()
        cases += 1
    assert cases == 3


def test_small_fragments_are_read_in_threads(tmp_path: Path) -> None:
    path = tmp_path / "ds"
    for f in range(40):
        _append(path, f * 5, 5, mode="create" if f == 0 else "append")
    seen: set[str] = set()
    batches = []
    for batch in lakecore.open(str(path)).snapshot().to_batches():
        seen.update(t.name.split("_")[0] for t in threading.enumerate())
        batches.append(batch)
    assert "lakecore-lance" in seen  # 40 fragments: 3 groups of at most GROUP_FRAGMENTS
    got = pa.Table.from_batches(batches)
    assert sort_rows(got).equals(sort_rows(reference(path)))


@pytest.mark.parametrize(("rows", "submitted"), [(10_000, 5), (100, 50)])
def test_read_ahead_is_bounded_in_rows(rows: int, submitted: int) -> None:
    groups = [[f"g{i}"] for i in range(50)]
    asked: list[str] = []

    def group_rows(group: list[str]) -> int:
        asked.append(group[0])  # called once per submission, in the consumer's thread
        return rows

    def read(group: list[str]) -> list[list[pa.RecordBatch]]:
        return [[pa.record_batch({"g": [group[0]]})]]

    stream = fragment_tasks.in_order(read, groups, group_rows)
    first = next(stream)
    assert first[0].column(0).to_pylist() == ["g0"]
    # Large groups: MIN_AHEAD pending after the first is taken (4 + 1 submitted); small
    # ones: every group, their rows being under AHEAD_ROWS.
    assert len(asked) == submitted
    assert [b[0].column(0)[0].as_py() for b in stream] == [f"g{i}" for i in range(1, 50)]


def test_a_snapshot_builds_its_scan_context_once(tmp_path: Path) -> None:
    path = tmp_path / "ds"
    _append(path, 0, 5, mode="create")
    snapshot = lakecore.open(str(path)).snapshot()
    first = snapshot.source.scan_context()
    assert snapshot.source.scan_context() is first  # the fragment map is built once
    assert snapshot.to_arrow().num_rows == 5
    assert snapshot.source.scan_context() is first


def _recording_reader(monkeypatch: pytest.MonkeyPatch, fail: dict[str, BaseException]) -> list[str]:
    """Replace pylance's ``LanceFileReader`` by one recording each call as ``step:file``;
    opening a file named in ``fail`` raises the exception given for it."""
    import lance.file

    events: list[str] = []
    real_class = lance.file.LanceFileReader

    class Stream:
        def __init__(self, real: pa.RecordBatchReader, name: str) -> None:
            self._real, self._name = real, name

        def read_next_batch(self) -> pa.RecordBatch:
            events.append(f"next:{self._name}")
            return self._real.read_next_batch()

    class Results:
        def __init__(self, real: Any, name: str) -> None:
            self._real, self._name = real, name

        def to_batches(self) -> Stream:
            return Stream(self._real.to_batches(), self._name)

    class Reader:
        def __init__(self, path: str, **kwargs: Any) -> None:
            self._name = Path(path).name
            events.append(f"open:{self._name}")
            if self._name in fail:
                raise fail[self._name]
            self._real = real_class(path, **kwargs)

        def num_rows(self) -> int:
            return int(self._real.num_rows())

        def read_all(self, **kwargs: Any) -> Results:
            events.append(f"read:{self._name}")
            return Results(self._real.read_all(**kwargs), self._name)

    monkeypatch.setattr(lance.file, "LanceFileReader", Reader)
    return events


def test_small_files_of_a_group_are_opened_then_started_then_collected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "ds"
    for f in range(3):
        _append(path, f * 10, 10, mode="create" if f == 0 else "append")
    names = [p.name for p in _data_files(path)]
    events = _recording_reader(monkeypatch, {})
    got = lakecore.open(str(path)).to_arrow()
    assert sort_rows(got).equals(sort_rows(reference(path)))
    assert events == [f"{step}:{n}" for step in ("open", "read", "next") for n in names]


def test_small_file_errors_are_raised_in_fragment_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "ds"
    for f in range(4):
        _append(path, f * 10, 10, mode="create" if f == 0 else "append")
    files = _data_files(path)
    files[1].write_bytes(b"x" * 64)  # does not decode
    files[3].unlink()  # missing: found first (while opening), raised second
    with pytest.raises(CorruptTableError, match=f"cannot read data file data/{files[1].name}"):
        lakecore.open(str(path)).to_arrow()
    # An interrupt while opening is raised at once, not kept for its fragment's turn.
    shutil.copyfile(files[0], files[1])
    events = _recording_reader(monkeypatch, {files[2].name: KeyboardInterrupt()})
    with pytest.raises(KeyboardInterrupt):
        lakecore.open(str(path)).to_arrow()
    assert events == [f"open:{files[0].name}", f"open:{files[1].name}", f"open:{files[2].name}"]
