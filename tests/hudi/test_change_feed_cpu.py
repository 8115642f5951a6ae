"""The change feed's CPU work follows the instants of its range (issue 15): the file-slice
view is re-sliced only for the file groups an instant changed (``view_walk.SliceWalker``),
and the written-files check runs once over the range's writes, not once per instant."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from lakecore_hudi import incremental, state, view_walk
from lakecore_hudi.listing import list_data_files
from lakecore_hudi.options import ReadOptions
from lakecore_hudi.state import load_state

import lakecore
from lakecore.errors import VersionNotFoundError
from lakecore.storage import open_storage
from tests.hudi.write.helpers import SCHEMA, create


def _rows(ids: range, ts: int, city: str) -> pa.Table:
    return pa.table(
        {
            "id": list(ids),
            "name": [f"n{i}" for i in ids],
            "ts": [ts] * len(ids),
            "city": [city] * len(ids),
        },
        schema=SCHEMA,
    )


def _write(root: Path, k: int) -> str:
    """Write ``k`` of a table: an insert of two rows, every third write an upsert of the
    keys two writes before (MoR: log files on existing file groups). Returns its instant."""
    t = lakecore.open(str(root))
    if k % 3 == 2:
        t.upsert(_rows(range(10 * (k - 2), 10 * (k - 2) + 2), k, "ab"[(k - 2) % 2]))
    else:
        t.append(_rows(range(10 * k, 10 * k + 2), k, "ab"[k % 2]))
    return t.version


class _Work:
    """Counts the files re-sliced and the per-instant written-files checks of one feed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.walkers: list[view_walk.SliceWalker] = []
        self.checks = 0
        self.prepasses = 0
        real_walker, real_check = view_walk.SliceWalker, state.check_written_files
        real_listed = incremental.all_written_listed

        def walker(*args: object, **kw: object) -> view_walk.SliceWalker:
            made = real_walker(*args, **kw)  # type: ignore[arg-type]
            self.walkers.append(made)
            return made

        def check(*args: object, **kw: object) -> None:
            self.checks += 1
            real_check(*args, **kw)  # type: ignore[arg-type]

        def listed(*args: object, **kw: object) -> bool:
            self.prepasses += 1
            return real_listed(*args, **kw)  # type: ignore[arg-type]

        monkeypatch.setattr(incremental, "SliceWalker", walker)
        monkeypatch.setattr(state, "check_written_files", check)
        monkeypatch.setattr(incremental, "all_written_listed", listed)

    @property
    def examined(self) -> int:
        return sum(w.examined for w in self.walkers)


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_the_change_feed_work_grows_linearly_with_its_instants(
    tmp_path: Path, table_type: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files re-sliced over the feed of the first 2N writes: at most twice those of the first
    N plus a constant (rebuilt per instant from the whole listing it was quadratic); the
    written-files check of an intact table runs once for the feed, never per instant. The
    feed itself is the same as the per-instant view gives (the existing change feed tests
    compare it with hudi-rs and Spark)."""
    n = 6
    create(tmp_path, table_type, **{"hoodie.metadata.enable": "false"})
    versions: list[str] = []
    costs: list[int] = []
    for count in (n, 2 * n, 4 * n):
        # the feed of the whole table: its listing grows with the writes, as a per-instant
        # view of the whole listing would make the work grow with count * files
        versions += [_write(tmp_path, k) for k in range(len(versions), count)]
        work = _Work(monkeypatch)
        feed = lakecore.open(str(tmp_path)).changes(versions[0], versions[-1])
        assert feed.num_rows >= 2 * count, (count, feed.num_rows)
        # one check: loading the table at the end instant (load_state), none per instant
        assert work.checks == 1 and work.prepasses == 1, (work.checks, work.prepasses)
        costs.append(work.examined)
        monkeypatch.undo()
    assert costs[0] > 0, costs
    assert costs[1] <= 2 * costs[0] + 8, costs
    assert costs[2] <= 2 * costs[1] + 8, costs


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_walked_slices_are_the_per_instant_views(tmp_path: Path, table_type: str) -> None:
    """At every write, forwards, backwards and skipping, the walker's slices are exactly
    the ones ``latest_slices`` builds from the whole listing (the per-instant view)."""
    create(tmp_path, table_type, **{"hoodie.metadata.enable": "false"})
    for k in range(9):
        _write(tmp_path, k)
    storage = open_storage(str(tmp_path))
    target = load_state(storage, None, None, ReadOptions())
    files = list_data_files(storage, target.config, target.timeline, ReadOptions())
    walker = view_walk.SliceWalker(files, target.config.table_version >= 8)
    writes = target.timeline.completed_write_instants()
    order = [*writes, *reversed(writes), *writes[::3], writes[-1], writes[0]]
    assert len(order) == 2 * len(writes) + 5 and len(writes) >= 9, len(writes)
    for instant in order:
        whole = state.earlier_state(storage, target, instant, files)
        walked = state.earlier_state(storage, target, instant, files, walker, True)
        assert walked.slices == whole.slices, instant
        assert len(whole.slices) >= 1


def test_a_lost_file_is_checked_per_instant_with_the_same_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file a write made is gone: the one pass over the range sees it, the instants are
    then checked one by one as before, and the feed raises what the per-instant check
    raises for that instant (here: its file group was rewritten since, so it was cleaned)."""
    create(tmp_path, "COPY_ON_WRITE", **{"hoodie.metadata.enable": "false"})
    versions = [_write(tmp_path, k) for k in range(4)]
    first = [p for p in tmp_path.rglob(f"*_{versions[0]}.parquet")]
    assert len(first) == 1, first
    first[0].unlink()
    storage = open_storage(str(tmp_path))
    target = load_state(storage, None, None, ReadOptions())
    files = list_data_files(storage, target.config, target.timeline, ReadOptions())
    with pytest.raises(VersionNotFoundError) as per_instant:
        state.earlier_state(storage, target, target.timeline.completed_write_instants()[0], files)
    work = _Work(monkeypatch)
    with pytest.raises(VersionNotFoundError) as fed:
        lakecore.open(str(tmp_path)).changes(versions[0], versions[-1])
    assert str(fed.value) == str(per_instant.value)
    assert "was cleaned since" in str(fed.value)
    assert work.prepasses == 1 and work.checks == 2, (work.prepasses, work.checks)
