"""Benchmark: peak memory of a full streaming read — lakecore vs delta-rs.

Generates a Delta table (``deltalake.write_deltalake``, fixed seed, under
``benchmarks/_data``) and reads every row of it, batch by batch, in a fresh subprocess per
reader, keeping nothing but a row count:

- lakecore: ``for batch in lakecore.open(path).snapshot().to_batches(): ...`` (default
  batch size; what ``Table.to_batches()`` does);
- delta-rs: ``for batch in DeltaTable(path).to_pyarrow_dataset().to_batches(): ...``.

Each child reports its peak RSS (``ru_maxrss``), its RSS after imports and opening the table
(so the reading itself is the difference), rows and seconds. The issue's goal: lakecore's
peak within 1.2x of delta-rs's. ``--lakecore-src`` measures the lakecore of another source
tree (e.g. a checkout of an older commit) against the same table.

Usage::

    python benchmarks/streaming_memory.py            # 5M rows in 4 files (~2.5 min on 2 cores)
    python benchmarks/streaming_memory.py --quick    # 300k rows: a smoke run of seconds
    python benchmarks/streaming_memory.py --lakecore-src /tmp/lakecore-old
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DATA_DIR = HERE / "_data"
RESULTS = HERE / "results"
CHILD_TIMEOUT_S = 900
GOAL_RATIO = 1.2

CHILD = r"""
import json, resource, sys, time

def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0

tool, path = sys.argv[1], sys.argv[2]
import pyarrow
if tool == "lakecore":
    import lakecore
    import lakecore_delta
    snapshot = lakecore.open(path).snapshot()
    snapshot.files()
    where = [lakecore.__file__, lakecore_delta.__file__]
    batches = lambda: snapshot.to_batches()  # = Table.to_batches(); older trees have it too
else:
    from deltalake import DeltaTable
    dataset = DeltaTable(path).to_pyarrow_dataset()
    where = None
    batches = lambda: dataset.to_batches()
before = rss_kib()
start = time.perf_counter()
rows = largest = 0
for batch in batches():
    rows += batch.num_rows
    largest = max(largest, batch.num_rows)
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"tool": tool, "rows": rows, "largest_batch": largest, "seconds": seconds,
                  "rss_before_kib": before, "peak_rss_kib": peak, "lakecore": where}))
sys.stdout.flush()
# Skip interpreter shutdown: the delta-rs child sometimes aborts there ("terminate called
# without an active exception", SIGABRT) after its work is done and measured.
import os
os._exit(0)
"""


def generate(path: Path, rows: int, files: int) -> None:
    """A Delta table of ``rows`` rows in ``files`` appends (one data file each)."""
    import numpy as np
    import pyarrow as pa
    from deltalake import write_deltalake

    rng = np.random.default_rng(14)
    per_file = rows // files
    for k in range(files):
        start = k * per_file
        ids = np.arange(start, start + per_file, dtype=np.int64)
        words = np.array([f"word-{i:04d}-{'x' * (i % 17)}" for i in range(1000)])
        batch = pa.table(
            {
                "id": ids,
                "ts": pa.array(ids * 1_000_000, pa.timestamp("us", tz="UTC")),
                "category": pa.array(rng.integers(0, 50, per_file).astype(str)),
                "value": rng.normal(size=per_file),
                "text": pa.array(words[rng.integers(0, 1000, per_file)]),
            }
        )
        write_deltalake(str(path), batch, mode="append")


def run_child(tool: str, path: Path, lakecore_src: Path) -> dict[str, Any]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(lakecore_src), str(lakecore_src / "plugins"), os.environ.get("PYTHONPATH", "")]
    )
    done = subprocess.run(
        [sys.executable, "-c", CHILD, tool, str(path)],
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT_S,
        env=env,
        check=True,
        cwd=path.parent,  # not the repo: ``python -c`` puts the working directory first
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    for where in result.pop("lakecore") or []:
        if not Path(where).resolve().is_relative_to(lakecore_src.resolve()):
            raise RuntimeError(f"the child imported {where}, not from {lakecore_src}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="300k rows (smoke run)")
    parser.add_argument("--rows", type=int, default=None)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("-n", "--repetitions", type=int, default=None)
    parser.add_argument("--lakecore-src", type=Path, default=REPO)
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR)
    parser.add_argument("--output", type=Path, default=None, help="results JSON path")
    args = parser.parse_args()
    rows = args.rows or (300_000 if args.quick else 5_000_000)
    repetitions = args.repetitions or (1 if args.quick else 2)
    path = args.data_dir / f"stream_{rows}_{args.files}"
    if not (path / "_delta_log").exists():
        generate(path, rows, args.files)
    size = sum(f.stat().st_size for f in path.glob("*.parquet"))
    runs: dict[str, list[dict[str, Any]]] = {"lakecore": [], "delta-rs": []}
    for _ in range(repetitions):
        for tool in runs:
            runs[tool].append(run_child(tool, path, args.lakecore_src))
    best = {tool: min(r, key=lambda x: x["peak_rss_kib"]) for tool, r in runs.items()}
    for tool, r in best.items():
        if r["rows"] != rows:
            raise RuntimeError(f"{tool} read {r['rows']} rows, not {rows}")
    ratio = best["lakecore"]["peak_rss_kib"] / best["delta-rs"]["peak_rss_kib"]
    print(f"table: {rows:,} rows, {args.files} files, {size / 2**20:.0f} MiB of Parquet")
    print("| reader | peak RSS | RSS before reading | growth | largest batch | seconds |")
    print("|---|---:|---:|---:|---:|---:|")
    for tool, r in best.items():
        peak, before = r["peak_rss_kib"] / 1024, r["rss_before_kib"] / 1024
        print(
            f"| {tool} | {peak:.0f} MiB | {before:.0f} MiB | {peak - before:.0f} MiB "
            f"| {r['largest_batch']:,} | {r['seconds']:.2f} |"
        )
    print(f"lakecore / delta-rs peak RSS: {ratio:.2f} (goal <= {GOAL_RATIO})")
    out = args.output or RESULTS / f"streaming_memory{'.quick' if args.quick else ''}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                "machine": {
                    "python": platform.python_version(),
                    "cpus": os.cpu_count(),
                    "loadavg": os.getloadavg(),
                    "lakecore_src": str(args.lakecore_src),
                },
                "table": {"rows": rows, "files": args.files, "parquet_bytes": size},
                "runs": runs,
                "ratio": ratio,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
