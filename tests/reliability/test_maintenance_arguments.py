"""Invalid maintenance (and history) arguments are refused with a typed error before any work.

``InvalidArgumentError`` is a ``LakecoreError`` and a ``ValueError``; the table's files are
unchanged (nothing listed, read for the operation, or written), checked with a storage that
counts calls.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lakecore
from lakecore.errors import InvalidArgumentError, LakecoreError
from lakecore.storage import open_storage
from lakecore.table import Table
from lakecore.testing.faults import FaultyStorage
from tests.hudi.write.helpers import create as create_hudi
from tests.hudi.write.helpers import rows as hudi_rows

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])

DELTA_CASES: list[tuple[str, Callable[[Table], Any]]] = [
    ("vacuum-negative", lambda t: t.vacuum(-1, dry_run=False, enforce_retention=False)),
    ("vacuum-nan", lambda t: t.vacuum(math.nan, dry_run=False, enforce_retention=False)),
    ("vacuum-inf", lambda t: t.vacuum(math.inf, dry_run=False)),
    ("vacuum-text", lambda t: t.vacuum("168", dry_run=False)),  # type: ignore[arg-type]
    ("vacuum-bool", lambda t: t.vacuum(True, dry_run=False)),
    ("optimize-zero", lambda t: t.optimize(0)),
    ("optimize-negative", lambda t: t.optimize(-5)),
    ("optimize-float", lambda t: t.optimize(1.5)),  # type: ignore[arg-type]
    ("optimize-bool", lambda t: t.optimize(True)),
    ("history-negative", lambda t: t.history(-1)),  # was: every entry but the oldest
    ("history-text", lambda t: t.history("3")),  # type: ignore[arg-type]
]
HUDI_CASES: list[tuple[str, Callable[[Table], Any]]] = [
    ("clean-zero", lambda t: t.clean(0)),
    ("clean-negative", lambda t: t.clean(-3)),
    ("clean-float", lambda t: t.clean(1.5)),  # type: ignore[arg-type]
    ("clean-text", lambda t: t.clean("2")),  # type: ignore[arg-type]
    ("clean-bool", lambda t: t.clean(True)),
]


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _refused_before_any_work(root: Path, call: Callable[[Table], Any]) -> None:
    faulty = FaultyStorage(open_storage(str(root)))
    table = lakecore.open(str(root), storage=faulty)
    before = _tree(root)
    faulty.reset()
    with pytest.raises(InvalidArgumentError) as caught:
        call(table)
    assert isinstance(caught.value, LakecoreError) and isinstance(caught.value, ValueError)
    assert faulty.calls == [], "refused only after touching the storage"
    assert _tree(root) == before


@pytest.mark.parametrize(("name", "call"), DELTA_CASES, ids=[n for n, _ in DELTA_CASES])
def test_delta_maintenance_arguments(
    tmp_path: Path, name: str, call: Callable[[Table], Any]
) -> None:
    root = tmp_path / "t"
    table = lakecore.create(str(root), SCHEMA, partition_by=["p"])
    table.append(pa.table({"id": [1, 2], "p": ["a", "b"]}))
    table.delete("id = 1")
    _refused_before_any_work(root, call)


@pytest.mark.parametrize("kind", ["COPY_ON_WRITE", "MERGE_ON_READ"])
@pytest.mark.parametrize(("name", "call"), HUDI_CASES, ids=[n for n, _ in HUDI_CASES])
def test_hudi_maintenance_arguments(
    tmp_path: Path, kind: str, name: str, call: Callable[[Table], Any]
) -> None:
    root = tmp_path / "t"
    table = create_hudi(root, kind)
    table.append(hudi_rows((1, "a", 1, "x")))
    _refused_before_any_work(root, call)


def test_the_argument_matrix_ran() -> None:
    assert len(DELTA_CASES) == 11
    assert len(HUDI_CASES) == 5


def test_the_plugin_refuses_them_too(tmp_path: Path) -> None:
    """Delta's maintenance functions check their arguments themselves (callers other than
    Table reach them through the format)."""
    from lakecore_delta import maintenance

    table = lakecore.create(str(tmp_path / "t"), SCHEMA)
    snapshot = table.snapshot()
    with pytest.raises(InvalidArgumentError):
        maintenance.vacuum(table.storage, snapshot, -1.0, True, False)
    with pytest.raises(InvalidArgumentError):
        maintenance.optimize_actions(table.storage, snapshot, 0)
    with pytest.raises(maintenance.RetentionError) as caught:
        maintenance.vacuum(table.storage, snapshot, 1.0, True, True)
    assert isinstance(caught.value, InvalidArgumentError)


def test_checkpoint_of_a_fresh_table_is_valid(tmp_path: Path) -> None:
    """A checkpoint of version 0 is a valid Delta checkpoint: deltalake reads the table."""
    import deltalake

    root = tmp_path / "t"
    table = lakecore.create(str(root), SCHEMA)
    assert table.checkpoint() == 0
    assert (root / "_delta_log" / f"{0:020d}.checkpoint.parquet").is_file()
    assert deltalake.DeltaTable(str(root)).to_pyarrow_table().num_rows == 0
    table.append(pa.table({"id": [1], "p": ["a"]}))
    assert deltalake.DeltaTable(str(root)).to_pyarrow_table().num_rows == 1
    assert lakecore.open(str(root)).to_arrow().num_rows == 1


def test_valid_boundaries_are_accepted(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = lakecore.create(str(root), SCHEMA)
    table.append(pa.table({"id": [1], "p": ["a"]}))
    assert table.vacuum(0, dry_run=True, enforce_retention=False) == []
    assert table.optimize(1).version == 1  # one file: nothing to compact, no commit


def test_history_limits(tmp_path: Path) -> None:
    table = lakecore.create(str(tmp_path / "t"), SCHEMA)
    table.append(pa.table({"id": [1], "p": ["a"]}))
    assert table.history(0) == []
    assert [h.version for h in table.history(1)] == [1]
    assert [h.version for h in table.history()] == [1, 0]
