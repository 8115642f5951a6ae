"""Every write returns a ``WriteResult``: the committed version and the TRUE numbers of what
it wrote, on every format (exact counts on small tables), recorded in Delta's
``commitInfo.operationMetrics`` under Spark's names and equal to deltalake's own metrics for
the same operation on the same rows."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from typer.testing import CliRunner

import lakecore
from lakecore import Table, WriteMetrics, WriteResult
from lakecore.cli import app

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
FORMATS = ["delta", "delta-dv", "hudi-cow", "hudi-mor", "lance"]


def rows(ids: list[int], v: str = "x") -> pa.Table:
    return pa.table({"id": ids, "v": [f"{v}{i}" for i in ids]}, schema=SCHEMA)


def make(kind: str, root: Path) -> Table:
    if kind.startswith("hudi"):
        table_type = "COPY_ON_WRITE" if kind == "hudi-cow" else "MERGE_ON_READ"
        props = {"record_key": "id", "table_type": table_type}
        return lakecore.create(str(root), SCHEMA, format="hudi", properties=props)
    if kind == "delta-dv":
        props = {"delta.enableDeletionVectors": "true"}
        return lakecore.create(str(root), SCHEMA, properties=props)
    return lakecore.create(str(root), SCHEMA, format=kind)


def counts(result: WriteResult) -> tuple[int, ...]:
    """(files added, files removed, inserted, updated, deleted, copied)."""
    m = result
    return (
        m.files_added,
        m.files_removed,
        m.rows_inserted,
        m.rows_updated,
        m.rows_deleted,
        m.rows_copied,
    )


def data_files(table: Table) -> dict[str, int]:
    """Every data file the latest snapshot reads -> its size on disk."""
    index = table.snapshot().files()
    out: dict[str, int] = {}
    lists = (
        index.column("data_files").to_pylist()
        if "data_files" in index.column_names
        else [None] * index.num_rows
    )
    for path, files in zip(index.column("path").to_pylist(), lists, strict=True):
        for p in files or [path]:
            local = Path(table.uri.removeprefix("file://")) / p
            if not local.exists():  # Lance fragments name files under data/
                local = Path(table.uri.removeprefix("file://")) / "data" / p
            out[p] = os.path.getsize(local)
    return out


def checked(table: Table, write: Callable[[], WriteResult]) -> WriteResult:
    """Run ``write``; its files and bytes must be those the table's file index gained and
    lost, its version the table's new version, its seconds positive."""
    before = data_files(table)
    result = write()
    after = data_files(table)
    added = {p: s for p, s in after.items() if p not in before}
    removed = {p: s for p, s in before.items() if p not in after}
    assert (result.files_added, result.bytes_added) == (len(added), sum(added.values()))
    assert (result.files_removed, result.bytes_removed) == (len(removed), sum(removed.values()))
    assert result.version == table.version and result.committed
    assert result.seconds > 0
    return result


# Per format, the operations of ``operations`` as (files +, files -, inserted, updated,
# deleted, copied). Copy-on-write rewrites the file holding a changed row (its other rows are
# copied); deletion vectors, Lance deletion files and Hudi MoR log files leave the old file in
# place. Before the overwrite with where, the live rows are 1 3 4 5 6 7.
EXPECTED: dict[str, list[tuple[int, ...]]] = {
    "delta": [
        (1, 0, 4, 0, 0, 0),
        (1, 0, 2, 0, 0, 0),
        (1, 1, 0, 0, 1, 3),  # [1 2 3 4] -> [1 3 4]
        (1, 1, 0, 1, 0, 2),
        (1, 1, 1, 1, 0, 2),  # one new file: 1 updated, 3 4 copied, 7 inserted
        (1, 2, 2, 0, 3, 3),  # [5 6] goes, [3 4 1 7] -> 1 3 4 copied with 5 8
        (1, 1, 1, 0, 5, 0),
        (0, 1, 0, 0, 1, 0),
    ],
    "delta-dv": [
        (1, 0, 4, 0, 0, 0),
        (1, 0, 2, 0, 0, 0),
        (0, 0, 0, 0, 1, 0),  # a deletion vector: no file added or removed
        (1, 0, 0, 1, 0, 0),
        (1, 0, 1, 1, 0, 0),
        (1, 1, 2, 0, 3, 0),  # [5 6] all deleted: the file goes; 7 by a deletion vector
        (1, 4, 1, 0, 5, 0),
        (0, 1, 0, 0, 1, 0),
    ],
    "hudi-cow": [
        (1, 0, 4, 0, 0, 0),
        (1, 0, 2, 0, 0, 0),
        (1, 1, 0, 0, 1, 3),
        (1, 1, 0, 1, 0, 2),
        (2, 1, 1, 1, 0, 2),  # the insert goes to a new file group
        (1, 2, 2, 0, 3, 0),  # the groups of [5 6] and [7] are replaced
        (1, 2, 1, 0, 5, 0),
        (0, 1, 0, 0, 1, 0),
    ],
    "hudi-mor": [
        (1, 0, 4, 0, 0, 0),
        (1, 0, 2, 0, 0, 0),
        (1, 0, 0, 0, 1, 0),  # a log file with a delete block
        (1, 0, 0, 1, 0, 0),
        (2, 0, 1, 1, 0, 0),
        (1, 2, 2, 0, 3, 0),
        (1, 5, 1, 0, 5, 0),  # a base file and its 3 log files, and [5 8]
        (0, 1, 0, 0, 1, 0),
    ],
    "lance": [
        (1, 0, 4, 0, 0, 0),
        (1, 0, 2, 0, 0, 0),
        (0, 0, 0, 0, 1, 0),  # a deletion file
        (1, 0, 0, 1, 0, 0),
        (1, 0, 1, 1, 0, 0),
        (1, 1, 2, 0, 3, 0),
        (1, 4, 1, 0, 5, 0),
        (0, 1, 0, 0, 1, 0),
    ],
}


def operations(t: Table) -> list[Callable[[], WriteResult]]:
    merge = t.merge(rows([1, 7], "m"), on="id")
    return [
        lambda: t.append(rows([1, 2, 3, 4])),
        lambda: t.append(rows([5, 6])),
        lambda: t.delete("id = 2"),
        lambda: t.update({"v": "'u'"}, "id = 3"),
        lambda: merge.when_matched_update_all().when_not_matched_insert_all().execute(),
        lambda: t.overwrite(rows([5, 8]), "id >= 5"),
        lambda: t.overwrite(rows([9])),
        lambda: t.delete(),
    ]


@pytest.mark.parametrize("kind", FORMATS)
def test_every_write_counts_what_it_wrote(kind: str, tmp_path: Path) -> None:
    t = make(kind, tmp_path / "t")
    ops = operations(t)
    got = [counts(checked(t, op)) for op in ops]
    assert len(got) == 8
    assert got == EXPECTED[kind]
    assert t.count() == 0


@pytest.mark.parametrize("kind", ["delta", "lance"])
def test_optimize_and_restore(kind: str, tmp_path: Path) -> None:
    t = make(kind, tmp_path / "t")
    t.append(rows([1, 2]))
    first = t.version
    t.append(rows([3]))
    t.append(rows([4, 5]))
    opt = checked(t, t.optimize)
    assert counts(opt) == (1, 3, 0, 0, 0, 5)  # five rows rewritten unchanged
    assert opt.operation == "OPTIMIZE"
    restored = checked(t, lambda: t.restore(first))
    assert counts(restored) == (1, 1, 0, 0, 0, 0)  # [1 2] back, the optimized file gone


@pytest.mark.parametrize("kind", ["hudi-mor"])
def test_compaction(kind: str, tmp_path: Path) -> None:
    t = make(kind, tmp_path / "t")
    t.append(rows([1, 2, 3]))
    t.delete("id = 2")
    t.update({"v": "'u'"}, "id = 3")
    result = checked(t, lambda: _compacted(t))
    assert counts(result) == (1, 3, 0, 0, 0, 2)  # base + 2 logs -> one base of 2 rows
    assert result.operation == "COMPACTION"
    assert t.compact() is None


def _compacted(t: Table) -> WriteResult:
    result = t.compact()
    assert result is not None
    return result


@pytest.mark.parametrize("kind", FORMATS)
def test_a_write_that_changes_nothing(kind: str, tmp_path: Path) -> None:
    """Zero counts and no commit (``committed=False``, the current version) on every format,
    as Delta Spark commits nothing for it. Hudi and Lance committed an empty version before
    session 12."""
    t = make(kind, tmp_path / "t")
    t.append(rows([1]))
    before = t.version
    result = t.delete("id = 99")
    assert result.metrics == WriteMetrics()
    assert result.version == t.version
    assert not result.committed
    assert t.version == before


@pytest.mark.parametrize("kind", ["delta", "lance"])  # Hudi: one instant per operation
def test_a_transaction_sums_its_operations(kind: str, tmp_path: Path) -> None:
    t = make(kind, tmp_path / "t")
    t.append(rows([1, 2, 3]))
    with t.transaction() as tx:
        tx.delete("id = 1")
        tx.append(rows([4, 5]))
        staged = tx.metrics
    assert tx.result is not None and tx.result.version == t.version == tx.version
    assert tx.result.metrics == staged
    assert (tx.result.rows_deleted, tx.result.rows_inserted) == (1, 2)
    assert tx.result.operation == "DELETE + WRITE"


def test_result_to_dict_and_export() -> None:
    result = WriteResult.of("1", "WRITE", WriteMetrics(files_added=1, rows_inserted=3), 0.5)
    assert result.to_dict() == {
        "version": "1",
        "operation": "WRITE",
        "files_added": 1,
        "files_removed": 0,
        "rows_inserted": 3,
        "rows_updated": 0,
        "rows_deleted": 0,
        "rows_copied": 0,
        "bytes_added": 0,
        "bytes_removed": 0,
        "seconds": 0.5,
        "committed": True,
    }
    assert json.loads(json.dumps(result.to_dict()))["rows_inserted"] == 3
    assert WriteMetrics(1, 2) + WriteMetrics(rows_copied=4) == WriteMetrics(1, 2, rows_copied=4)
    with pytest.raises(AttributeError):
        result.version = 2  # type: ignore[misc]


# --------------------------------------------------------------- Delta's operationMetrics

SPARK_NAMES: dict[str, dict[str, str]] = {
    "WRITE": {
        "numFiles": "files_added",
        "numOutputBytes": "bytes_added",
    },
    "DELETE": {
        "numAddedFiles": "files_added",
        "numRemovedFiles": "files_removed",
        "numAddedBytes": "bytes_added",
        "numRemovedBytes": "bytes_removed",
        "numDeletedRows": "rows_deleted",
        "numCopiedRows": "rows_copied",
    },
    "UPDATE": {
        "numAddedFiles": "files_added",
        "numRemovedFiles": "files_removed",
        "numUpdatedRows": "rows_updated",
        "numCopiedRows": "rows_copied",
    },
    "MERGE": {
        "numTargetRowsInserted": "rows_inserted",
        "numTargetRowsUpdated": "rows_updated",
        "numTargetRowsDeleted": "rows_deleted",
        "numTargetRowsCopied": "rows_copied",
        "numTargetFilesAdded": "files_added",
        "numTargetFilesRemoved": "files_removed",
        "numTargetBytesAdded": "bytes_added",
        "numTargetBytesRemoved": "bytes_removed",
    },
}


@pytest.mark.parametrize("kind", ["delta", "delta-dv"])
def test_delta_commit_info_records_the_metrics(kind: str, tmp_path: Path) -> None:
    deltalake = pytest.importorskip("deltalake")
    t = make(kind, tmp_path / "t")
    results = [op() for op in operations(t)[:5]]
    history = {h["version"]: h for h in deltalake.DeltaTable(str(tmp_path / "t")).history()}
    checked_names = 0
    for result in results:
        recorded = history[result.version]["operationMetrics"]
        assert recorded["executionTimeMs"].isdigit()
        for spark, ours in SPARK_NAMES[result.operation].items():
            assert recorded[spark] == str(getattr(result, ours)), (result.operation, spark)
            checked_names += 1
    assert checked_names == 2 + 2 + 6 + 4 + 8
    latest = t.history(1)[0].info["operationMetrics"]
    assert latest["numTargetRowsInserted"] == "1"


def test_delta_metrics_equal_deltalakes(tmp_path: Path) -> None:
    """The same operations by deltalake and by lakecore on the same rows: the same counts
    (bytes differ: two Parquet writers)."""
    deltalake = pytest.importorskip("deltalake")
    theirs_path = str(tmp_path / "theirs")
    deltalake.write_deltalake(theirs_path, rows([1, 2, 3, 4]))
    deltalake.write_deltalake(theirs_path, rows([5, 6]), mode="append")
    dt = deltalake.DeltaTable(theirs_path)
    their_delete = dt.delete("id = 2")
    their_update = dt.update(updates={"v": "'u'"}, predicate="id = 3")
    their_merge = (
        dt.merge(rows([1, 7], "m"), "s.id = t.id", source_alias="s", target_alias="t")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    t = make("delta", tmp_path / "ours")
    ours = [op() for op in operations(t)[:5]]
    delete, update, merge = ours[2], ours[3], ours[4]
    pairs: list[tuple[Any, int]] = [
        (their_delete["num_added_files"], delete.files_added),
        (their_delete["num_removed_files"], delete.files_removed),
        (their_delete["num_deleted_rows"], delete.rows_deleted),
        (their_delete["num_copied_rows"], delete.rows_copied),
        (their_update["num_added_files"], update.files_added),
        (their_update["num_removed_files"], update.files_removed),
        (their_update["num_updated_rows"], update.rows_updated),
        (their_update["num_copied_rows"], update.rows_copied),
        (their_merge["num_target_rows_inserted"], merge.rows_inserted),
        (their_merge["num_target_rows_updated"], merge.rows_updated),
        (their_merge["num_target_rows_deleted"], merge.rows_deleted),
        (their_merge["num_target_rows_copied"], merge.rows_copied),
        (their_merge["num_target_files_added"], merge.files_added),
        (their_merge["num_target_files_removed"], merge.files_removed),
    ]
    assert [a for a, _ in pairs] == [b for _, b in pairs]
    assert len(pairs) == 14


def test_cli_write_commands_print_the_metrics(tmp_path: Path) -> None:
    t = make("delta", tmp_path / "t")
    t.append(rows([1, 2]))
    t.append(rows([3]))
    result = CliRunner().invoke(app, ["optimize", t.uri, "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["metrics"]["files_removed"] == 2 and doc["metrics"]["rows_copied"] == 3
    result = CliRunner().invoke(app, ["restore", t.uri, "1"])
    assert result.exit_code == 0, result.output
    assert "files: +1 -1" in result.stdout and "0 copied" in result.stdout
