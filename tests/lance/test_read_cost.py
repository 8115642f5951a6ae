"""What a Lance read costs per fragment: one file reader per data file, no ``metadata()`` call
when every column of the file is read, threads only where they pay (benchmarks/lance.py)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import lakecore_lance.fragment_tasks as fragment_tasks
import pyarrow as pa
import pytest

import lakecore

from .helpers import lance, reference, sort_rows


def _dataset(path: Path, fragments: int, rows: int) -> None:
    for f in range(fragments):
        ids = range(f * rows, (f + 1) * rows)
        table = pa.table({"id": pa.array(ids, pa.int64()), "name": [f"n{i}" for i in ids]})
        lance.write_dataset(table, str(path), mode="create" if f == 0 else "append")


class _Counting:
    """Wraps pylance's ``LanceFileReader``, counting opens and ``metadata()`` calls."""

    opens = 0
    metadata_calls = 0

    def __init__(self, real: Any) -> None:
        self._real = real

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        _Counting.opens += 1
        reader = self._real(*args, **kwargs)
        original = reader.metadata

        def metadata() -> Any:
            _Counting.metadata_calls += 1
            return original()

        reader.metadata = metadata
        return reader


def test_full_read_opens_each_data_file_once_without_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "ds"
    _dataset(path, fragments=5, rows=20)
    import lance.file

    _Counting.opens = _Counting.metadata_calls = 0
    monkeypatch.setattr(lance.file, "LanceFileReader", _Counting(lance.file.LanceFileReader))
    got = lakecore.open(str(path)).to_arrow()
    assert (_Counting.opens, _Counting.metadata_calls) == (5, 0)
    assert sort_rows(got).equals(sort_rows(reference(path)))
    # A projection still names the file's columns (one metadata() call per file).
    _Counting.opens = _Counting.metadata_calls = 0
    assert lakecore.open(str(path)).to_arrow(columns=["name"]).num_rows == 100
    assert _Counting.metadata_calls == 5


def _threads_while_reading(path: Path) -> set[str]:
    seen: set[str] = set()
    for _ in lakecore.open(str(path)).snapshot().to_batches():
        seen.update(t.name.split("_")[0] for t in threading.enumerate())
    return seen


def test_local_fragments_share_thread_tasks_up_to_threaded_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "ds"
    _dataset(path, fragments=6, rows=10)
    assert "lakecore-lance" not in _threads_while_reading(path)
    monkeypatch.setattr(fragment_tasks, "THREADED_ROWS", 10)
    assert "lakecore-lance" in _threads_while_reading(path)


def test_detect_looks_at_the_first_manifest_name_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lakecore_lance.format import LanceFormat

    from lakecore.storage import open_storage

    path = tmp_path / "ds"
    _dataset(path, fragments=3, rows=5)
    storage = open_storage(str(path))
    listed: list[str] = []
    real = storage.list_dir

    def list_dir(p: str) -> Any:
        listed.append(p)
        return real(p)

    monkeypatch.setattr(storage, "list_dir", list_dir)
    assert LanceFormat().detect(storage) and listed == []
    # A stray file sorting first: every name is looked at, and a manifest is still found.
    (path / "_versions" / "0-stray.txt").write_text("x")
    assert LanceFormat().detect(storage) and listed == ["_versions"]
    for manifest in (path / "_versions").glob("*.manifest"):
        manifest.unlink()
    assert not LanceFormat().detect(storage)


def test_plain_data_file_names_skip_the_containment_walk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import lakecore_lance.state as lance_state

    path = tmp_path / "ds"
    _dataset(path, fragments=4, rows=5)
    checked: list[str] = []
    real = lance_state.contained_path

    def contained_path(p: str, root: str, *, source: str) -> str:
        checked.append(p)
        return real(p, root, source=source)

    monkeypatch.setattr(lance_state, "contained_path", contained_path)
    assert lakecore.open(str(path)).to_arrow().num_rows == 20
    assert checked == []
    for name in ("x.lance", "a-b_c.0.lance"):
        assert lance_state._PLAIN_NAME.match(name)
    for name in ("..", ".", "../x.lance", "sub/x.lance", "s3:x", "/x.lance", "", "x\\y", ".x"):
        assert lance_state._PLAIN_NAME.match(name) is None, name
