"""Float record keys and partition values are written as Java's ``toString`` prints them.

Hudi's key generators take a field's text from ``Double.toString`` / ``Float.toString``
(``1.0``, ``1.0E-7``), so a table Spark and lakecore both write must see the same keys and
partition paths. Fixed in session 11; was: Arrow's cast (``1``, ``1e-07``), so an upsert by
Hudi Java of a key lakecore wrote, or a delete of a virtual key, named a different record.
"""

from __future__ import annotations

import math
import re
import struct
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lakecore
from lakecore.model.java_floats import java_float_texts
from tests.hudi.write.helpers import hudi_rs_rows

# Expected texts as the JDK (19+) prints them: Double.toString / Float.toString.
DOUBLES = [
    (1.0, "1.0"),
    (100.0, "100.0"),
    (-2.5, "-2.5"),
    (0.1, "0.1"),
    (0.001, "0.001"),
    (0.0001, "1.0E-4"),
    (1e7, "1.0E7"),
    (9999999.0, "9999999.0"),
    (1234567.125, "1234567.125"),
    (12345678.9, "1.23456789E7"),
    (123456789.0, "1.23456789E8"),
    (1e-7, "1.0E-7"),
    (1.5e300, "1.5E300"),
    (2e23, "2.0E23"),
    (5e-324, "4.9E-324"),  # Double.MIN_VALUE
    (1.7976931348623157e308, "1.7976931348623157E308"),  # Double.MAX_VALUE
    (0.0, "0.0"),
    (-0.0, "-0.0"),
    (math.nan, "NaN"),
    (math.inf, "Infinity"),
    (-math.inf, "-Infinity"),
]
FLOATS = [
    (0.1, "0.1"),
    (1.1, "1.1"),
    (2.0, "2.0"),
    (16777216.0, "1.6777216E7"),
    (3.4028235e38, "3.4028235E38"),  # Float.MAX_VALUE
    (1.4e-45, "1.4E-45"),  # Float.MIN_VALUE
    (1e-10, "1.0E-10"),
    (-0.0, "-0.0"),
]


def test_doubles_print_as_java_does() -> None:
    column = pa.chunked_array([pa.array([v for v, _ in DOUBLES] + [None])])
    assert java_float_texts(column).to_pylist() == [t for _, t in DOUBLES] + [None]
    assert len(DOUBLES) == 21


def test_floats_print_as_java_does() -> None:
    column = pa.chunked_array([pa.array([v for v, _ in FLOATS], pa.float32())])
    assert java_float_texts(column).to_pylist() == [t for _, t in FLOATS]
    assert len(FLOATS) == 8


def test_chunks_and_repeats_keep_their_rows() -> None:
    column = pa.chunked_array([pa.array([1.0, 0.5, 1.0]), pa.array([], pa.float64()), [0.5]])
    assert java_float_texts(column).to_pylist() == ["1.0", "0.5", "1.0", "0.5"]
    assert java_float_texts(pa.chunked_array([], pa.float64())).to_pylist() == []


_JAVA = re.compile(r"-?(\d{1,7}\.\d+|\d\.\d+E-?\d+|NaN|Infinity)")


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=2**64 - 1))
def test_any_double_reads_back_and_has_javas_layout(bits: int) -> None:
    value = struct.unpack("<d", bits.to_bytes(8, "little"))[0]
    (text,) = java_float_texts(pa.chunked_array([pa.array([value])])).to_pylist()
    assert _JAVA.fullmatch(text), text
    if not math.isnan(value):
        back = float(text)
        assert back == value and math.copysign(1, back) == math.copysign(1, value)
        plain = "E" not in text and text.lstrip("-") not in ("Infinity",)
        assert plain == (value == 0 or 1e-3 <= abs(value) < 1e7)


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_any_float_reads_back_as_the_same_32_bit_value(bits: int) -> None:
    value = np.frombuffer(bits.to_bytes(4, "little"), np.float32)[0]
    column = pa.chunked_array([pa.array([value], pa.float32())])
    (text,) = java_float_texts(column).to_pylist()
    assert _JAVA.fullmatch(text), text
    if not np.isnan(value):
        assert np.float32(text) == value


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_float_keys_and_partitions_in_a_table(tmp_path: Path, table_type: str) -> None:
    schema = pa.schema([("k", pa.float64()), ("p", pa.float32()), ("v", pa.int64())])
    props = {"record_key": "k", "table_type": table_type}
    table = lakecore.create(str(tmp_path / "t"), schema, "hudi", ["p"], props)
    table.append(pa.table({"k": [1.0, 1e-7], "p": [2.0, 0.5], "v": [1, 2]}, schema=schema))
    got = lakecore.open(table.uri).to_arrow().sort_by("v")
    assert got.column("_hoodie_record_key").to_pylist() == ["1.0", "1.0E-7"]
    assert got.column("_hoodie_partition_path").to_pylist() == ["2.0", "0.5"]
    assert got.column("p").to_pylist() == [2.0, 0.5]
    assert (tmp_path / "t" / "2.0").is_dir()
    table.merge(
        pa.table({"k": [1.0], "p": [2.0], "v": [10]}, schema=schema), on=["k"]
    ).when_matched_update_all().execute()
    again = lakecore.open(table.uri).to_arrow().sort_by("k")
    assert again.column("v").to_pylist() == [2, 10]
    assert sorted(r["v"] for r in hudi_rs_rows(tmp_path / "t")) == [2, 10]
