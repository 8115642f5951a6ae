"""Random sequences of writes and maintenance against a model, in every format.

A hypothesis state machine drives one table per example (Delta plain, with deletion vectors
and with column mapping, all with the change data feed; Hudi copy-on-write, merge-on-read
and a version-6 merge-on-read table; Lance) through random inserts, deletes,
updates, merges, partition overwrites, restores and maintenance (checkpoint, optimize,
compact, vacuum, clean), keeping a model: the rows after every version. After every step:

- lakecore reads exactly the model's rows at the latest version;
- a version still readable (not vacuumed or cleaned away) reads exactly its rows then;
- the change feed of the last commit turns the rows before it into the rows after it;
- a migration (with history, incremental) into each other format reads every translated
  version's rows;
- at the end the reference reader (delta-rs, hudi-rs, pylance) reads the model's rows.

Values are chosen so every format's semantics agree: a record's partition (``city``) follows
from its key, and ordering values (``ts``) only grow, so Hudi's pre-combine keeps the newest
write as the others do. The default run takes a few examples per table kind; ``-m slow`` many.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import lakecore
from lakecore.errors import (
    CommitConflictError,
    CorruptTableError,
    MigrationError,
    VersionNotFoundError,
)
from lakecore.format.capabilities import Capability
from lakecore.table import Table
from tests.hudi.write.helpers import hudi_rs_table

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("name", pa.string()),
        pa.field("ts", pa.int64()),
        pa.field("city", pa.string()),
        # Payload that rewrites (copy-on-write, deletion vectors, MoR log blocks in Avro,
        # Lance fragments) must carry through unchanged: a value of each kind, some null.
        pa.field("amount", pa.decimal128(12, 2)),
        pa.field("at", pa.timestamp("us", tz="UTC")),
        pa.field("day", pa.date32()),
        pa.field("tags", pa.list_(pa.string())),
        pa.field("info", pa.struct([("a", pa.int32()), ("b", pa.float64())])),
    ]
)
Row = dict[str, Any]
WHERES: list[tuple[str, Callable[[Row, int], bool]]] = [
    ("id = {k}", lambda r, k: r["id"] == k),
    ("id < {k}", lambda r, k: r["id"] < k),
    ("city = 'x'", lambda r, k: r["city"] == "x"),
    ("id % 3 = 1", lambda r, k: r["id"] % 3 == 1),
    ("ts > {k}00", lambda r, k: r["ts"] is not None and r["ts"] > k * 100),
    ("name IS NULL", lambda r, k: r["name"] is None),
]
KINDS = ("delta", "delta-dv", "delta-cm", "hudi-cow", "hudi-mor", "hudi-mor-v6", "lance")
RAN: dict[str, int] = dict.fromkeys(KINDS, 0)
MIGRATED: dict[str, int] = dict.fromkeys(("delta", "hudi", "lance"), 0)
"""Source versions checked in each migration target format."""
"""Steps run per kind, checked by the last test (a machine that runs nothing must fail)."""


def payload(key: int) -> Row:
    """The payload columns of record ``key`` (fixed per key: updates change name and ts)."""
    if key % 5 == 4:
        return {"amount": None, "at": None, "day": None, "tags": None, "info": None}
    return {
        "amount": decimal.Decimal(key * 137 - 500) / 100,
        "at": dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(seconds=key * 3601),
        "day": dt.date(1999, 12, 31) + dt.timedelta(days=key * 40),
        "tags": [f"t{key}", None][: key % 3],
        "info": {"a": key, "b": None if key % 2 else key / 4},
    }


def city(key: int) -> str:
    """A record's partition follows from its key (Hudi's non-global index keeps a key in one
    partition; a model of moving keys would differ between formats)."""
    return "x" if key % 2 else "y"


def make(kind: str, root: Path) -> Table:
    if kind.startswith("delta"):
        props = {"delta.checkpointInterval": "3", "delta.enableChangeDataFeed": "true"}
        if kind == "delta-dv":
            props["delta.enableDeletionVectors"] = "true"
        if kind == "delta-cm":
            props["delta.columnMapping.mode"] = "name"
        return lakecore.create(str(root), SCHEMA, "delta", ["city"], props)
    if kind == "lance":
        return lakecore.create(str(root), SCHEMA, "lance")
    props = {
        "record_key": "id",
        "precombine_field": "ts",
        "table_type": "COPY_ON_WRITE" if kind == "hudi-cow" else "MERGE_ON_READ",
        "table_version": "6" if kind.endswith("v6") else "8",
        "hive_style_partitioning": "true",
    }
    return lakecore.create(str(root), SCHEMA, "hudi", ["city"], props)


def as_rows(table: pa.Table) -> list[str]:
    return sorted(as_rows_unsorted(table))


def model_rows(model: dict[int, Row]) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in model.values())


def peer_read(kind: str, root: Path) -> pa.Table:
    if kind.startswith("delta"):
        import deltalake

        # delta-rs's kernel scan: its pyarrow path refuses deletion vectors.
        return pa.table(deltalake.DeltaTable(str(root)).scan().read_all())
    if kind == "lance":
        import lance

        return lance.dataset(str(root)).to_table()
    return hudi_rs_table(root)


class Sequences(RuleBasedStateMachine):
    kind = "delta"

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix=f"lakecore-seq-{self.kind}-"))
        self.root = self.dir / "t"
        self.table = make(self.kind, self.root)
        self.model: dict[int, Row] = {}
        # A new Hudi table's version is "" until its first commit, which is not a completed
        # instant to travel back to; the other formats' creation is a readable version.
        created = self.table.version
        self.history: dict[int | str, list[str]] = {created: []} if created != "" else {}
        self.clock = 10  # ordering values only grow (see the module docstring)
        self.last: tuple[int | str | None, int | str] | None = None
        """(previous version, version) of the last commit, for the change feed check."""
        self.next_id = 0
        self.stuck: set[str] = set()
        """Migration targets that refused to go on (see ``migrate_out``)."""
        self.forgotten = False
        self.restored_schema = False
        self.extras: list[str] = []
        """Columns added by schema evolution (int64, nullable), in order."""
        self.columns_at: dict[int | str, list[str]] = {created: []}

    def teardown(self) -> None:
        try:
            if self.history:
                assert as_rows(peer_read(self.kind, self.root)) == model_rows(self.model)
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    def _can(self, capability: Capability) -> bool:
        return capability in self.table.capabilities

    def _tick(self) -> int:
        self.clock += 100
        return self.clock

    def _rows(self, keys: list[int], name: str | None) -> pa.Table:
        ts = self._tick()
        rows = [
            {
                "id": k,
                "name": name,
                "ts": ts,
                "city": city(k),
                **payload(k),
                **dict.fromkeys(self.extras, k),
            }
            for k in keys
        ]
        schema = pa.schema([*SCHEMA, *(pa.field(c, pa.int64()) for c in self.extras)])
        return pa.Table.from_pylist(rows, schema=schema)

    def _committed(self) -> None:
        RAN[self.kind] += 1
        previous = list(self.history)[-1] if self.history else None
        self.history[self.table.version] = model_rows(self.model)
        self.columns_at[self.table.version] = list(self.extras)
        changed = previous is not None and previous != self.table.version
        self.last = (previous, self.table.version) if changed else None

    def _where(self, which: int, k: int) -> tuple[str, Callable[[Row], bool]]:
        text, test = WHERES[which]
        return text.format(k=k), (lambda r: test(r, k))

    @initialize(n=st.integers(1, 6), name=st.sampled_from(["a", None]))
    def first(self, n: int, name: str | None) -> None:
        self.insert(n, name)

    @rule(n=st.integers(1, 6), name=st.sampled_from(["a", "b", None]))
    def insert(self, n: int, name: str | None) -> None:
        keys = list(range(self.next_id, self.next_id + n))
        self.next_id += n
        data = self._rows(keys, name)
        self.table.append(data)
        self.model.update({r["id"]: r for r in data.to_pylist()})
        self._committed()

    @rule(which=st.integers(0, len(WHERES) - 1), k=st.integers(0, 30))
    def delete(self, which: int, k: int) -> None:
        where, test = self._where(which, k)
        self.table.delete(where)
        self.model = {i: r for i, r in self.model.items() if not test(r)}
        self._committed()

    @rule(which=st.integers(0, len(WHERES) - 1), k=st.integers(0, 30))
    def update(self, which: int, k: int) -> None:
        where, test = self._where(which, k)
        self.table.update({"name": "'u'", "ts": "ts + 1"}, where)
        for r in self.model.values():
            if test(r):
                r.update(name="u", ts=None if r["ts"] is None else r["ts"] + 1)
        self.model = {i: dict(r) for i, r in self.model.items()}
        self._committed()

    @rule(old=st.lists(st.integers(0, 40), max_size=4, unique=True), new=st.integers(0, 3))
    def merge(self, old: list[int], new: int) -> None:
        keys = [k for k in old if k < self.next_id] + list(range(self.next_id, self.next_id + new))
        self.next_id += new
        data = self._rows(keys, "m")
        if self.kind.startswith("hudi"):
            self.table.upsert(data)
        else:
            (
                self.table.merge(data, on="id")
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .execute()
            )
        self.model.update({r["id"]: r for r in data.to_pylist()})
        self._committed()

    @precondition(lambda self: Capability.OVERWRITE in self.table.capabilities)
    @rule(n=st.integers(0, 3))
    def overwrite_partition(self, n: int) -> None:
        keys = [k for k in range(self.next_id, self.next_id + 2 * n) if city(k) == "x"]
        self.next_id += 2 * n
        data = self._rows(keys, "o")
        self.table.overwrite(data, where="city = 'x'")
        self.model = {i: r for i, r in self.model.items() if r["city"] != "x"}
        self.model.update({r["id"]: r for r in data.to_pylist()})
        self._committed()

    @precondition(lambda self: Capability.RESTORE in self.table.capabilities)
    @rule(back=st.integers(1, 5))
    def restore(self, back: int) -> None:
        versions = list(self.history)
        if len(versions) <= back:
            return
        target = versions[-1 - back]
        self.table.restore(target)
        self.model = {r["id"]: r for r in map(json.loads, self.history[target])}
        self.restored_schema |= self.extras != self.columns_at[target]
        self.extras = list(self.columns_at[target])  # a restore brings its schema back too
        self._committed()

    @rule(step=st.sampled_from(["checkpoint", "optimize", "compact"]))
    def maintain(self, step: str) -> None:
        capability = {
            "checkpoint": Capability.CHECKPOINT,
            "optimize": Capability.OPTIMIZE,
            "compact": Capability.COMPACT,
        }[step]
        if not self._can(capability):
            return
        result = getattr(self.table, step)()
        if step != "checkpoint" and result is not None:
            self._committed()  # a new version with the same rows

    @precondition(lambda self: len(self.extras) < 3)
    @rule()
    def add_column(self) -> None:
        name = f"extra{len(self.extras)}"
        with self.table.update_schema() as schema:
            schema.add_column(name, pa.int64())
        self.extras.append(name)
        self.model = {i: {**r, name: None} for i, r in self.model.items()}
        self._committed()

    @rule(to=st.sampled_from(["delta", "hudi", "lance"]))
    def migrate_out(self, to: str) -> None:
        """Migrate (with history, incrementally) into a ``to`` table beside the source: each
        source version it translates reads the model's rows of that version in the target."""
        source_format = self.kind.split("-")[0]
        if to == source_format or to in self.stuck:
            return
        target = self.dir / f"migrated-{to}"
        try:
            report = lakecore.migrate(str(self.root), str(target), to, history=True)
        except (MigrationError, VersionNotFoundError, CorruptTableError) as exc:
            # A typed refusal leaves the target as it was; a source version it would need
            # may have been vacuumed, or a schema change the target cannot replay (dropping
            # a column) may have come with a restore.
            assert self.forgotten or self.restored_schema, f"{to}: {exc}"
            self.stuck.add(to)
            return
        migrated = lakecore.open(str(target))
        checked = 0
        for source_version, target_version in report.versions:
            if source_version in self.history:
                rows = as_rows(migrated.snapshot(target_version).to_arrow())
                assert rows == self.history[source_version], (to, source_version)
                checked += 1
        assert as_rows(migrated.to_arrow()) == model_rows(self.model), to
        MIGRATED[to] += checked

    @rule()
    def forget_history(self) -> None:
        """Vacuum (Delta, Lance) or clean (Hudi) with no retention: older versions may no
        longer read, so only the latest stays in the model's history."""
        if self._can(Capability.VACUUM):
            self.table.vacuum(0, dry_run=False, enforce_retention=False)
        elif self._can(Capability.CLEAN):
            self.table.clean(1)
        else:
            return
        latest = self.table.version
        self.history = {latest: self.history[latest]}
        self.last = None
        self.forgotten = True

    def _op(
        self, kind: str, which: int, k: int, n: int
    ) -> tuple[Callable[[Any], object], Callable[[dict[int, Row]], dict[int, Row]]]:
        """One operation of a race: how a table (or transaction) runs it, and its effect on
        the model's rows."""
        if kind == "append":
            keys = list(range(self.next_id, self.next_id + n))
            self.next_id += n
            data = self._rows(keys, "r")
            new = {r["id"]: r for r in data.to_pylist()}
            return (lambda t: t.append(data)), (lambda m: {**m, **new})
        where, test = self._where(which, k)
        if kind == "delete":
            return (lambda t: t.delete(where)), (
                lambda m: {i: r for i, r in m.items() if not test(r)}
            )
        assignments = {"name": "'c'", "ts": "ts + 1"}

        def updated(m: dict[int, Row]) -> dict[int, Row]:
            return {
                i: {**r, "name": "c", "ts": None if r["ts"] is None else r["ts"] + 1}
                if test(r)
                else r
                for i, r in m.items()
            }

        return (lambda t: t.update(assignments, where)), updated

    @rule(
        kinds=st.tuples(*[st.sampled_from(["append", "delete", "update"])] * 2),
        which=st.tuples(*[st.integers(0, len(WHERES) - 1)] * 2),
        k=st.tuples(*[st.integers(0, 30)] * 2),
        n=st.integers(1, 3),
    )
    def race(
        self, kinds: tuple[str, str], which: tuple[int, int], k: tuple[int, int], n: int
    ) -> None:
        """Two writers: the second stages its operation on the snapshot before the first
        commits, then commits. It must either be refused (``CommitConflictError``) or give
        the rows of one serial order of the two; an acknowledged write is never lost."""
        first, first_model = self._op(kinds[0], which[0], k[0], n)
        second, second_model = self._op(kinds[1], which[1], k[1], n)
        before = self.model
        tx = self.table.transaction()
        tx.__enter__()
        try:
            second(tx)
        except BaseException as exc:
            tx.__exit__(type(exc), exc, exc.__traceback__)
            raise
        first(lakecore.open(str(self.root)))
        self.model = first_model(before)
        self._committed()
        try:
            tx.__exit__(None, None, None)
        except CommitConflictError:
            return
        if tx.result is None:  # the second operation staged nothing
            return
        now = as_rows(lakecore.open(str(self.root)).to_arrow())
        orders = [second_model(self.model), first_model(second_model(before))]
        serial = [m for m in orders if model_rows(m) == now]
        assert serial, f"{kinds[1]} racing a {kinds[0]}: the rows are in no serial order"
        self.model = serial[0]
        self._committed()

    @invariant()
    def reads_the_model(self) -> None:
        if not RAN[self.kind]:
            return
        fresh = lakecore.open(str(self.root))
        assert fresh.version == list(self.history)[-1]
        assert as_rows(fresh.to_arrow()) == model_rows(self.model)
        for version in list(self.history)[-4:-1]:
            assert as_rows(fresh.snapshot(version).to_arrow()) == self.history[version], version
        if self.last is not None:
            before, version = self.last
            assert before is not None
            changes = fresh.changes(version, version)
            # The feed is in the end version's columns: the rows before it are projected so.
            columns = [*SCHEMA.names, *self.columns_at[version]]
            was = [
                json.dumps({c: json.loads(r).get(c) for c in columns}, sort_keys=True)
                for r in self.history[before]
            ]
            assert apply_changes(sorted(was), changes) == self.history[version]


def apply_changes(rows: list[str], changes: pa.Table) -> list[str]:
    """``rows`` with the change feed applied: deletes and pre-images must be there."""
    out = Counter(rows)
    kinds = changes.column("_change_type").to_pylist()
    for kind, row in zip(kinds, as_rows_unsorted(changes), strict=True):
        if kind in ("delete", "update_preimage"):
            assert out[row] > 0, f"the feed deletes a row that is not there: {row}"
            out[row] -= 1
        else:
            assert kind in ("insert", "update_postimage"), kind
            out[row] += 1
    return sorted(out.elements())


def as_rows_unsorted(table: pa.Table) -> list[str]:
    """Rows as JSON texts, without system columns (Hudi's meta fields, the change feed's)."""
    system = ("_hoodie_", "_change_type", "_commit_version", "_commit_timestamp")
    data = table.drop_columns([c for c in table.column_names if c.startswith(system)])
    return [json.dumps(r, sort_keys=True, default=str) for r in data.to_pylist()]


def _machine(kind: str) -> type[Sequences]:
    return type(f"Sequences_{kind.replace('-', '_')}", (Sequences,), {"kind": kind})


def _run(kind: str, examples: int, steps: int) -> None:
    from hypothesis.stateful import run_state_machine_as_test

    run_state_machine_as_test(
        _machine(kind),
        settings=settings(
            max_examples=examples,
            stateful_step_count=steps,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        ),
    )


@pytest.mark.parametrize("kind", KINDS)
def test_random_sequences_read_the_model(kind: str) -> None:
    _run(kind, examples=3, steps=8)


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_many_random_sequences_read_the_model(kind: str) -> None:
    _run(kind, examples=40, steps=20)


@pytest.mark.parametrize("kind", KINDS)
def test_a_fixed_sequence_migrates_into_every_format(kind: str) -> None:
    """The random runs reach ``migrate_out`` by chance; this sequence always does, twice
    (the second run incremental), after an update, a delete and a merge."""
    machine = _machine(kind)()
    try:
        machine.first(3, "a")
        machine.update(0, 1)
        machine.delete(3, 0)
        machine.merge([0, 2], 2)
        for to in ("delta", "hudi", "lance"):
            machine.migrate_out(to)
        machine.insert(2, "b")
        machine.update(2, 0)
        for to in ("delta", "hudi", "lance"):
            machine.migrate_out(to)
        machine.reads_the_model()
    finally:
        machine.teardown()


def test_every_kind_ran_steps() -> None:
    assert all(RAN[kind] >= 6 for kind in KINDS), RAN
    assert all(MIGRATED[to] >= 10 for to in MIGRATED), MIGRATED
