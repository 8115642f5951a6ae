"""Hudi MoR snapshot-read benchmark: lakecore vs hudi-rs on a table with many log blocks.

The table is written by lakecore's Hudi writer (table version 8, MERGE_ON_READ, partitioned):
one insert of ``--rows`` rows into ``--partitions`` partitions, then ``--upserts`` upserts of
``--update-rows`` random existing keys each, so every file group collects one log file (one
Avro data block) per upsert it touches, plus ``--deletes`` delete commits (delete blocks).
Both readers then read the latest snapshot, in the same run, alternating, ``--repeat`` times
(cold process caches aside, the OS page cache is warm for both):

- lakecore: ``lakecore.open(path).to_arrow()`` (timeline + listing + merge of every slice);
- hudi-rs: ``HudiTableBuilder.from_base_uri(path).build().read()`` (the `hudi` package).

Their rows must be equal (digest without the ``_hoodie_*`` columns) or the run fails.

    python benchmarks/hudi.py                # full: 200,000 rows, 40 upserts, 4 deletes
    python benchmarks/hudi.py --quick        # smoke: 20,000 rows, 10 upserts, 2 deletes
    python benchmarks/hudi.py --write-docs   # also update docs/performance.md
    python benchmarks/hudi.py --profile      # also: where one lakecore read spends its time

Results go to benchmarks/results/hudi[.quick].json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

# This script is named like the `hudi` package (hudi-rs) it measures against: drop its own
# directory from the import path so that `import hudi` finds the package.
HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
DOCS = ROOT / "docs" / "performance.md"
START, END = "<!-- hudi:start -->", "<!-- hudi:end -->"


def make_rows(ids: np.ndarray, ts: int, seed: int, partitions: int) -> pa.Table:
    """Rows for record keys ``ids`` with ordering value ``ts``."""
    rng = np.random.default_rng(seed)
    n = len(ids)
    return pa.table(
        {
            "id": pa.array([f"id-{i:09d}" for i in ids]),
            "ts": pa.array(np.full(n, ts, dtype=np.int64)),
            "qty": pa.array(rng.integers(0, 1000, n, dtype=np.int32)),
            "price": pa.array(rng.random(n) * 100),
            "note": pa.array([f"note-{seed}-{i % 97}" for i in range(n)]),
            "region": pa.array([f"r{i % partitions}" for i in ids]),
        }
    )


def build_table(path: str, args: argparse.Namespace) -> dict[str, Any]:
    """Write the benchmark table with lakecore; returns what it holds."""
    import lakecore

    ids = np.arange(args.rows)
    first = make_rows(ids, 1, 0, args.partitions)
    table = lakecore.create(
        path,
        first.schema,
        format="hudi",
        partition_by=["region"],
        properties={
            "record_key": "id",
            "precombine_field": "ts",
            "table_type": "MERGE_ON_READ",
        },
    )
    table.append(first)
    rng = np.random.default_rng(42)
    for u in range(args.upserts):
        picked = np.sort(rng.choice(args.rows, args.update_rows, replace=False))
        table.upsert(make_rows(picked, 2 + u, 1 + u, args.partitions))
    for d in range(args.deletes):
        lo = d * 97
        table.delete(f"id >= 'id-{lo:09d}' AND id < 'id-{lo + 50:09d}'")
    from lakecore_hudi.names import is_log_file

    files = table.snapshot().files()
    logs = sum(1 for x in files.column("data_files").to_pylist() for p in x if is_log_file(p))
    return {"file_slices": files.num_rows, "log_files": logs}


def read_lakecore(path: str) -> pa.Table:
    import lakecore

    return lakecore.open(path).to_arrow()


def read_hudi_rs(path: str) -> pa.Table:
    from hudi import HudiTableBuilder

    batches = HudiTableBuilder.from_base_uri(os.path.abspath(path)).build().read()
    return pa.Table.from_batches(batches)


READERS = {"lakecore": read_lakecore, "hudi-rs": read_hudi_rs}


def digest(table: pa.Table) -> str:
    """Order-independent digest of the rows without ``_hoodie_*`` columns."""
    data = table.select(sorted(c for c in table.column_names if not c.startswith("_hoodie_")))
    rows = sorted(json.dumps(r, sort_keys=True, default=str) for r in data.to_pylist())
    return hashlib.sha256("\n".join(rows).encode()).hexdigest()


def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="lakecore-hudi-bench-") as tmp:
        path = str(Path(tmp) / "mor")
        started = time.perf_counter()
        shape = build_table(path, args)
        build_seconds = time.perf_counter() - started
        outputs = {name: reader(path) for name, reader in READERS.items()}  # warm-up + check
        digests = {name: digest(t) for name, t in outputs.items()}
        if len(set(digests.values())) != 1:
            raise SystemExit(f"readers disagree: {digests}")
        profile = profile_read(path) if args.profile else None
        times: dict[str, list[float]] = {name: [] for name in READERS}
        for _ in range(args.repeat):
            for name, reader in READERS.items():
                t0 = time.perf_counter()
                reader(path)
                times[name].append(time.perf_counter() - t0)
    median = {name: statistics.median(ts) for name, ts in times.items()}
    return {
        "machine": (
            f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
        ),
        "params": {k: v for k, v in vars(args).items() if k != "output"},
        "table": shape | {"rows": outputs["lakecore"].num_rows, "build_seconds": build_seconds},
        "median_seconds": median,
        "runs": times,
        "ratio_lakecore_vs_hudi_rs": median["lakecore"] / median["hudi-rs"],
        "profile_share": profile,
    }


PROFILED = {
    "Avro log decoding (fastavro + to Arrow)": "decode_data_block",
    "merge by record key": "merge_slice",
    "base files (Parquet)": "read_base_file",
    "timeline, listing, slices": "load_state",
}


def profile_read(path: str) -> dict[str, float]:
    """Share of one lakecore read's time spent in each stage (cProfile cumulative times)."""
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.runcall(read_lakecore, path)
    stats = pstats.Stats(profiler)
    by_name: dict[str, float] = {}
    total = 0.0
    for (_, _, name), (_, _, _, cumulative, _) in stats.stats.items():  # type: ignore[attr-defined]
        by_name[name] = max(by_name.get(name, 0.0), cumulative)
        if name == "read_lakecore":
            total = cumulative
    return {stage: by_name.get(fn, 0.0) / total for stage, fn in PROFILED.items()}


def docs_section(result: dict[str, Any]) -> str:
    p, t, m = result["params"], result["table"], result["median_seconds"]
    return "\n".join(
        [
            START,
            f"MoR table written by lakecore (table version 8): {p['rows']:,} rows in "
            f"{p['partitions']} partitions, {p['upserts']} upserts of {p['update_rows']:,} rows "
            f"and {p['deletes']} deletes -> {t['file_slices']} file slices with "
            f"{t['log_files']} log files; {t['rows']:,} live rows. Median of {p['repeat']} "
            f"snapshot reads each, alternating, same run ({result['machine']}).",
            "",
            "| reader | median read | vs hudi-rs |",
            "|---|---:|---:|",
            f"| lakecore `to_arrow()` | {m['lakecore'] * 1000:.0f} ms | "
            f"{result['ratio_lakecore_vs_hudi_rs']:.2f}x |",
            f"| hudi-rs `read()` | {m['hudi-rs'] * 1000:.0f} ms | 1.00x |",
            END,
        ]
    )


def profile_lines(result: dict[str, Any]) -> str:
    shares = result.get("profile_share") or {}
    return "\n".join(f"  {stage}: {share:.0%}" for stage, share in shares.items())


def write_docs(result: dict[str, Any]) -> None:
    text = DOCS.read_text()
    section = docs_section(result)
    if START in text:
        before, rest = text.split(START, 1)
        after = rest.split(END, 1)[1]
        text = before + section + after
    else:
        text = text.rstrip() + "\n\n## Hudi MoR snapshot read\n\n" + section + "\n"
    DOCS.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--upserts", type=int, default=40)
    parser.add_argument("--update-rows", type=int, default=2_000)
    parser.add_argument("--deletes", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="small smoke run")
    parser.add_argument("--write-docs", action="store_true")
    parser.add_argument("--profile", action="store_true", help="profile one lakecore read")
    parser.add_argument("--output", type=Path, default=None, help="results JSON path")
    args = parser.parse_args()
    if args.quick:
        args.rows, args.upserts, args.update_rows, args.deletes, args.repeat = (
            20_000,
            10,
            500,
            2,
            3,
        )
    result = run(args)
    name = "hudi.quick.json" if args.quick else "hudi.json"
    output = args.output or RESULTS / name
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=2) + "\n")
    print(docs_section(result))
    if args.profile:
        print("share of one lakecore read (cProfile, cumulative):")
        print(profile_lines(result))
    if args.write_docs:
        write_docs(result)


if __name__ == "__main__":
    main()
