"""The capability contract on Hudi tables that can adopt files (a metadata table with its
``files`` partition): ``adopt_files`` is checked there, not skipped (the plain Hudi fixtures
of tests/test_format_contract_hudi.py have no metadata table and skip it, saying why)."""

from __future__ import annotations

from typing import ClassVar

from lakecore.testing.format_contract import CapabilityContract, FormatFixtures


class HudiAdoptingFixtures(FormatFixtures):
    format_name = "hudi"
    create_properties: ClassVar[dict[str, str]] = {
        "record_key": "id",
        "precombine_field": "ts",
        "table_type": "COPY_ON_WRITE",
        "metadata_enable": "true",
    }


class TestHudiAdoptingCapabilities(CapabilityContract, HudiAdoptingFixtures): ...
