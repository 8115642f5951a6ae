"""Lance opts into the format contract suites (lakecore.testing.format_contract)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import pytest

from lakecore.testing.format_contract import FormatContract, FormatFixtures

pytest.importorskip("lance", reason="needs pylance (the lance extra)")


class LanceFixtures(FormatFixtures):
    format_name = "lance"
    partition_by: ClassVar[Sequence[str]] = ()  # Lance datasets are not partitioned
    create_properties: ClassVar[dict[str, str]] = {"lance.primary_key": "id"}  # for upsert


class TestLanceContract(FormatContract, LanceFixtures): ...
