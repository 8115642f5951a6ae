"""Fixtures for the Delta reader tests: tiny hand-written tables in ``tmp_path``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from .builders import DeltaTableBuilder, field

ID_FIELDS = [field("id", "long"), field("v", "string")]
"""The schema most log tests use: ``id long, v string``."""


def id_rows(*ids: int) -> pa.Table:
    """A data file body for ``ID_FIELDS``: the given ids, ``v`` = ``"v<id>"``."""
    return pa.table({"id": pa.array(list(ids), pa.int64()), "v": pa.array([f"v{i}" for i in ids])})


@pytest.fixture
def builder(tmp_path: Path) -> DeltaTableBuilder:
    """An empty table directory (with ``_delta_log/``) to write by hand."""
    return DeltaTableBuilder(tmp_path / "table")


@pytest.fixture
def id_table(builder: DeltaTableBuilder) -> Callable[..., dict[str, Any]]:
    """Write commit 0 of an ``ID_FIELDS`` table; returns a data-file writer for ``id_rows``."""
    builder.init(ID_FIELDS)

    def write(name: str, *ids: int, **kwargs: Any) -> dict[str, Any]:
        return builder.data_file(name, id_rows(*ids), **kwargs)

    return write
