"""Delta opts into the format contract suites (lakecore.testing.format_contract)."""

from __future__ import annotations

from typing import ClassVar

from lakecore.testing.format_contract import (
    CapabilityContract,
    CommitContract,
    DeleteContract,
    DetectContract,
    FormatFixtures,
    ReadContract,
    TimeTravelContract,
    WriteContract,
)


class DeltaFixtures(FormatFixtures):
    format_name = "delta"
    # In-commit timestamps: Delta keeps given commit timestamps (commit_timestamps) only then.
    create_properties: ClassVar[dict[str, str]] = {
        "delta.enableChangeDataFeed": "true",
        "delta.enableInCommitTimestamps": "true",
    }


class TestDeltaRead(ReadContract, DeltaFixtures): ...


class TestDeltaTimeTravel(TimeTravelContract, DeltaFixtures): ...


class TestDeltaWrite(WriteContract, DeltaFixtures): ...


class TestDeltaCommit(CommitContract, DeltaFixtures): ...


class TestDeltaDelete(DeleteContract, DeltaFixtures): ...


class TestDeltaDetect(DetectContract, DeltaFixtures): ...


class TestDeltaCapabilities(CapabilityContract, DeltaFixtures): ...
