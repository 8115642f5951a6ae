"""Hudi opts into the format contract suites (lakecore.testing.format_contract), as a
merge-on-read table (its writes leave log files, so compaction has work to do) and as a
copy-on-write table."""

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


class HudiFixtures(FormatFixtures):
    format_name = "hudi"
    create_properties: ClassVar[dict[str, str]] = {
        "record_key": "id",
        "precombine_field": "ts",
        "table_type": "MERGE_ON_READ",
    }


class TestHudiRead(ReadContract, HudiFixtures): ...


class TestHudiTimeTravel(TimeTravelContract, HudiFixtures): ...


class TestHudiWrite(WriteContract, HudiFixtures): ...


class TestHudiCommit(CommitContract, HudiFixtures): ...


class TestHudiDelete(DeleteContract, HudiFixtures): ...


class TestHudiDetect(DetectContract, HudiFixtures): ...


class TestHudiCapabilities(CapabilityContract, HudiFixtures): ...


class HudiCopyOnWriteFixtures(FormatFixtures):
    format_name = "hudi"
    create_properties: ClassVar[dict[str, str]] = {
        "record_key": "id",
        "precombine_field": "ts",
        "table_type": "COPY_ON_WRITE",
    }


class TestHudiCowRead(ReadContract, HudiCopyOnWriteFixtures): ...


class TestHudiCowTimeTravel(TimeTravelContract, HudiCopyOnWriteFixtures): ...


class TestHudiCowWrite(WriteContract, HudiCopyOnWriteFixtures): ...


class TestHudiCowCommit(CommitContract, HudiCopyOnWriteFixtures): ...


class TestHudiCowDelete(DeleteContract, HudiCopyOnWriteFixtures): ...


class TestHudiCowDetect(DetectContract, HudiCopyOnWriteFixtures): ...


class TestHudiCowCapabilities(CapabilityContract, HudiCopyOnWriteFixtures): ...
