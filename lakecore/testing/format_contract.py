"""The format contract as abstract pytest suites, written against the public API only.

A format plugin opts in with a fixture class naming its format (and the table properties its
tables need), then one line per suite, as fsspec's abstract tests::

    class DeltaFixtures(FormatFixtures):
        format_name = "delta"
        create_properties = {"delta.enableChangeDataFeed": "true"}

    class TestDeltaRead(ReadContract, DeltaFixtures): pass
    class TestDeltaCapabilities(CapabilityContract, DeltaFixtures): pass

Every suite works on fresh tables of ``SCHEMA`` (``id``, ``name``, ``ts``, ``part``),
partitioned by ``part``, created with ``lakecore.create``. Suites: ``ReadContract``,
``TimeTravelContract``, ``WriteContract``, ``CommitContract``, ``DeleteContract``,
``DetectContract``, ``CapabilityContract``; ``FormatContract`` is all of them. A test that
needs a capability the format does not declare is skipped with that reason; the
``CapabilityContract`` then checks that the capability is refused before any IO.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import ClassVar

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lakecore
from lakecore import (
    CommitConflictError,
    CommitError,
    ConstraintViolationError,
    InvalidArgumentError,
    SchemaError,
    Table,
    TableExistsError,
    TableNotFoundError,
    UnknownFormatError,
    UnsupportedFeatureError,
    VersionNotFoundError,
)
from lakecore.format import (
    Capability,
    MaintainableFormat,
    MergeOnReadFormat,
    TableFeatures,
    TaggableFormat,
    WritableFormat,
)
from lakecore.plugins import load_registry
from lakecore.testing.faults import CountingStorage
from lakecore.transaction import Transaction

SCHEMA = pa.schema(
    [("id", pa.int64()), ("name", pa.string()), ("ts", pa.int64()), ("part", pa.string())]
)
"""The schema of every contract table: ``id`` is unique (a record key where formats need
one), ``ts`` orders versions of a row, ``part`` is the partition column."""
COLUMNS = SCHEMA.names
PARTITION = "part"

Content = dict[int, tuple[str | None, int | None, str | None]]
"""A table's rows by ``id``: (name, ts, part)."""


def rows(ids: Iterable[int], name: str = "a", part: str = "a", ts: int = 1) -> pa.Table:
    """Rows of ``SCHEMA`` with the given ids, all with ``name``, ``ts`` and ``part``."""
    items = [{"id": i, "name": name, "ts": ts, "part": part} for i in ids]
    return pa.Table.from_pylist(items, schema=SCHEMA)


def content(data: pa.Table) -> Content:
    """``data``'s rows by id; fails if an id appears twice (a lost update or delete)."""
    items = data.select(COLUMNS).to_pylist()
    out = {r["id"]: (r["name"], r["ts"], r["part"]) for r in items}
    assert len(out) == len(items), f"duplicate ids in {sorted(r['id'] for r in items)}"
    return out


def read(table: Table, version: int | str | None = None) -> Content:
    """The rows of ``table`` at ``version`` (latest by default) by id."""
    return content(table.to_arrow(version=version, columns=COLUMNS))


def expect(*groups: tuple[Iterable[int], str, str]) -> Content:
    """The content of rows written by ``rows(ids, name, part)`` for each group (ts 1)."""
    return {i: (name, 1, part) for ids, name, part in groups for i in ids}


def needs(table: Table, *capabilities: Capability) -> None:
    """Skip the test (saying why) unless the table's format declares ``capabilities``."""
    missing = [c.value for c in capabilities if c not in table.capabilities]
    if missing:
        pytest.skip(f"the {table.format} format does not declare {', '.join(missing)}")


def data_files(table: Table) -> set[str]:
    """Files under the table root outside hidden (``_``/``.``) directories: the data files,
    not the format's metadata (``_delta_log``, ``.hoodie``)."""
    root = Path(table.uri)
    return {
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and not any(part[0] in "_." for part in p.relative_to(root).parts)
    }


def counted(table: Table) -> tuple[Table, CountingStorage]:
    """``table`` reopened through a ``CountingStorage`` (to see which calls an operation makes)."""
    storage = CountingStorage(table.storage)
    return lakecore.open(table.uri, format=table.format, storage=storage), storage


def _index_rows(index: pa.Table) -> list[dict[str, object]]:
    """The file index's rows as ``part`` (partition value, else null), the ``id`` and
    ``part`` bounds, and ``files`` (the row's data files, ``path`` first)."""
    out: list[dict[str, object]] = []
    for r in index.to_pylist():
        files = r.get("data_files") or [r["path"]]
        low, high = r.get("min") or {}, r.get("max") or {}
        out.append(
            {
                "part": (r.get("partition") or {}).get(PARTITION),
                "bounds": {c: (low.get(c), high.get(c)) for c in ("id", PARTITION)},
                "files": [str(f) for f in files],
            }
        )
    return out


def _may_hold(row: Mapping[str, object], part: str, key: int) -> bool:
    """Whether an ``_index_rows`` row's partition value and stats allow ``part``/``key``
    (unknown bounds allow anything)."""
    bounds = row["bounds"]
    assert isinstance(bounds, dict)
    if row["part"] is not None and row["part"] != part:
        return False
    for column, value in (("id", key), (PARTITION, part)):
        low, high = bounds[column]
        if (low is not None and value < low) or (high is not None and value > high):
            return False
    return True


def _relative(table: Table, path: str) -> str:
    """``path`` as the file index names it: relative to the table root."""
    root = table.uri.rstrip("/") + "/"
    for prefix in (root, "file://" + root):
        if path.startswith(prefix):
            return path[len(prefix) :]
    return path


def missing_version(latest: int | str) -> int | str:
    """A version newer than ``latest`` that the table cannot have."""
    if isinstance(latest, int):
        return latest + 1000
    return "9" * len(latest)


class FormatFixtures:
    """Base of a plugin's fixture class: set ``format_name`` and ``create_properties``."""

    format_name: ClassVar[str] = ""
    """The registered name of the format under test."""
    create_properties: ClassVar[Mapping[str, str]] = {}
    """Properties every contract table is created with (e.g. a record key, the change feed)."""
    partition_by: ClassVar[Sequence[str]] = (PARTITION,)
    """The partition columns of contract tables; formats without partitioning (Lance) set
    ``()`` (the ``part`` column is then an ordinary column)."""

    @pytest.fixture
    def table_uri(self, tmp_path: Path) -> str:
        """Where the test's table is created (a fresh local directory)."""
        return str(tmp_path / "table")

    @pytest.fixture
    def table(self, table_uri: str) -> Table:
        """A new, empty table of ``SCHEMA`` partitioned by ``partition_by``."""
        assert self.format_name, "set format_name on the fixture class"
        properties = dict(self.create_properties)
        partitions = list(self.partition_by)
        return lakecore.create(table_uri, SCHEMA, self.format_name, partitions, properties)


# ---------------------------------------------------------------------------------- read


class ReadContract:
    """Reading: schema, partitioning, rows, projection, predicates, snapshots, history."""

    def test_an_unknown_reading_option_fails_at_open(self, table: Table) -> None:
        with pytest.raises(InvalidArgumentError, match="no_such_option"):
            lakecore.open(table.uri, options={"no_such_option": "true"})
        assert lakecore.open(table.uri).version == table.version

    def test_new_table_is_empty_with_the_schema(self, table: Table) -> None:
        snapshot = table.snapshot()
        for field in SCHEMA:
            assert snapshot.schema.field(field.name).type == field.type
        # The suite's classes are mixed with a FormatFixtures subclass (its partition_by).
        assert snapshot.partition_columns == tuple(getattr(self, "partition_by", (PARTITION,)))
        assert table.to_arrow(columns=COLUMNS).num_rows == 0

    def test_appended_rows_read_back(self, table: Table) -> None:
        table.append(rows([1, 2]))
        table.append(rows([3], "b", "b"))
        assert read(table) == expect(([1, 2], "a", "a"), ([3], "b", "b"))
        assert lakecore.open(table.uri).to_arrow(columns=COLUMNS).num_rows == 3

    def test_columns_restrict_and_order_the_output(self, table: Table) -> None:
        table.append(rows([1]))
        out = table.to_arrow(columns=["part", "id"])
        assert out.column_names == ["part", "id"]
        assert out.to_pylist() == [{"part": "a", "id": 1}]

    def test_unknown_column_is_a_schema_error(self, table: Table) -> None:
        table.append(rows([1]))
        with pytest.raises(SchemaError):
            table.to_arrow(columns=["id", "nope"])

    def test_scan_returns_exactly_the_matching_rows(self, table: Table) -> None:
        table.append(rows([1, 2, 3]))
        table.append(rows([4, 5], "b", "b"))
        scan = table.scan("part = 'b' AND id > 4", columns=COLUMNS)
        assert content(scan.to_arrow()) == expect(([5], "b", "b"))
        assert content(table.scan("id <= 1 OR name = 'b'").to_arrow()) == expect(
            ([1], "a", "a"), ([4, 5], "b", "b")
        )

    def test_snapshot_describes_its_version(self, table: Table) -> None:
        table.append(rows([1]))
        version = table.append(rows([2], "b", "b")).version
        snapshot = table.snapshot()
        assert snapshot.version == version == table.version
        assert snapshot.format == table.format
        assert isinstance(snapshot.timestamp, int)
        assert isinstance(snapshot.features, TableFeatures)
        assert snapshot.features.format_version
        assert isinstance(snapshot.properties, dict)
        assert snapshot.files().num_rows >= 2
        batches = list(snapshot.to_batches(COLUMNS))
        assert sum(b.num_rows for b in batches) == snapshot.to_arrow(COLUMNS).num_rows == 2

    def test_data_out_agrees_with_the_rows_read(self, table: Table) -> None:
        # count() trusts the file index's record_count minus deletion cardinality: a format
        # must leave record_count null where only reading tells the live rows (a Hudi slice
        # with log files). head/limit, to_batches and the Arrow C stream read the same rows.
        table.append(rows([1, 2, 3]))
        table.append(rows([4, 5], "b", "b"))
        table.append(rows([6], "b", "b"))
        if Capability.DELETE in table.capabilities:
            table.delete("id = 2 OR id = 6")
        everything = table.to_arrow()
        for where in (None, "part = 'b'", "part IS NULL", "id > 3", "part = 'a' AND id >= 2"):
            matching = everything if where is None else table.scan(where).to_arrow()
            assert table.count(where) == matching.num_rows, where
        assert table.head(2).equals(everything.slice(0, 2))
        assert table.scan(columns=["id"], limit=3).to_arrow().num_rows == 3
        batches = list(table.to_batches(batch_size=1))
        assert {b.num_rows for b in batches} == {1} and len(batches) == everything.num_rows
        assert pa.table(table).equals(everything)

    def test_history_is_newest_first(self, table: Table) -> None:
        first = table.append(rows([1])).version
        second = table.append(rows([2])).version
        history = table.history()
        versions = [entry.version for entry in history]
        assert versions[0] == second
        assert first in versions
        assert versions.index(first) > versions.index(second)
        assert [e.version for e in table.history(limit=1)] == [second]


# ---------------------------------------------------------------------------- time travel


class TimeTravelContract:
    """Older versions stay readable, by version and (where declared) by timestamp."""

    def test_by_version(self, table: Table) -> None:
        first = table.append(rows([1, 2])).version
        table.append(rows([3], "b", "b"))
        assert read(table, first) == expect(([1, 2], "a", "a"))
        assert table.snapshot(first).version == first
        assert len(read(table)) == 3

    def test_a_version_the_table_lacks_is_refused(self, table: Table) -> None:
        latest = table.append(rows([1])).version
        with pytest.raises(VersionNotFoundError):
            table.snapshot(missing_version(latest))

    def test_by_timestamp(self, table: Table) -> None:
        needs(table, Capability.TIME_TRAVEL_BY_TIMESTAMP)
        first = table.append(rows([1])).version
        time.sleep(0.01)  # commits in distinct milliseconds
        second = table.append(rows([2])).version
        at_first = table.snapshot(first).timestamp
        at_second = table.snapshot(second).timestamp
        assert at_first is not None and at_second is not None and at_first < at_second
        assert table.snapshot(timestamp=at_first).version == first
        assert table.snapshot(timestamp=at_second - 1).version == first
        assert table.snapshot(timestamp=at_second).version == second
        assert content(table.scan(timestamp=at_first).to_arrow()) == expect(([1], "a", "a"))

    def test_a_timestamp_before_the_table_is_refused(self, table: Table) -> None:
        needs(table, Capability.TIME_TRAVEL_BY_TIMESTAMP)
        table.append(rows([1]))
        with pytest.raises(VersionNotFoundError):
            table.snapshot(timestamp=1000)


# --------------------------------------------------------------------------------- write


class WriteContract:
    """Appends and overwrites: versions, results, and bad input that changes nothing."""

    def test_append_returns_the_new_version(self, table: Table) -> None:
        needs(table, Capability.WRITE)
        version = table.append(rows([1])).version
        assert table.version == version
        later = table.append(rows([2])).version
        assert later != version and table.version == later

    def test_overwrite_replaces_every_row(self, table: Table) -> None:
        needs(table, Capability.OVERWRITE)
        table.append(rows([1, 2]))
        table.append(rows([3], "b", "b"))
        table.overwrite(rows([7], "c", "c"))
        assert read(table) == expect(([7], "c", "c"))

    def test_overwrite_where_replaces_only_the_matching_rows(self, table: Table) -> None:
        needs(table, Capability.OVERWRITE)
        table.append(rows([1, 2]))
        table.append(rows([3], "b", "b"))
        table.overwrite(rows([8], "n", "b"), where="part = 'b'")
        assert read(table) == expect(([1, 2], "a", "a"), ([8], "n", "b"))

    def test_overwrite_where_refuses_rows_outside_it(self, table: Table) -> None:
        needs(table, Capability.OVERWRITE)
        version = table.append(rows([1])).version
        with pytest.raises(ConstraintViolationError):
            table.overwrite(rows([2], "x", "a"), where="part = 'b'")
        assert table.version == version
        assert read(table) == expect(([1], "a", "a"))

    def test_rows_that_do_not_fit_the_schema_change_nothing(self, table: Table) -> None:
        needs(table, Capability.WRITE)
        version = table.append(rows([1])).version
        bad = pa.table({"id": ["x"], "name": ["a"], "ts": [1], "part": ["a"]})
        with pytest.raises(SchemaError):
            table.append(bad)
        assert table.version == version
        assert read(table) == expect(([1], "a", "a"))


# --------------------------------------------------------------------------------- commit


class CommitContract:
    """Transactions: atomic, and a concurrent commit is never lost."""

    def test_two_transactions_from_one_snapshot(self, table: Table) -> None:
        needs(table, Capability.WRITE)
        table.append(rows([1]))
        first, second = table.transaction(), table.transaction()
        assert first.snapshot.version == second.snapshot.version
        first.append(rows([2]))
        second.append(rows([3], "b", "b"))
        won = first.commit().version
        try:
            rebased = second.commit().version
        except CommitConflictError:
            assert read(table) == expect(([1, 2], "a", "a"))
        else:
            assert rebased != won
            assert read(table) == expect(([1, 2], "a", "a"), ([3], "b", "b"))
        assert read(table, won) == expect(([1, 2], "a", "a"))

    def test_a_conflicting_change_never_undoes_the_first(self, table: Table) -> None:
        needs(table, Capability.DELETE, Capability.UPDATE)
        table.append(rows([1, 2]))
        deleting, updating = table.transaction(), table.transaction()
        deleting.delete("id = 1")
        updating.update({"name": "'u'"}, "id = 1")
        deleting.commit()
        # A format may refuse the update (CommitConflictError) or rebase it on the delete;
        # either way the deleted row must stay deleted.
        with contextlib.suppress(CommitConflictError):
            updating.commit()
        assert read(table) == expect(([2], "a", "a"))

    def test_a_block_that_raises_commits_nothing(self, table: Table) -> None:
        needs(table, Capability.WRITE)
        version = table.append(rows([1])).version

        class Stop(Exception):
            pass

        with pytest.raises(Stop), table.transaction() as tx:
            tx.append(rows([2]))
            raise Stop
        assert table.version == version
        assert read(table) == expect(([1], "a", "a"))

    def test_an_aborted_transaction_removes_what_it_wrote(self, table: Table) -> None:
        needs(table, Capability.WRITE)
        table.append(rows([1]))
        before = data_files(table)
        with pytest.raises(RuntimeError, match="stop"), table.transaction() as tx:
            tx.append(rows([2], "b", "b"))
            assert data_files(table) != before  # the staged write made files
            raise RuntimeError("stop")
        explicit = table.transaction()
        explicit.append(rows([3]))
        explicit.abort()
        assert data_files(table) == before
        assert read(table) == expect(([1], "a", "a"))
        table.append(rows([4]))  # the next writer has nothing to roll back or avoid
        assert read(table) == expect(([1, 4], "a", "a"))

    def test_a_conflict_removes_the_losers_files(self, table: Table) -> None:
        needs(table, Capability.UPDATE)
        table.append(rows([1, 2]))
        winner, loser = table.transaction(), table.transaction()
        winner.update({"name": "'w'"}, "id = 1")
        won = data_files(table)
        loser.update({"name": "'l'"}, "id = 1")
        winner.commit()
        try:
            loser.commit()
        except CommitConflictError:
            assert data_files(table) == won
            assert read(table) == {1: ("w", 1, "a"), 2: ("a", 1, "a")}
        else:  # the format rebased the update on the winner: both landed, in order
            assert read(table) == {1: ("l", 1, "a"), 2: ("a", 1, "a")}

    def test_one_transaction_commits_its_operations_together(self, table: Table) -> None:
        needs(table, Capability.DELETE)
        table.append(rows([1, 2]))
        with table.transaction() as tx:
            tx.delete("id = 1")
            tx.append(rows([9], "n", "n"))
        assert tx.version == table.version
        assert read(table) == expect(([2], "a", "a"), ([9], "n", "n"))


# --------------------------------------------------------------------------------- delete


class DeleteContract:
    """Deletes (and updates where declared) change exactly the matching rows."""

    def test_delete_where(self, table: Table) -> None:
        needs(table, Capability.DELETE)
        table.append(rows([1, 2, 3]))
        table.append(rows([4], "b", "b"))
        before = table.version
        version = table.delete("id = 2 OR part = 'b'").version
        assert version == table.version != before
        assert read(table) == expect(([1, 3], "a", "a"))
        assert len(read(table, before)) == 4

    def test_delete_everything(self, table: Table) -> None:
        needs(table, Capability.DELETE)
        table.append(rows([1, 2]))
        table.delete()
        assert read(table) == {}

    def test_delete_matching_nothing_keeps_every_row(self, table: Table) -> None:
        needs(table, Capability.DELETE)
        table.append(rows([1, 2]))
        table.delete("id > 100")
        assert read(table) == expect(([1, 2], "a", "a"))

    def test_delete_with_an_unknown_column_changes_nothing(self, table: Table) -> None:
        needs(table, Capability.DELETE)
        version = table.append(rows([1])).version
        with pytest.raises(SchemaError):
            table.delete("nope = 1")
        assert table.version == version

    def test_delete_reads_only_its_candidate_files(self, table: Table) -> None:
        # Every write goes through the planner (``lakecore.planning.candidates``): a delete
        # whose predicate the file index's partition values and stats confine to one row
        # reads no data file of another row.
        needs(table, Capability.DELETE)
        for ids, part in (([1, 2], "a"), ([3, 4], "a"), ([10, 11], "b"), ([12, 13], "b")):
            table.append(rows(ids, part, part))
        index = table.snapshot().files()
        assert index.num_rows >= 4, "one file-index row per append at least"
        candidates = [r for r in _index_rows(index) if _may_hold(r, "b", 12)]
        if self.partition_by:  # type: ignore[attr-defined]  # mixed with FormatFixtures
            # Partition values alone leave two rows; the stats of id must leave one.
            assert len(candidates) == 1, f"rows that may hold part 'b', id 12: {candidates}"
        allowed = {f for r in candidates for f in r["files"]}  # type: ignore[attr-defined]
        every_file = {f for r in _index_rows(index) for f in r["files"]}  # type: ignore[attr-defined]
        # What building the file index reads (Hudi without a metadata table: Parquet footers
        # for the stats) is the index's cost, not the delete's: a file counts as read by the
        # delete when it read more of it than that.
        opened, storage = counted(table)
        opened.snapshot().files()
        index_cost = dict(storage.bytes)
        storage.bytes.clear()
        opened.delete("part = 'b' AND id = 12")
        read_files = {
            _relative(table, p) for p, n in storage.bytes.items() if n > index_cost.get(p, 0)
        } & every_file
        storage.bytes.clear()
        assert read(opened) == expect(([1, 2, 3, 4], "a", "a"), ([10, 11, 13], "b", "b"))
        if not {_relative(table, p) for p in storage.bytes} & data_files(opened):
            # Lance: pylance opens the resolved paths itself, so no read shows here.
            pytest.skip(f"the {table.format} format reads data files around lakecore.Storage")
        assert read_files, "the delete read the data file holding its row"
        assert read_files <= allowed, f"read beyond the candidates: {read_files - allowed}"

    def test_update_where(self, table: Table) -> None:
        needs(table, Capability.UPDATE)
        table.append(rows([1, 2]))
        table.update({"name": "'z'", "ts": "ts + 1"}, "id = 2")
        assert read(table) == {1: ("a", 1, "a"), 2: ("z", 2, "a")}


# --------------------------------------------------------------------------------- detect


class DetectContract:
    """``lakecore.open`` recognises the format; other locations raise typed errors."""

    def test_open_detects_the_format(self, table: Table) -> None:
        table.append(rows([1]))
        opened = lakecore.open(table.uri)
        assert opened.format == table.format
        assert read(opened) == expect(([1], "a", "a"))

    def test_open_with_the_format_named(self, table: Table) -> None:
        table.append(rows([1]))
        assert lakecore.open(table.uri, format=table.format).format == table.format

    def test_an_empty_location_is_not_a_table(self, tmp_path: Path) -> None:
        empty = tmp_path / "empty"
        empty.mkdir()
        with pytest.raises(TableNotFoundError):
            lakecore.open(str(empty))
        with pytest.raises(TableNotFoundError):
            lakecore.open(str(tmp_path / "missing"))

    def test_a_location_holding_no_table_is_typed(self, tmp_path: Path) -> None:
        assert isinstance(self, FormatFixtures)
        other = tmp_path / "other"
        other.mkdir()
        (other / "notes.txt").write_text("not a table")
        with pytest.raises(UnknownFormatError):
            lakecore.open(str(other))
        with pytest.raises(TableNotFoundError):
            lakecore.open(str(other), format=self.format_name)

    def test_create_over_a_table_is_refused(self, table: Table) -> None:
        table.append(rows([1]))
        with pytest.raises(TableExistsError):
            partitions = [PARTITION] if Capability.PARTITIONING in table.capabilities else []
            lakecore.create(table.uri, SCHEMA, table.format, partitions)
        assert read(table) == expect(([1], "a", "a"))


# ---------------------------------------------------------------------------- capabilities


def _check_write(t: Table) -> None:
    t.append(rows([1]))
    assert read(t) == expect(([1], "a", "a"))


def _check_overwrite(t: Table) -> None:
    t.append(rows([1]))
    t.overwrite(rows([2], "o", "o"))
    assert read(t) == expect(([2], "o", "o"))


def _check_delete(t: Table) -> None:
    t.append(rows([1, 2]))
    t.delete("id = 1")
    assert read(t) == expect(([2], "a", "a"))


def _check_update(t: Table) -> None:
    t.append(rows([1, 2]))
    t.update({"name": "'u'"}, "id = 1")
    assert read(t) == {1: ("u", 1, "a"), 2: ("a", 1, "a")}


def _check_merge(t: Table) -> None:
    t.append(rows([1, 2]))
    source = rows([2, 3], "m")
    t.merge(source, on="id").when_matched_update_all().when_not_matched_insert_all().execute()
    assert read(t) == expect(([1], "a", "a"), ([2, 3], "m", "a"))


def _check_upsert(t: Table) -> None:
    t.append(rows([1, 2]))
    t.upsert(rows([2, 4], "u", ts=2))
    assert read(t) == {1: ("a", 1, "a"), 2: ("u", 2, "a"), 4: ("u", 2, "a")}


def _check_set_properties(t: Table) -> None:
    t.set_properties({"lakecore.contract.colour": "blue"})
    assert t.snapshot().properties["lakecore.contract.colour"] == "blue"
    t.set_properties({"lakecore.contract.colour": None})
    assert "lakecore.contract.colour" not in t.snapshot().properties


def _check_constraints(t: Table) -> None:
    t.append(rows([1, 2]))
    with pytest.raises(ConstraintViolationError):
        t.add_constraint("id_small", "id < 2")
    t.add_constraint("id_positive", "id > 0")
    with pytest.raises(ConstraintViolationError):
        t.append(rows([-1]))
    t.drop_constraint("id_positive")
    t.append(rows([-1]))
    with pytest.raises(SchemaError):
        t.drop_constraint("id_positive")
    assert sorted(read(t)) == [-1, 1, 2]


def _check_app_transactions(t: Table) -> None:
    with t.transaction() as tx:
        tx.append(rows([7]))
        tx.set_app_transaction("contract-job", 3)
    assert read(t) == expect(([7], "a", "a"))


def _check_schema_evolution(t: Table) -> None:
    t.append(rows([1]))
    with t.update_schema() as update:
        update.add_column("email", pa.string())
    assert t.snapshot().schema.field("email").type == pa.string()
    assert t.to_arrow(columns=["id", "email"]).to_pylist() == [{"id": 1, "email": None}]


def _check_schema_merge(t: Table) -> None:
    t.append(rows([1]))
    wider = rows([2]).append_column("email", pa.array(["e"]))
    result = t.append(wider, schema_mode="merge")
    assert result.version == t.version  # one commit: the new column and the rows
    assert t.snapshot().schema.field("email").nullable
    got = t.to_arrow(columns=["id", "email"]).sort_by("id").to_pylist()
    assert got == [{"id": 1, "email": None}, {"id": 2, "email": "e"}]


def _check_schema_overwrite(t: Table) -> None:
    t.append(rows([1]))
    data = pa.table({"id": [5], "part": ["a"], "score": [0.5]})
    t.overwrite(data, schema_mode="overwrite")
    assert set(t.snapshot().schema.names) == {"id", "part", "score"}
    assert t.to_arrow(columns=["id", "score"]).to_pylist() == [{"id": 5, "score": 0.5}]


def _check_change_feed(t: Table) -> None:
    first = t.append(rows([1, 2])).version
    second = t.append(rows([3])).version
    changes = t.changes(second)
    assert {"_change_type", "_commit_version", "_commit_timestamp"} <= set(changes.column_names)
    assert changes.column("id").to_pylist() == [3]
    assert sorted(t.changes(first, second).column("id").to_pylist()) == [1, 2, 3]


def _check_time_travel_by_timestamp(t: Table) -> None:
    first = t.append(rows([1])).version
    time.sleep(0.01)
    t.append(rows([2]))
    at = t.snapshot(first).timestamp
    assert at is not None
    assert t.snapshot(timestamp=at).version == first


def _check_checkpoint(t: Table) -> None:
    t.append(rows([1]))
    version = t.append(rows([2])).version
    assert t.checkpoint() == version
    assert read(lakecore.open(t.uri)) == expect(([1, 2], "a", "a"))


def _check_vacuum(t: Table) -> None:
    t.append(rows([1]))
    t.overwrite(rows([2]))
    listed = t.vacuum(retention_hours=0, dry_run=True, enforce_retention=False)
    assert listed and all(isinstance(p, str) for p in listed)
    assert t.vacuum(retention_hours=0, dry_run=False, enforce_retention=False) == listed
    assert t.vacuum(retention_hours=0, dry_run=True, enforce_retention=False) == []
    assert read(t) == expect(([2], "a", "a"))


def _check_restore(t: Table) -> None:
    first = t.append(rows([1])).version
    t.append(rows([2]))
    restored = t.restore(first).version
    assert restored == t.version != first
    assert read(t) == expect(([1], "a", "a"))


def _check_optimize(t: Table) -> None:
    for i in range(3):
        t.append(rows([i]))
    before = t.snapshot().files().num_rows
    t.optimize()
    assert t.snapshot().files().num_rows < before
    assert read(t) == expect(([0, 1, 2], "a", "a"))


def _check_compact(t: Table) -> None:
    t.append(rows([1, 2]))
    if Capability.DELETE in t.capabilities:
        t.delete("id = 1")  # merge-on-read formats keep this apart from the data file
    want = read(t)
    result = t.compact()
    assert result is None or result.version == t.version
    assert read(t) == want


def _check_clean(t: Table) -> None:
    first = t.append(rows([1])).version
    t.overwrite(rows([2]))
    t.append(rows([3]))
    deleted = t.clean(retain_commits=1)
    assert all(isinstance(p, str) for p in deleted)
    assert read(t) == expect(([2, 3], "a", "a"))
    assert first != t.version


def _check_tags(t: Table) -> None:
    first = t.append(rows([1])).version
    t.append(rows([2]))
    t.create_tag("contract-first", first)
    assert t.tags() == {"contract-first": first}
    assert read(t, "contract-first") == expect(([1], "a", "a"))
    with pytest.raises(InvalidArgumentError):
        t.create_tag("contract-first", first)
    t.delete_tag("contract-first")
    assert t.tags() == {}
    with pytest.raises(VersionNotFoundError):
        t.delete_tag("contract-first")


def _check_partitioning(t: Table) -> None:
    other = lakecore.create(t.uri.rstrip("/") + "-partitioned", SCHEMA, t.format, [PARTITION])
    other.append(pa.concat_tables([rows([1], part="a"), rows([2], part="b")]))
    snapshot = other.snapshot()
    assert snapshot.partition_columns == (PARTITION,)
    assert read(other) == expect(([1], "a", "a"), ([2], "a", "b"))


def _check_replace_files(t: Table) -> None:
    t.append(rows([1, 2]))
    t.append(rows([3]))
    index = t.snapshot().files()
    first = index.filter(pc.equal(index.column("record_count"), 2))
    assert first.num_rows == 1, "one append, one file (contract tables are small)"
    with t.transaction() as tx:
        written = tx.replace_files([rows([7, 8])], first)
    assert [w.num_rows >= 1 for w in written] == [True]
    assert read(t) == expect(([3, 7, 8], "a", "a"))
    gone = t.snapshot().files()
    with pytest.raises(InvalidArgumentError), t.transaction() as tx:
        tx.replace_files([], first)  # no longer live
    assert t.snapshot().files().num_rows == gone.num_rows
    assert read(t) == expect(([3, 7, 8], "a", "a"))


def _check_commit_metadata(t: Table) -> None:
    with t.transaction(app_metadata={"job": "contract", "run": "1"}) as tx:
        tx.append(rows([1]))
    assert tx.version is not None
    entry = next(e for e in t.history() if str(e.version) == str(tx.version))
    assert entry.app_metadata == {"job": "contract", "run": "1"}


def _check_commit_timestamps(t: Table) -> None:
    t.append(rows([1]))
    base = t.snapshot().timestamp or 0
    when = max(base + 60_000, 1_900_000_000_000)  # later than anything: a future-dated commit
    try:
        with t.transaction(timestamp_ms=when) as tx:
            tx.append(rows([2]))
    except UnsupportedFeatureError as exc:
        # A format may need a table property first (Delta: in-commit timestamps); it must say.
        pytest.skip(f"this table needs a property for commit timestamps: {exc}")
    assert tx.version is not None
    assert t.snapshot().timestamp == when
    assert content(t.snapshot(timestamp=when - 1).to_arrow(columns=COLUMNS)) == expect(
        ([1], "a", "a")
    )
    assert content(t.snapshot(timestamp=when).to_arrow(columns=COLUMNS)) == expect(
        ([1, 2], "a", "a")
    )
    with pytest.raises(CommitError), t.transaction(timestamp_ms=when) as tx:
        tx.append(rows([3]))  # not later than the latest
    assert read(t) == expect(([1, 2], "a", "a"))


def _check_adopt_files(t: Table) -> None:
    import io

    import pyarrow.parquet as pq

    t.append(rows([1]))
    # Another writer's Parquet file under the root, with a column the table does not have,
    # beside the table's own file of partition "a" (formats that take partition values from
    # the directory, as Hudi, refuse a file elsewhere).
    foreign = rows([7, 8], name="f").append_column("_other_meta", pa.array(["m", "n"]))
    sink = io.BytesIO()
    pq.write_table(foreign, sink)
    own = str(t.snapshot().files().column("path")[0].as_py())
    directory = own.rpartition("/")[0] if PARTITION in t.snapshot().partition_columns else ""
    path = f"{directory}/other-writer-0001.parquet" if directory else "other-writer-0001.parquet"
    t.storage.put(path, sink.getvalue())
    row = pa.table(
        {
            "path": [path],
            "size": [len(sink.getvalue())],
            "record_count": [2],
            "modification_time": [int(time.time() * 1000)],
        }
    )
    if PARTITION in t.snapshot().partition_columns:
        row = row.append_column("partition", pa.array([{PARTITION: "a"}]))
    with pytest.raises(RuntimeError), t.transaction() as tx:
        tx.adopt_files(row)
        raise RuntimeError("abort the transaction")
    assert t.storage.exists(path), "an aborted adoption deleted the adopted file"
    try:
        with t.transaction() as tx:
            tx.adopt_files(row)
    except UnsupportedFeatureError as exc:
        # A format may need a table property first (Hudi: its metadata table); it must say.
        pytest.skip(f"this table needs a property to adopt files: {exc}")
    assert read(t) == expect(([1], "a", "a"), ([7, 8], "f", "a"))
    with pytest.raises(InvalidArgumentError), t.transaction() as tx:
        tx.adopt_files(row.set_column(0, "path", pa.array(["../outside.parquet"])))
    assert read(t) == expect(([1], "a", "a"), ([7, 8], "f", "a"))


CHECKS: dict[Capability, Callable[[Table], None]] = {
    Capability.WRITE: _check_write,
    Capability.OVERWRITE: _check_overwrite,
    Capability.DELETE: _check_delete,
    Capability.UPDATE: _check_update,
    Capability.MERGE: _check_merge,
    Capability.UPSERT: _check_upsert,
    Capability.SET_PROPERTIES: _check_set_properties,
    Capability.CONSTRAINTS: _check_constraints,
    Capability.APP_TRANSACTIONS: _check_app_transactions,
    Capability.SCHEMA_EVOLUTION: _check_schema_evolution,
    Capability.SCHEMA_MERGE: _check_schema_merge,
    Capability.SCHEMA_OVERWRITE: _check_schema_overwrite,
    Capability.CHANGE_FEED: _check_change_feed,
    Capability.TIME_TRAVEL_BY_TIMESTAMP: _check_time_travel_by_timestamp,
    Capability.CHECKPOINT: _check_checkpoint,
    Capability.VACUUM: _check_vacuum,
    Capability.RESTORE: _check_restore,
    Capability.OPTIMIZE: _check_optimize,
    Capability.COMPACT: _check_compact,
    Capability.CLEAN: _check_clean,
    Capability.TAGS: _check_tags,
    Capability.PARTITIONING: _check_partitioning,
    Capability.REPLACE_FILES: _check_replace_files,
    Capability.COMMIT_METADATA: _check_commit_metadata,
    Capability.COMMIT_TIMESTAMPS: _check_commit_timestamps,
    Capability.ADOPT_FILES: _check_adopt_files,
}
"""How the contract shows that a declared capability works (on a new, empty table)."""

Refusal = Callable[[Table], Callable[[], object]]
"""Given a table (opened through a CountingStorage), return the call that must be refused;
whatever the preparation reads is not counted."""


def _in_transaction(call: Callable[[Transaction], object]) -> Refusal:
    def prepare(t: Table) -> Callable[[], object]:
        tx = t.transaction()
        return lambda: call(tx)

    return prepare


def _at_latest(call: Callable[[Table, int | str], object]) -> Refusal:
    # The version is read while preparing: only the refused call itself is counted.
    def prepare(t: Table) -> Callable[[], object]:
        version = t.version
        return lambda: call(t, version)

    return prepare


REFUSALS: dict[Capability, Refusal] = {
    Capability.WRITE: lambda t: lambda: t.append(rows([1])),
    Capability.OVERWRITE: lambda t: lambda: t.overwrite(rows([1])),
    Capability.DELETE: lambda t: lambda: t.delete("id = 1"),
    Capability.UPDATE: lambda t: lambda: t.update({"name": "'u'"}, "id = 1"),
    Capability.MERGE: lambda t: lambda: t.merge(rows([1]), on="id"),
    Capability.UPSERT: lambda t: lambda: t.upsert(rows([1])),
    Capability.SET_PROPERTIES: lambda t: lambda: t.set_properties({"k": "v"}),
    Capability.CONSTRAINTS: lambda t: lambda: t.add_constraint("c", "id > 0"),
    Capability.APP_TRANSACTIONS: _in_transaction(lambda tx: tx.set_app_transaction("j", 1)),
    Capability.SCHEMA_EVOLUTION: lambda t: lambda: t.update_schema(),
    Capability.SCHEMA_MERGE: lambda t: lambda: t.append(rows([1]), schema_mode="merge"),
    Capability.SCHEMA_OVERWRITE: lambda t: lambda: t.overwrite(rows([1]), schema_mode="overwrite"),
    Capability.CHANGE_FEED: _at_latest(lambda t, version: t.changes(version)),
    Capability.TIME_TRAVEL_BY_TIMESTAMP: lambda t: lambda: t.snapshot(timestamp=1000),
    Capability.CHECKPOINT: lambda t: lambda: t.checkpoint(),
    Capability.VACUUM: lambda t: lambda: t.vacuum(),
    Capability.RESTORE: _at_latest(lambda t, version: t.restore(version)),
    Capability.OPTIMIZE: lambda t: lambda: t.optimize(),
    Capability.COMPACT: lambda t: lambda: t.compact(),
    Capability.CLEAN: lambda t: lambda: t.clean(),
    Capability.TAGS: lambda t: lambda: t.create_tag("t", 1),
    Capability.PARTITIONING: lambda t: (
        lambda: lakecore.create(t.uri.rstrip("/") + "-partitioned", SCHEMA, t.format, [PARTITION])
    ),
    Capability.REPLACE_FILES: _in_transaction(lambda tx: tx.replace_files([], pa.table({}))),
    Capability.COMMIT_METADATA: lambda t: lambda: t.transaction(app_metadata={"k": "v"}),
    Capability.COMMIT_TIMESTAMPS: lambda t: lambda: t.transaction(timestamp_ms=2_000_000_000_000),
    Capability.ADOPT_FILES: _in_transaction(lambda tx: tx.adopt_files(pa.table({}))),
}
"""The verb of each capability, as the contract calls it on a format that does not declare it."""

ALL_CAPABILITIES = sorted(Capability, key=lambda c: c.value)


class CapabilityContract:
    """Capabilities are honest: each declared one works, each other one is refused before IO."""

    def test_capabilities_are_a_frozenset_of_capability(self, table: Table) -> None:
        assert isinstance(table.capabilities, frozenset)
        assert all(isinstance(c, Capability) for c in table.capabilities)

    def test_declared_capabilities_come_with_their_protocols(self, table: Table) -> None:
        fmt = load_registry().get(table.format)
        declared = fmt.capabilities
        if Capability.WRITE in declared:
            assert isinstance(fmt, WritableFormat)
        maintenance = {c.value for c in declared} & {"checkpoint", "vacuum", "restore", "optimize"}
        if maintenance:
            assert isinstance(fmt, MaintainableFormat), maintenance
        if declared & {Capability.COMPACT, Capability.CLEAN}:
            assert isinstance(fmt, MergeOnReadFormat)
        if Capability.TAGS in declared:
            assert isinstance(fmt, TaggableFormat)

    def test_every_capability_has_a_check_and_a_refusal(self) -> None:
        assert set(CHECKS) == set(REFUSALS) == set(Capability)

    @pytest.mark.parametrize("capability", ALL_CAPABILITIES, ids=lambda c: c.value)
    def test_capability(self, table: Table, capability: Capability) -> None:
        if capability in table.capabilities:
            CHECKS[capability](table)
            return
        if capability is Capability.APP_TRANSACTIONS and Capability.WRITE not in table.capabilities:
            capability = Capability.WRITE  # no transaction to stage in: refused at its start
        if Capability.WRITE in table.capabilities:
            table.append(rows([1]))
        reopened, storage = counted(table)
        call = REFUSALS[capability](reopened)
        storage.reset()
        with pytest.raises(UnsupportedFeatureError) as caught:
            call()
        assert caught.value.feature == capability.value
        assert storage.calls == [], f"{capability.value} was refused only after {storage.calls}"


class FormatContract(
    ReadContract,
    TimeTravelContract,
    WriteContract,
    CommitContract,
    DeleteContract,
    DetectContract,
    CapabilityContract,
):
    """Every suite of the format contract."""


__all__ = [
    "CHECKS",
    "COLUMNS",
    "REFUSALS",
    "SCHEMA",
    "CapabilityContract",
    "CommitContract",
    "DeleteContract",
    "DetectContract",
    "FormatContract",
    "FormatFixtures",
    "ReadContract",
    "TimeTravelContract",
    "WriteContract",
    "content",
    "counted",
    "expect",
    "needs",
    "read",
    "rows",
]
