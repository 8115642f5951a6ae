"""Hudi MoR snapshot-read benchmark: lakecore vs hudi-rs, same tables, same run, interleaved.

Two tables, both written by lakecore's Hudi writer (table version 8, MERGE_ON_READ, partitioned
by ``region``, precombine field ``ts``), from seeded rows, so every run reads the same rows:

- ``many_logs``: few file groups with many log blocks each: one insert of ``rows`` rows into
  ``partitions`` partitions (one file group each), then ``upserts`` upserts of
  ``update_rows`` random existing keys each (every file group collects one log file, one Avro
  data block, per upsert touching it) and ``deletes`` delete commits (delete blocks).
- ``fg_1000``: many small file groups: the insert is split into 1,000 file groups (the
  table's ``hoodie.parquet.max.file.size`` set to 200 records' worth, at Hudi's 1 KiB
  per-record estimate), then a few upserts and a delete, so most groups get a few log files.

Tables are built on first use under ``benchmarks/_data/hudi/`` (gitignored; a directory per
case and parameters, reused while its ``BUILT.json`` marker is there). Both readers then read
the latest snapshot, interleaved (the order alternates every repetition), ``--repeat`` times
after one untimed warm-up each (the OS page cache is warm for both):

- lakecore: ``lakecore.open(path).to_arrow()`` (timeline + listing + merge of every slice);
- hudi-rs: ``HudiTableBuilder.from_base_uri(path).build().read()`` (the `hudi` package).

Their rows must be equal (digest without the ``_hoodie_*`` columns) or the run fails.

    python benchmarks/hudi.py                # full: both cases, 200,000 rows each
    python benchmarks/hudi.py --quick        # smoke: both cases at 20,000 rows
    python benchmarks/hudi.py --only many_logs
    python benchmarks/hudi.py --write-docs   # also update docs/performance.md
    python benchmarks/hudi.py --profile      # also: where one lakecore read spends its time

Results go to benchmarks/results/hudi[.quick].json.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import shutil
import statistics
import sys
import time
from dataclasses import asdict, dataclass
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
DATA = ROOT / "benchmarks" / "_data" / "hudi"
DOCS = ROOT / "docs" / "performance.md"
START, END = "<!-- hudi:start -->", "<!-- hudi:end -->"


@dataclass(frozen=True)
class Case:
    """One benchmark table: what the writer puts in it."""

    name: str
    rows: int
    partitions: int
    upserts: int
    update_rows: int
    deletes: int
    records_per_group: int | None = None  # None: one file group per partition

    def key(self) -> str:
        """Directory name: the case and a digest of its parameters."""
        text = json.dumps(asdict(self), sort_keys=True)
        return f"{self.name}-{hashlib.sha256(text.encode()).hexdigest()[:10]}"


FULL = (
    Case("many_logs", 200_000, 4, 40, 2_000, 4),
    Case("fg_1000", 200_000, 4, 4, 2_000, 1, records_per_group=200),
)
QUICK = (
    Case("many_logs", 20_000, 4, 10, 500, 2),
    Case("fg_1000", 20_000, 4, 2, 500, 1, records_per_group=200),  # 100 groups
)


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


def build_table(path: str, case: Case) -> dict[str, Any]:
    """Write the table of ``case`` at ``path`` with lakecore; returns what it holds."""
    import lakecore

    ids = np.arange(case.rows)
    first = make_rows(ids, 1, 0, case.partitions)
    table = lakecore.create(
        path,
        first.schema,
        format="hudi",
        partition_by=["region"],
        properties={"record_key": "id", "precombine_field": "ts", "table_type": "MERGE_ON_READ"},
    )
    if case.records_per_group is not None:
        # The writer splits an insert into groups of max file size / record size estimate
        # (1 KiB while no commit is large enough to measure), read from hoodie.properties.
        with open(Path(path) / ".hoodie" / "hoodie.properties", "a") as props:
            props.write(f"hoodie.parquet.max.file.size={case.records_per_group * 1024}\n")
        table = lakecore.open(path)
    table.append(first)
    rng = np.random.default_rng(42)
    for u in range(case.upserts):
        picked = np.sort(rng.choice(case.rows, case.update_rows, replace=False))
        table.upsert(make_rows(picked, 2 + u, 1 + u, case.partitions))
    for d in range(case.deletes):
        lo = d * 97
        table.delete(f"id >= 'id-{lo:09d}' AND id < 'id-{lo + 50:09d}'")
    from lakecore_hudi.names import is_log_file

    files = lakecore.open(path).snapshot().files()
    logs = sum(1 for x in files.column("data_files").to_pylist() for p in x if is_log_file(p))
    return {"file_slices": files.num_rows, "log_files": logs}


def table_for(case: Case) -> tuple[str, dict[str, Any]]:
    """The path of ``case``'s table, built unless a finished build is there."""
    path = DATA / case.key()
    marker = path / "BUILT.json"
    if marker.exists():
        return str(path / "table"), json.loads(marker.read_text())
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    started = time.perf_counter()
    shape = build_table(str(path / "table"), case)
    shape["build_seconds"] = time.perf_counter() - started
    marker.write_text(json.dumps(shape))
    return str(path / "table"), shape


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


def run_case(case: Case, repeat: int, profile: bool) -> dict[str, Any]:
    path, shape = table_for(case)
    outputs = {name: reader(path) for name, reader in READERS.items()}  # warm-up + check
    digests = {name: digest(t) for name, t in outputs.items()}
    if len(set(digests.values())) != 1:
        raise SystemExit(f"{case.name}: readers disagree: {digests}")
    times: dict[str, list[float]] = {name: [] for name in READERS}
    order = list(READERS)
    for _ in range(repeat):
        for name in order:
            t0 = time.perf_counter()
            READERS[name](path)
            times[name].append(time.perf_counter() - t0)
        order.reverse()  # neither reader always runs first
    ratios = [a / b for a, b in zip(times["lakecore"], times["hudi-rs"], strict=True)]
    return {
        "name": case.name,
        "params": asdict(case),
        "table": shape | {"rows": outputs["lakecore"].num_rows},
        "runs": times,
        "min_seconds": {name: min(ts) for name, ts in times.items()},
        "median_seconds": {name: statistics.median(ts) for name, ts in times.items()},
        "ratios": ratios,
        "ratio_median": statistics.median(ratios),
        "profile_share": profile_read(path) if profile else None,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    cases = [c for c in (QUICK if args.quick else FULL) if not args.only or c.name in args.only]
    load_before = os.getloadavg()
    started = datetime.datetime.now(datetime.timezone.utc)
    results = [run_case(case, args.repeat, args.profile) for case in cases]
    return {
        "machine": (
            f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
        ),
        "started": started.strftime("%Y-%m-%d %H:%M UTC"),
        "load_before": list(load_before),
        "load_after": list(os.getloadavg()),
        "command": " ".join(["python", "benchmarks/hudi.py", *sys.argv[1:]]),
        "repeat": args.repeat,
        "cases": results,
    }


PROFILED = {
    "timeline, listing, slices": "load_state",
    "log files: read, frame, decode (Avro column-wise)": "read_slices_log_records",
    "of which Avro decoding": "decode_avro_blocks",
    "merge by record key": "merge_slices",
    "base files (read on 4 threads; the wait)": "gather",
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
        by_name[name] = by_name.get(name, 0.0) + cumulative
        if name == "read_lakecore":
            total = cumulative
    return {stage: by_name.get(fn, 0.0) / total for stage, fn in PROFILED.items()}


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f} ms"


def docs_section(result: dict[str, Any]) -> str:
    lines = [
        START,
        f"Run {result['started']} ({result['machine']}; 1-minute load average "
        f"{result['load_before'][0]:.1f} before, {result['load_after'][0]:.1f} after), "
        f"`{result['command']}`: {result['repeat']} reads per reader and table, interleaved.",
        "",
        "| table | file slices | log files | live rows | lakecore min / median | "
        "hudi-rs min / median | lakecore / hudi-rs per run (median; range) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for c in result["cases"]:
        t, lo, me, r = c["table"], c["min_seconds"], c["median_seconds"], c["ratios"]
        lines.append(
            f"| `{c['name']}` | {t['file_slices']:,} | {t['log_files']:,} | {t['rows']:,} | "
            f"{_ms(lo['lakecore'])} / {_ms(me['lakecore'])} | "
            f"{_ms(lo['hudi-rs'])} / {_ms(me['hudi-rs'])} | "
            f"{c['ratio_median']:.2f}x; {min(r):.2f}-{max(r):.2f}x |"
        )
    lines.append(END)
    return "\n".join(lines)


def profile_lines(result: dict[str, Any]) -> str:
    out = []
    for c in result["cases"]:
        shares = c.get("profile_share") or {}
        out.append(f"{c['name']}: " + ", ".join(f"{k} {v:.0%}" for k, v in shares.items()))
    return "\n".join(out)


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
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="small smoke run")
    parser.add_argument("--only", type=lambda s: s.split(","), default=None, help="case names")
    parser.add_argument("--write-docs", action="store_true")
    parser.add_argument("--profile", action="store_true", help="profile one lakecore read")
    parser.add_argument("--output", type=Path, default=None, help="results JSON path")
    args = parser.parse_args()
    if args.quick:
        args.repeat = min(args.repeat, 3)
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
