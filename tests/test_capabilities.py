"""Capabilities: what each format declares, and that every Table verb checks its capability
before any storage call (``UnsupportedFeatureError`` naming it)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from lakecore_delta.format import DeltaFormat

import lakecore
from lakecore.format import Capability, MaintainableFormat, MergeOnReadFormat, WritableFormat
from lakecore.plugins import load_registry
from lakecore.testing.faults import CountingStorage

SCHEMA = pa.schema([("id", pa.int64()), ("part", pa.string())])
ROWS = pa.table({"id": [1, 2], "part": ["a", "b"]})


class DeclaresNothing:
    """Reads like Delta but declares no capability (a read-only format)."""

    capabilities: frozenset[Capability] = frozenset()

    def __init__(self) -> None:
        self._inner = DeltaFormat()
        self.name = "delta"

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _tx(call: Callable[[lakecore.Table, Any], object]) -> Callable[[lakecore.Table], object]:
    # A verb inside a transaction: the transaction is started first (it reads the table),
    # then the counting restarts, so only the staging call itself is judged.
    def run(table: lakecore.Table) -> object:
        return call(table, table.transaction())

    return run


VERBS: list[tuple[Capability, str, Callable[[lakecore.Table], object]]] = [
    (Capability.WRITE, "append", lambda t: t.append(ROWS)),
    (Capability.WRITE, "transaction", lambda t: t.transaction()),
    (Capability.OVERWRITE, "overwrite", lambda t: t.overwrite(ROWS)),
    (Capability.DELETE, "delete", lambda t: t.delete("id = 1")),
    (Capability.UPDATE, "update", lambda t: t.update({"part": "'c'"}, "id = 1")),
    (Capability.UPSERT, "upsert", lambda t: t.upsert(ROWS)),
    (Capability.MERGE, "merge", lambda t: t.merge(ROWS, on="id")),
    (Capability.SET_PROPERTIES, "set_properties", lambda t: t.set_properties({"k": "v"})),
    (Capability.CONSTRAINTS, "add_constraint", lambda t: t.add_constraint("c", "id > 0")),
    (Capability.CONSTRAINTS, "drop_constraint", lambda t: t.drop_constraint("c")),
    (Capability.SCHEMA_EVOLUTION, "update_schema", lambda t: t.update_schema()),
    (Capability.SCHEMA_MERGE, "append(schema_mode)", lambda t: t.append(ROWS, schema_mode="merge")),
    (
        Capability.SCHEMA_OVERWRITE,
        "overwrite(schema_mode)",
        lambda t: t.overwrite(ROWS, schema_mode="overwrite"),
    ),
    (Capability.CHANGE_FEED, "changes", lambda t: t.changes(0)),
    (Capability.TIME_TRAVEL_BY_TIMESTAMP, "snapshot", lambda t: t.snapshot(timestamp=0)),
    (Capability.TIME_TRAVEL_BY_TIMESTAMP, "scan", lambda t: t.scan(timestamp=0)),
    (Capability.CHECKPOINT, "checkpoint", lambda t: t.checkpoint()),
    (Capability.VACUUM, "vacuum", lambda t: t.vacuum()),
    (Capability.RESTORE, "restore", lambda t: t.restore(0)),
    (Capability.OPTIMIZE, "optimize", lambda t: t.optimize()),
    (Capability.COMPACT, "compact", lambda t: t.compact()),
    (Capability.CLEAN, "clean", lambda t: t.clean()),
    (Capability.TAGS, "tags", lambda t: t.tags()),
    (Capability.TAGS, "create_tag", lambda t: t.create_tag("nightly", 0)),
    (Capability.TAGS, "delete_tag", lambda t: t.delete_tag("nightly")),
]
TX_VERBS: list[tuple[Capability, str, Callable[[lakecore.Table, Any], object]]] = [
    (Capability.OVERWRITE, "tx.overwrite", lambda t, tx: tx.overwrite(ROWS)),
    (
        Capability.SCHEMA_MERGE,
        "tx.append(schema_mode)",
        lambda t, tx: tx.append(ROWS, schema_mode="merge"),
    ),
    (Capability.DELETE, "tx.delete", lambda t, tx: tx.delete("id = 1")),
    (Capability.UPDATE, "tx.update", lambda t, tx: tx.update({"part": "'c'"})),
    (
        Capability.APP_TRANSACTIONS,
        "tx.set_app_transaction",
        lambda t, tx: tx.set_app_transaction("j", 1),
    ),
    (Capability.REPLACE_FILES, "tx.replace_files", lambda t, tx: tx.replace_files([], ROWS)),
    (Capability.ADOPT_FILES, "tx.adopt_files", lambda t, tx: tx.adopt_files(ROWS)),
    (
        Capability.COMMIT_METADATA,
        "transaction(app_metadata=)",
        lambda t, tx: t.transaction(app_metadata={"k": "v"}),
    ),
    (
        Capability.COMMIT_TIMESTAMPS,
        "transaction(timestamp_ms=)",
        lambda t, tx: t.transaction(timestamp_ms=1),
    ),
]


@pytest.fixture
def delta_root(tmp_path: Path) -> str:
    root = str(tmp_path / "t")
    lakecore.create(root, SCHEMA, partition_by=["part"]).append(ROWS)
    return root


def test_every_capability_has_a_verb_here() -> None:
    covered = {c for c, _, _ in VERBS} | {c for c, _, _ in TX_VERBS}
    # partitioning gates lakecore.create, not a Table verb: test_create_refuses_partitions_...
    assert covered | {Capability.PARTITIONING} == set(Capability)


@pytest.mark.parametrize(("capability", "verb", "call"), VERBS, ids=[v for _, v, _ in VERBS])
def test_undeclared_capability_is_refused_before_any_storage_call(
    delta_root: str, capability: Capability, verb: str, call: Callable[[lakecore.Table], object]
) -> None:
    storage = CountingStorage(lakecore.open(delta_root).storage)
    table = lakecore.Table(delta_root, storage, DeclaresNothing())  # type: ignore[arg-type]
    storage.reset()
    with pytest.raises(lakecore.UnsupportedFeatureError) as caught:
        call(table)
    assert caught.value.feature == capability.value
    assert capability.value in str(caught.value)
    assert storage.calls == []


@pytest.mark.parametrize(("capability", "verb", "call"), TX_VERBS, ids=[v for _, v, _ in TX_VERBS])
def test_undeclared_capability_is_refused_inside_a_transaction(
    delta_root: str,
    capability: Capability,
    verb: str,
    call: Callable[[lakecore.Table, Any], object],
) -> None:
    storage = CountingStorage(lakecore.open(delta_root).storage)
    declares = DeclaresNothing()
    declares.capabilities = frozenset({Capability.WRITE})
    table = lakecore.Table(delta_root, storage, declares)  # type: ignore[arg-type]
    tx = table.transaction()
    storage.reset()
    with pytest.raises(lakecore.UnsupportedFeatureError) as caught:
        call(table, tx)
    assert caught.value.feature == capability.value
    assert storage.calls == []


@pytest.mark.parametrize(
    ("fmt", "verb", "capability"),
    [
        ("delta", lambda t: t.upsert(ROWS), Capability.UPSERT),
        ("delta", lambda t: t.compact(), Capability.COMPACT),
        ("delta", lambda t: t.clean(), Capability.CLEAN),
        ("hudi", lambda t: t.set_properties({"k": "v"}), Capability.SET_PROPERTIES),
        ("hudi", lambda t: t.add_constraint("c", "id > 0"), Capability.CONSTRAINTS),
        ("hudi", lambda t: t.checkpoint(), Capability.CHECKPOINT),
        ("hudi", lambda t: t.vacuum(), Capability.VACUUM),
        ("hudi", lambda t: t.restore("0"), Capability.RESTORE),
        ("hudi", lambda t: t.optimize(), Capability.OPTIMIZE),
        (
            "hudi",
            lambda t: t.overwrite(ROWS, schema_mode="overwrite"),
            Capability.SCHEMA_OVERWRITE,
        ),
    ],
    ids=lambda v: v.value if isinstance(v, Capability) else None,
)
def test_real_formats_refuse_what_they_do_not_declare(
    tmp_path: Path, fmt: str, verb: Callable[[lakecore.Table], object], capability: Capability
) -> None:
    root = str(tmp_path / "t")
    properties = {"record_key": "id"} if fmt == "hudi" else {}
    lakecore.create(root, SCHEMA, fmt, ["part"], properties).append(ROWS)
    storage = CountingStorage(lakecore.open(root).storage)
    table = lakecore.open(root, storage=storage)
    storage.reset()
    with pytest.raises(lakecore.UnsupportedFeatureError) as caught:
        verb(table)
    assert caught.value.feature == capability.value
    assert storage.calls == []
    assert capability not in table.capabilities


def test_declared_capabilities() -> None:
    registry = load_registry()
    delta, hudi = registry.get("delta"), registry.get("hudi")
    assert Capability.UPSERT not in delta.capabilities
    assert {Capability.COMPACT, Capability.CLEAN} & delta.capabilities == set()
    assert {Capability.CONSTRAINTS, Capability.CHECKPOINT} <= delta.capabilities
    assert {Capability.UPSERT, Capability.COMPACT, Capability.CLEAN} <= hudi.capabilities
    assert Capability.SCHEMA_EVOLUTION in hudi.capabilities


def test_declared_capabilities_come_with_their_protocols() -> None:
    registry = load_registry()
    checked = 0
    for fmt in registry.formats():
        declared = fmt.capabilities
        assert isinstance(declared, frozenset)
        assert all(isinstance(c, Capability) for c in declared)
        if Capability.WRITE in declared:
            assert isinstance(fmt, WritableFormat)
        maintenance = {Capability.CHECKPOINT, Capability.VACUUM, Capability.RESTORE}
        if declared & (maintenance | {Capability.OPTIMIZE}):
            assert isinstance(fmt, MaintainableFormat)
        if declared & {Capability.COMPACT, Capability.CLEAN}:
            assert isinstance(fmt, MergeOnReadFormat)
        checked += 1
    assert checked >= 2


def test_create_refuses_a_format_without_write(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import lakecore_delta.format as delta_format

    monkeypatch.setattr(delta_format.DeltaFormat, "capabilities", frozenset())
    with pytest.raises(lakecore.UnsupportedFeatureError) as caught:
        lakecore.create(str(tmp_path / "t"), SCHEMA)
    assert caught.value.feature == "write"
    assert not (tmp_path / "t").exists()


def test_create_refuses_partitions_for_a_format_without_partitioning(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import lakecore_delta.format as delta_format

    monkeypatch.setattr(delta_format.DeltaFormat, "capabilities", frozenset({Capability.WRITE}))
    with pytest.raises(lakecore.UnsupportedFeatureError) as caught:
        lakecore.create(str(tmp_path / "t"), SCHEMA, partition_by=["part"])
    assert caught.value.feature == "partitioning"
    assert not (tmp_path / "t").exists()
    lakecore.create(str(tmp_path / "u"), SCHEMA)  # unpartitioned: fine
