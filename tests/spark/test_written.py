"""The executor side of ``lakecore.spark.write``: a format's DataFileWriter inside a task.

These run ``write_batches`` (the ``mapInArrow`` function) in this process, with a recording
writer: no Spark job, so they are fast; ``test_write*.py`` run it in real Spark tasks.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field

import pyarrow as pa
import pytest

pytest.importorskip("pyspark", reason="needs pyspark (pip install 'lakecore[spark]')")

from lakecore.errors import ConstraintViolationError, LakecoreError, UnsupportedFeatureError
from lakecore.format import DataFileWriter
from lakecore.spark import written
from lakecore.spark.written import write_batches

pytestmark = pytest.mark.spark
SCHEMA = pa.schema([("id", pa.int64())])


@dataclass
class Recording:
    """A DataFileWriter that returns one index row per call (path = its rows' ids)."""

    fail_with: LakecoreError | None = None
    calls: list[int] = field(default_factory=list)

    @property
    def schema(self) -> pa.Schema:
        return SCHEMA

    def write(self, rows: pa.Table, task: int) -> pa.Table:
        if self.fail_with is not None:
            raise self.fail_with
        ids = rows.column("id").to_pylist()
        return pa.table({"path": [f"{task}:{ids}"], "record_count": [len(ids)]})


def _batches(*sizes: int) -> list[pa.RecordBatch]:
    start = 0
    out = []
    for n in sizes:
        out.append(pa.record_batch([pa.array(range(start, start + n), pa.int64())], schema=SCHEMA))
        start += n
    return out


def _results(writer: DataFileWriter, batches: list[pa.RecordBatch]) -> list[tuple[str, object]]:
    out = []
    for batch in write_batches(pickle.dumps(writer), iter(batches)):
        out.extend(pickle.loads(b) for b in batch.column("result").to_pylist())
    return out


def test_the_writer_is_a_data_file_writer() -> None:
    assert isinstance(Recording(), DataFileWriter)


def test_rows_go_to_the_writer_in_bounded_groups(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _results(Recording(), _batches(2, 0, 3)) == [
        ("files", pa.table({"path": ["0:[0, 1, 2, 3, 4]"], "record_count": [5]}))
    ]
    monkeypatch.setattr(written, "GROUP_BYTES", 16)  # two int64 rows
    results = _results(Recording(), _batches(2, 1, 1, 3))
    assert [r[1].column("record_count").to_pylist() for r in results] == [[2], [2], [3]]  # type: ignore[attr-defined]
    assert _results(Recording(), _batches(0, 0)) == []  # no rows: no call, no file


@pytest.mark.parametrize(
    "error",
    [
        ConstraintViolationError("3 new row(s) do not match where"),
        UnsupportedFeatureError("x", "y"),
    ],
)
def test_format_errors_travel_back_as_themselves(error: LakecoreError) -> None:
    ((kind, value),) = _results(Recording(fail_with=error), _batches(1))
    assert kind == "error" and isinstance(value, LakecoreError)
    assert type(value) is type(error) or str(error) in str(value)
    assert str(error) in str(value)
