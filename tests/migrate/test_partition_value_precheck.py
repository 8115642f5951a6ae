"""A Hudi migration target with ``url_encode_partitions=false`` cannot hold a partition value
holding ``/`` (it would add a directory level): the migration refuses before it creates
anything at the target, so nothing is left there and a re-run with the default (URL-encoded
paths) migrates."""

from __future__ import annotations

from pathlib import Path

import pytest

import lakecore
from lakecore.errors import ConstraintViolationError
from tests.corpus import CORPUS

SOURCE = CORPUS / "delta" / "gen__partitioned_special_chars"


@pytest.mark.parametrize("history", [False, True], ids=["latest", "history"])
def test_a_slash_in_a_partition_value_is_refused_before_the_target_is_created(
    history: bool, tmp_path: Path
) -> None:
    if not SOURCE.exists():
        pytest.fail(f"corpus table {SOURCE} is not available (set LAKECORE_CORPUS)")
    target = tmp_path / "t"
    off = {"url_encode_partitions": "false"}
    for _ in range(2):  # a re-run is refused the same way
        with pytest.raises(ConstraintViolationError, match=r"'/'.*url_encode_partitions"):
            lakecore.migrate(
                str(SOURCE), str(target), to="hudi", history=history, target_properties=off
            )
        assert not target.exists()
    report = lakecore.migrate(str(SOURCE), str(target), to="hudi", history=history)
    assert lakecore.open(str(target)).to_arrow().num_rows == 72
    assert report.rows >= 72
