"""Delta write benchmark: append throughput and commit latency, lakecore vs delta-rs.

Both write the same Arrow data to fresh local tables in the same run:

- throughput: ``--batches`` appends of ``--rows`` rows (6 columns: int64, int32, float64,
  string, timestamp, and a partition column with 4 values);
- commit latency: ``--small`` appends of 100 rows, one commit each (median and p90).

    python benchmarks/delta_write.py            # full: 10 x 1,000,000 rows, 200 small commits
    python benchmarks/delta_write.py --quick    # smoke: 3 x 100,000 rows, 30 small commits
    python benchmarks/delta_write.py --write-docs   # also update docs/performance.md

Results go to benchmarks/results/delta_write[.quick].json.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
DOCS = ROOT / "docs" / "performance.md"
START, END = "<!-- delta_write:start -->", "<!-- delta_write:end -->"


def make_batch(rows: int, seed: int) -> pa.Table:
    """A deterministic batch of ``rows`` rows."""
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "id": pa.array(np.arange(rows, dtype=np.int64) + seed * rows),
            "qty": pa.array(rng.integers(0, 1000, rows, dtype=np.int32)),
            "price": pa.array(rng.random(rows) * 100),
            "name": pa.array([f"cust-{i % 10007}" for i in range(rows)]),
            "ts": pa.array(
                (1_700_000_000_000_000 + rng.integers(0, 10**10, rows)).astype("datetime64[us]")
            ).cast(pa.timestamp("us", tz="UTC")),
            "region": pa.array(np.array(["eu", "us", "apac", "latam"])[rng.integers(0, 4, rows)]),
        }
    )


def lakecore_appender(path: str, schema: pa.Schema) -> Callable[[pa.Table], None]:
    import lakecore

    table = lakecore.create(path, schema, partition_by=["region"])
    return lambda batch: table.append(batch) and None


def deltars_appender(path: str, schema: pa.Schema) -> Callable[[pa.Table], None]:
    from deltalake import write_deltalake

    def append(batch: pa.Table) -> None:
        write_deltalake(path, batch, mode="append", partition_by=["region"])

    return append


TOOLS = {"lakecore": lakecore_appender, "delta-rs": deltars_appender}


def throughput(tool: str, batches: list[pa.Table], workdir: Path) -> dict[str, float]:
    path = str(workdir / f"tp-{tool}")
    append = TOOLS[tool](path, batches[0].schema)
    start = time.perf_counter()
    for batch in batches:
        append(batch)
    seconds = time.perf_counter() - start
    rows = sum(b.num_rows for b in batches)
    return {
        "seconds": seconds,
        "rows_per_s": rows / seconds,
        "mb_per_s": sum(b.nbytes for b in batches) / seconds / 1e6,
    }


def latency(tool: str, commits: int, workdir: Path) -> dict[str, float]:
    path = str(workdir / f"lat-{tool}")
    small = make_batch(100, 7)
    append = TOOLS[tool](path, small.schema)
    times = []
    for _ in range(commits):
        start = time.perf_counter()
        append(small)
        times.append(time.perf_counter() - start)
    times.sort()
    return {
        "median_ms": statistics.median(times) * 1000,
        "p90_ms": times[int(0.9 * (len(times) - 1))] * 1000,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    batches = [make_batch(args.rows, i) for i in range(args.batches)]
    workdir = Path(tempfile.mkdtemp(prefix="lakecore-write-bench-"))
    out: dict[str, Any] = {"throughput": {}, "latency": {}}
    try:
        for tool in TOOLS:  # warm up imports and caches once
            throughput(tool, batches[:1], workdir / "warm")
        for tool in TOOLS:
            out["throughput"][tool] = throughput(tool, batches, workdir)
            out["latency"][tool] = latency(tool, args.small, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return out


def machine() -> dict[str, Any]:
    import deltalake

    import lakecore

    return {
        "python": platform.python_version(),
        "pyarrow": pa.__version__,
        "deltalake": deltalake.__version__,
        "lakecore": lakecore.__version__,
        "cpu_count": __import__("os").cpu_count(),
    }


def markdown(result: dict[str, Any], args: argparse.Namespace) -> str:
    tp, lat = result["throughput"], result["latency"]
    ratio_tp = tp["lakecore"]["seconds"] / tp["delta-rs"]["seconds"]
    ratio_lat = lat["lakecore"]["median_ms"] / lat["delta-rs"]["median_ms"]
    rows = args.batches * args.rows
    lines = [
        f"Appends of {args.batches} x {args.rows:,} rows ({rows:,} rows, 6 columns, "
        f"partitioned by a 4-value column); then {args.small} appends of 100 rows, "
        "one commit each.",
        "",
        "| measure | delta-rs | lakecore | lakecore / delta-rs |",
        "|---|---:|---:|---:|",
        f"| throughput: total time | {tp['delta-rs']['seconds']:.2f} s | "
        f"{tp['lakecore']['seconds']:.2f} s | {ratio_tp:.2f}x |",
        f"| throughput: rows/s | {tp['delta-rs']['rows_per_s']:,.0f} | "
        f"{tp['lakecore']['rows_per_s']:,.0f} | |",
        f"| commit latency, median | {lat['delta-rs']['median_ms']:.1f} ms | "
        f"{lat['lakecore']['median_ms']:.1f} ms | {ratio_lat:.2f}x |",
        f"| commit latency, p90 | {lat['delta-rs']['p90_ms']:.1f} ms | "
        f"{lat['lakecore']['p90_ms']:.1f} ms | |",
        "",
        f"Machine: {json.dumps(result['machine'])}.",
        f"Reproduce: `python benchmarks/delta_write.py{' --quick' if args.quick else ''}`",
    ]
    return "\n".join(lines)


def write_docs(text: str) -> None:
    doc = DOCS.read_text() if DOCS.exists() else "# Performance\n"
    block = f"{START}\n{text}\n{END}"
    if START in doc and END in doc:
        head, rest = doc.split(START, 1)
        doc = head + block + rest.split(END, 1)[1]
    else:
        doc = (
            doc.rstrip() + "\n\n## Delta: writing\n\nScript: [`benchmarks/delta_write.py`]"
            "(../benchmarks/delta_write.py). Both tools write the same Arrow batches to fresh "
            "local tables in the same run; times include writing Parquet, stats and the commit."
            f"\n\n{block}\n"
        )
    DOCS.write_text(doc)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="small sizes for a smoke run")
    parser.add_argument("--write-docs", action="store_true", help="update docs/performance.md")
    parser.add_argument("--output", type=Path, default=None, help="results JSON path")
    args = parser.parse_args()
    args.batches, args.rows, args.small = (3, 100_000, 30) if args.quick else (10, 1_000_000, 200)
    result = run(args)
    result["machine"] = machine()
    name = "delta_write.quick.json" if args.quick else "delta_write.json"
    output = args.output or RESULTS / name
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=2))
    text = markdown(result, args)
    print(text)
    if args.write_docs:
        write_docs(text)


if __name__ == "__main__":
    main()
