"""Zero-copy Delta -> Hudi migration in place: how long, and that no data file is written.

``lakecore.migrate(uri, uri, to="hudi", mode="metadata")`` on a Delta table of ``--files``
data files (10,000 in the full run: 4 appends by deltalake of 2,500 partitions each, one
10-row file per partition and append), cached under ``benchmarks/_data/``. Each repetition
migrates a fresh hard-linked copy. Timed in the same run, interleaved (order alternating
each repetition; medians of ``-n`` repetitions; load average at start and end):

- ``delta -> hudi``: the migration (a Hudi timeline and metadata table whose ``files``
  partition lists every Delta file as an external ``_hudiext`` entry);
- ``re-run``: the incremental re-run with no new Delta commit (must commit nothing);
- ``hudi -> delta``: the opposite zero-copy migration of a Hudi table of as many base files
  (benchmarks/migration.py's table), for comparison;
- ``deltalake list``: the source engine opening the Delta table and listing its files, the
  floor of any tool that must learn the file list (no Python tool does this migration;
  Apache XTable is Java).

Checked every repetition: the data files outside ``.hoodie/``, ``_delta_log/`` and
``_lakecore_migration/`` are the same before and after (the run fails otherwise), every file
adopted, none rewritten; once: lakecore's Hudi reader returns deltalake's row count and id
sum (hudi-rs 0.5.0 cannot read such tables: it refuses drop.partition.columns).

    python benchmarks/migration_zero_copy.py               # full: 10,000 files, 3 reps
    python benchmarks/migration_zero_copy.py --quick       # smoke: 1,000 files, 1 rep
    python benchmarks/migration_zero_copy.py --write-docs  # full run, then docs/performance.md

Results go to benchmarks/results/migration_zero_copy[.quick].json; the table on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import deltalake
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import lakecore

sys.path.insert(0, str(Path(__file__).resolve().parent))
from migration import (
    DATA,
    ROWS_PER_BASE_FILE,
    _cached,
    _hudi_rows,
    hudi_table,
    loadavg,
    log,
    replace_docs_section,
)

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
START, END = "<!-- migration-zero-copy:start -->", "<!-- migration-zero-copy:end -->"
PARTITIONS_PER_APPEND = 2_500
METADATA_DIRS = (".hoodie", "_delta_log", "_lakecore_migration")


def delta_table(files: int) -> Path:
    """A Delta table of ``files`` data files (one per partition and append), by deltalake."""

    def build(root: Path) -> None:
        per_append = PARTITIONS_PER_APPEND * ROWS_PER_BASE_FILE
        total = files * ROWS_PER_BASE_FILE
        for start in range(0, total, per_append):
            rows = _hudi_rows(start, min(per_append, total - start), files)
            # The same 2,500 partitions every append: one new 10-row file in each.
            groups = np.arange(start, start + rows.num_rows) // ROWS_PER_BASE_FILE
            part = pa.array([f"p{g % PARTITIONS_PER_APPEND:05d}" for g in groups])
            rows = rows.set_column(rows.schema.get_field_index("part"), "part", part)
            deltalake.write_deltalake(str(root), rows, partition_by=["part"], mode="append")
        listed = len(deltalake.DeltaTable(str(root)).file_uris())
        if listed != files:
            raise SystemExit(f"deltalake lists {listed} files, expected {files}")

    return _cached(f"migration_delta_{files}", {"files": files}, build)


def data_files(root: Path) -> list[str]:
    """Files under ``root`` outside the formats' metadata folders."""
    return sorted(
        str(Path(folder, name).relative_to(root))
        for folder, _, names in os.walk(root)
        for name in names
        if not any(part in METADATA_DIRS for part in Path(folder).relative_to(root).parts)
    )


def rows_and_sum(table: pa.Table) -> tuple[int, int]:
    return table.num_rows, int(pc.sum(table.column("id")).as_py() or 0)


def run(files: int, reps: int, work: Path) -> dict[str, Any]:
    delta, hudi = delta_table(files), hudi_table(files)
    runs: dict[str, list[float]] = {
        "delta -> hudi": [],
        "re-run": [],
        "hudi -> delta": [],
        "deltalake list": [],
    }
    before_after: list[tuple[int, int]] = []
    load = [loadavg()]
    log(f"zero-copy {files} files (load {load[0]}) ...")
    for r in range(-1, reps):  # -1: untimed warm-up that also checks the rows
        d_copy, h_copy = work / f"delta_{r + 1}", work / f"hudi_{r + 1}"
        shutil.copytree(delta, d_copy, copy_function=os.link)  # data files never written
        shutil.copytree(hudi, h_copy, copy_function=os.link)
        before = data_files(d_copy)
        took: dict[str, float] = {}

        def to_hudi(uri: str = str(d_copy)) -> None:
            report = lakecore.migrate(uri, uri, to="hudi", mode="metadata")
            if report.files_rewritten or report.files_adopted != files:
                raise SystemExit(f"adopted {report.files_adopted}, wrote {report.files_rewritten}")

        def to_delta(uri: str = str(h_copy)) -> None:
            report = lakecore.migrate(uri, uri, to="delta", mode="metadata")
            if report.files_rewritten or report.files_adopted != files:
                raise SystemExit(f"adopted {report.files_adopted}, wrote {report.files_rewritten}")

        def delta_list(uri: str = str(d_copy)) -> None:
            if len(deltalake.DeltaTable(uri).file_uris()) != files:
                raise SystemExit("deltalake lists another number of files")

        steps = [
            ("delta -> hudi", to_hudi),
            ("hudi -> delta", to_delta),
            ("deltalake list", delta_list),
        ]
        for name, fn in steps if r % 2 == 0 else steps[::-1]:
            started = time.perf_counter()
            fn()
            took[name] = time.perf_counter() - started
        started = time.perf_counter()
        again = lakecore.migrate(str(d_copy), str(d_copy), to="hudi", mode="metadata")
        took["re-run"] = time.perf_counter() - started
        if again.commits or again.versions:
            raise SystemExit(f"re-run with no new commit committed: {again}")
        after = data_files(d_copy)
        before_after.append((len(before), len(after)))
        if after != before:
            raise SystemExit(f"data files changed: {len(before)} -> {len(after)}")
        if r < 0:
            want = rows_and_sum(deltalake.DeltaTable(str(d_copy)).to_pyarrow_table())
            got = rows_and_sum(lakecore.open(str(d_copy), format="hudi").to_arrow())
            if got != want:
                raise SystemExit(f"lakecore's Hudi reader reads {got}, deltalake {want}")
        else:
            for name, seconds in took.items():
                runs[name].append(seconds)
        shutil.rmtree(d_copy)
        shutil.rmtree(h_copy)
        log("  rep " + str(r) + ": " + ", ".join(f"{k} {v:.2f} s" for k, v in took.items()))
    load.append(loadavg())
    return {
        "files": files,
        "rows": files * ROWS_PER_BASE_FILE,
        "data_files_before_after": before_after,
        "data_files_written": max(a - b for b, a in before_after),
        "load": load,
        **{name: {"median": statistics.median(t), "runs": t} for name, t in runs.items()},
    }


def table(result: dict[str, Any]) -> str:
    z = result["zero_copy"]
    lines = [
        f"Run {result['started']} ({result['machine']}; lakecore {result['lakecore']}, "
        f"deltalake {result['deltalake']}), {z['files']:,} files, {result['repetitions']} "
        f"repetitions, load {z['load'][0]} -> {z['load'][1]}; data files written: "
        f"{z['data_files_written']}.",
        "",
        "| step | median (s) | runs (s) |",
        "|---|---:|---|",
    ]
    for name in ("delta -> hudi", "re-run", "hudi -> delta", "deltalake list"):
        runs = ", ".join(f"{t:.2f}" for t in z[name]["runs"])
        lines.append(f"| {name} | {z[name]['median']:.2f} | {runs} |")
    return "\n".join(lines)


def write_docs(result: dict[str, Any]) -> None:
    replace_docs_section(START, END, table(result))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="1,000 files, 1 repetition")
    parser.add_argument("--write-docs", action="store_true", help="full run, then update docs")
    parser.add_argument("-n", type=int, default=None, help="repetitions")
    parser.add_argument("--files", type=int, default=None)
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args()
    if args.write_docs and args.quick:
        parser.error("--write-docs needs a full run")
    files = args.files or (1_000 if args.quick else 10_000)
    reps = args.n or (1 if args.quick else 3)
    result: dict[str, Any] = {
        "machine": f"{platform.machine()} {os.cpu_count()} cpus, "
        f"Python {platform.python_version()}",
        "lakecore": lakecore.__version__,
        "deltalake": deltalake.__version__,
        "pyarrow": pa.__version__,
        "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "repetitions": reps,
    }
    delta_table(files), hudi_table(files)  # build before any timing
    DATA.mkdir(parents=True, exist_ok=True)
    # Under _data/ (not /tmp): the copies are hard links, which need one filesystem.
    with tempfile.TemporaryDirectory(prefix="zero-copy-work-", dir=DATA) as tmp:
        result["zero_copy"] = run(files, reps, Path(tmp))
    output = args.output or RESULTS / f"migration_zero_copy{'.quick' if args.quick else ''}.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=2) + "\n")
    print(table(result))
    if args.write_docs:
        write_docs(result)


if __name__ == "__main__":
    main()
