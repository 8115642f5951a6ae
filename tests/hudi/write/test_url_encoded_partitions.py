"""URL-encoded partition paths (``hoodie.datasource.write.partitionpath.urlencode=true``):
values are escaped as Hudi's ``PartitionPathEncodeUtils.escapePathName`` escapes them, so
values holding ``/``, ``:``, ``=``, ``%`` ... make one directory level each; lakecore and
hudi-rs read the original values back."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from lakecore_hudi.write.rows_in import escape_path_names

import lakecore
from lakecore.errors import ConstraintViolationError
from lakecore.model.partition_paths import escape_path_name
from tests.hudi.write.helpers import SCHEMA, assert_reads, create, model_of, rows, upsert

ODD = ["a/b", "x:y=z", "50%", "q?#*", "é ü", "[1]^{2}", "back\\slash", "plain"]


def test_escape_path_name_is_hives() -> None:
    assert escape_path_name("a/b:c=d%e") == "a%2Fb%3Ac%3Dd%25e"
    assert escape_path_name("\"#'*?[]^{}") == "%22%23%27%2A%3F%5B%5D%5E%7B}"
    assert escape_path_name("tab\there\x7f") == "tab%09here%7F"
    assert escape_path_name("é ü-_.") == "é ü-_."  # non-ASCII and these stay as they are
    column = pa.chunked_array([["a/b", None, "a/b", "c"]])
    assert escape_path_names(column).to_pylist() == ["a%2Fb", None, "a%2Fb", "c"]


@pytest.mark.parametrize("hive_style", [True, False])
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_odd_partition_values_round_trip(tmp_path: Path, table_type: str, hive_style: bool) -> None:
    t = create(tmp_path, table_type, hive_style=hive_style, url_encode_partitions="true")
    props = (tmp_path / ".hoodie" / "hoodie.properties").read_text()
    assert "hoodie.datasource.write.partitionpath.urlencode=true" in props
    data = rows(*[(i, f"n{i}", 1, city) for i, city in enumerate(ODD)])
    t.append(data)
    model = model_of(data)
    assert_reads(tmp_path, model)
    directories = sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("."))
    prefix = "city=" if hive_style else ""
    assert directories == sorted(prefix + escape_path_name(c) for c in ODD)
    assert sorted(lakecore.open(str(tmp_path)).to_arrow().column("city").to_pylist()) == sorted(ODD)
    upsert(t, rows((0, "changed", 2, "a/b"), (100, "new", 1, "x:y=z")))
    model[0] = {"id": 0, "name": "changed", "ts": 2, "city": "a/b"}
    model[100] = {"id": 100, "name": "new", "ts": 1, "city": "x:y=z"}
    assert_reads(tmp_path, model)
    t.delete("city = '50%'")
    del model[2]
    assert_reads(tmp_path, model)
    assert len(ODD) == 8


def test_without_url_encoding_a_slash_is_still_refused(tmp_path: Path) -> None:
    t = create(tmp_path)
    with pytest.raises(ConstraintViolationError, match="'/'"):
        t.append(pa.table({"id": [1], "name": ["a"], "ts": [1], "city": ["a/b"]}, schema=SCHEMA))
