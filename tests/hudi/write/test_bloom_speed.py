"""How fast lakecore builds and tests Hudi bloom filters over 1,000,000 keys (slow; issue 13).

Run with ``pytest -m slow tests/hudi/write/test_bloom_speed.py -s``: prints, per key shape, the
seconds to build a DYNAMIC_V0 filter (Hudi's defaults) of 1M keys and to test 1M keys against
it, over three runs, next to the per-key scalar Python hash of the spec decoder
(``test_bloom_filter.positions``) timed on 20,000 keys and scaled to 1M. The bound asserted is
loose (a per-key Python loop on the hot path would break it); the numbers are in
``docs/formats/hudi.md``.
"""

from __future__ import annotations

import shutil
import time
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from lakecore_hudi import bloom
from lakecore_hudi.write import candidates

import lakecore
from lakecore.storage import open_storage
from lakecore.testing.faults import CountingStorage
from tests.hudi.write.helpers import upsert
from tests.hudi.write.test_bloom_filter import positions

N = 1_000_000


def _keys(shape: str) -> list[str]:
    rng = np.random.default_rng(7)
    if shape == "uuid":
        return [str(uuid.UUID(int=int(i))) for i in rng.integers(0, 2**62, N)]
    return [str(i) for i in range(N)]


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["uuid", "int-text"])
def test_one_million_keys(shape: str) -> None:
    keys = _keys(shape)
    array = pa.array(keys, pa.string())
    settings = bloom.BloomSettings()
    builds, tests = [], []
    for _ in range(3):
        start = time.perf_counter()
        filt = bloom.build_filter(array, settings)
        built = time.perf_counter()
        found = filt.might_contain(array)
        builds.append(built - start)
        tests.append(time.perf_counter() - built)
        assert found.all()
    assert len(filt.rows) == 2  # 1M keys past 100,000 entries: two rows, round-robin
    sample = keys[:20_000]
    start = time.perf_counter()
    for key in sample:
        positions(key.encode(), settings.hashes, settings.bits)
    scalar = (time.perf_counter() - start) * N / len(sample)
    print(
        f"\n{shape}: build {min(builds):.2f}-{max(builds):.2f} s, "
        f"test {min(tests):.2f}-{max(tests):.2f} s, scalar per-key hash ~{scalar:.0f} s (1M keys)"
    )
    assert max(builds) < 30 and max(tests) < 30


@pytest.mark.slow
def test_upsert_lookup_against_reading_every_slice(tmp_path: Path) -> None:
    """An upsert of 2 existing and 10 new UUID keys into 6 base files of 100,000 rows: bytes
    read and seconds with the footer lookup and with it turned off (every slice's key column
    read), three runs each; the lookup must read less."""
    schema = pa.schema(
        [pa.field("k", pa.string(), nullable=False), pa.field("v", pa.string()), ("ts", pa.int64())]
    )
    template = tmp_path / "template"
    lakecore.create(
        str(template), schema, "hudi", [], {"record_key": "k", "precombine_field": "ts"}
    )
    rng = np.random.default_rng(1)
    existing = []
    for _ in range(6):
        keys = [str(uuid.UUID(int=int(i))) for i in rng.integers(0, 2**62, 100_000)]
        existing.append(keys[0])
        table = pa.table({"k": keys, "v": ["x"] * len(keys), "ts": [1] * len(keys)}, schema=schema)
        lakecore.open(str(template)).append(table)
    keys = existing[:2] + [f"new-{i}" for i in range(10)]
    data = pa.table({"k": keys, "v": ["u"] * 12, "ts": [2] * 12}, schema=schema)

    def run(lookup: bool, n: int) -> tuple[float, int]:
        root = tmp_path / f"run{n}"
        shutil.copytree(template, root)
        storage = CountingStorage(open_storage(str(root)))
        with pytest.MonkeyPatch.context() as mp:
            if not lookup:
                mp.setattr(candidates, "slices_holding", lambda st, sl, kept, k: list(kept))
            start = time.perf_counter()
            upsert(lakecore.open(str(root), storage=storage), data)
            seconds = time.perf_counter() - start
        return seconds, sum(n for p, n in storage.bytes.items() if p.endswith(".parquet"))

    runs = [(run(True, 2 * i), run(False, 2 * i + 1)) for i in range(3)]
    with_lookup = [r[0] for r in runs]
    without = [r[1] for r in runs]
    print(
        f"\nlookup: {min(s for s, _ in with_lookup):.2f}-{max(s for s, _ in with_lookup):.2f} s, "
        f"{with_lookup[0][1] / 1e6:.1f} MB; every slice: "
        f"{min(s for s, _ in without):.2f}-{max(s for s, _ in without):.2f} s, "
        f"{without[0][1] / 1e6:.1f} MB"
    )
    assert all(a[1] < b[1] for a, b in runs)
