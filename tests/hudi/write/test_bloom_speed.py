"""How fast lakecore builds and tests Hudi bloom filters over 1,000,000 keys (slow; issue 13).

Run with ``pytest -m slow tests/hudi/write/test_bloom_speed.py -s``: prints, per key shape, the
seconds to build a DYNAMIC_V0 filter (Hudi's defaults) of 1M keys and to test 1M keys against
it, over three runs, next to the per-key scalar Python hash of the spec decoder
(``test_bloom_filter.positions``) timed on 20,000 keys and scaled to 1M. The bound asserted is
loose (a per-key Python loop on the hot path would break it); the numbers are in
``docs/formats/hudi.md``.
"""

from __future__ import annotations

import time
import uuid

import numpy as np
import pyarrow as pa
import pytest
from lakecore_hudi import bloom

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
