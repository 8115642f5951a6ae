"""Lance opts into the capability contract (lakecore.testing.format_contract) while it only reads.

The other suites create their tables with ``lakecore.create`` and append, which the read-only
Lance plugin refuses; they join with the writer. Here the contract table is written by pylance
(the contract's schema, one row), every undeclared capability must be refused before any
storage call (the contract's own check), and the declared ones are checked on versions pylance
writes, since the contract's checks append through lakecore.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import lakecore
from lakecore import Table
from lakecore.format import Capability
from lakecore.testing.format_contract import (
    ALL_CAPABILITIES,
    SCHEMA,
    CapabilityContract,
    FormatFixtures,
    rows,
)

lance = pytest.importorskip("lance", reason="needs pylance (the lance extra)")


class LanceFixtures(FormatFixtures):
    format_name = "lance"

    @pytest.fixture
    def table(self, table_uri: str) -> Table:
        """A pylance dataset of the contract's schema holding one row (id 0)."""
        lance.write_dataset(rows([0]).cast(SCHEMA), table_uri)
        return lakecore.open(table_uri)


def _append(table: Table, ids: list[int]) -> int:
    lance.write_dataset(rows(ids).cast(SCHEMA), table.uri, mode="append")
    return int(lakecore.open(table.uri).version)


def _check_change_feed(table: Table) -> None:
    first = _append(table, [1, 2])
    second = _append(table, [3])
    changes = table.changes(second)
    assert {"_change_type", "_commit_version", "_commit_timestamp"} <= set(changes.column_names)
    assert changes.column("id").to_pylist() == [3]
    assert sorted(table.changes(first, second).column("id").to_pylist()) == [1, 2, 3]


def _check_time_travel_by_timestamp(table: Table) -> None:
    first = _append(table, [1])
    time.sleep(0.01)
    _append(table, [2])
    at = table.snapshot(first).timestamp
    assert at is not None
    assert table.snapshot(timestamp=at).version == first


LANCE_CHECKS = {
    Capability.CHANGE_FEED: _check_change_feed,
    Capability.TIME_TRAVEL_BY_TIMESTAMP: _check_time_travel_by_timestamp,
}


class TestLanceCapabilities(CapabilityContract, LanceFixtures):
    @pytest.mark.parametrize("capability", ALL_CAPABILITIES, ids=lambda c: c.value)
    def test_capability(self, table: Table, capability: Capability) -> None:
        if capability in table.capabilities:
            LANCE_CHECKS[capability](table)
            return
        super().test_capability(table, capability)


def test_every_declared_capability_has_a_lance_check(tmp_path: Path) -> None:
    lance.write_dataset(rows([0]).cast(SCHEMA), str(tmp_path / "t"))
    assert set(lakecore.open(str(tmp_path / "t")).capabilities) == set(LANCE_CHECKS)
