"""Corrupt Lance files (manifest, data file, deletion file, transaction) raise only
``LakecoreError``s: byte flips at seeded positions, and truncations."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pyarrow as pa

import lakecore
from lakecore.errors import LakecoreError

from .helpers import lance

FLIPS = 25


def _exercise(path: Path) -> None:
    table = lakecore.open(str(path))
    snap = table.snapshot()
    snap.files()
    snap.to_arrow()
    table.history()
    table.changes(1)


def test_flipped_and_truncated_files_raise_only_lakecore_errors(tmp_path: Path) -> None:
    source = tmp_path / "src"
    data = pa.table(
        {
            "id": list(range(50)),
            "p": pa.array([{"a": i} for i in range(50)]),
            "s": [str(i) for i in range(50)],
        }
    )
    ds = lance.write_dataset(data, str(source), max_rows_per_file=20)
    ds.delete("id < 3")
    targets = [
        sorted((source / "_versions").glob("*.manifest"))[0],
        sorted((source / "data").iterdir())[0],
        sorted((source / "_deletions").iterdir())[0],
        sorted((source / "_transactions").iterdir())[-1],
    ]
    rnd = random.Random(11)
    cases = refused = 0
    for target in targets:
        original = target.read_bytes()
        variants = []
        for _ in range(FLIPS):
            flipped = bytearray(original)
            flipped[rnd.randrange(len(flipped))] ^= 1 << rnd.randrange(8)
            variants.append(bytes(flipped))
        variants += [original[: len(original) // 2], original[:3], b""]
        for variant in variants:
            copy = tmp_path / f"case{cases}"
            shutil.copytree(source, copy)
            (copy / target.relative_to(source)).write_bytes(variant)
            try:
                _exercise(copy)
            except LakecoreError:
                refused += 1
            cases += 1
            shutil.rmtree(copy)
    assert cases == 4 * (FLIPS + 3)
    assert refused >= 4 * 3  # every truncation at least is refused
