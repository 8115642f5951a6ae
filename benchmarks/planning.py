"""Benchmark: planning a scan (which files to read) — lakecore vs delta-rs, snapshot loaded.

For each synthetic table (``delta_log_synth``; 100k and 1M files in one checkpoint, string
partition ``region`` with 8 values, five data columns with full stats) this times, after the
table is loaded, the planning of a partition predicate and of stats predicates:

- lakecore: ``Scan(snapshot, where).files()`` (the pruned Arrow file index: partition stage,
  then min/max/null-count stage) and, separately, ``.tasks()`` (one ScanTask object per file);
- delta-rs: ``DeltaTable.file_uris(file_pruning_predicate=sql)`` (partition values and stats),
  the older ``file_uris(partition_filters=...)`` (partition predicates only, deprecated), and
  the pyarrow dataset path: ``dataset.get_fragments(filter=...)`` counted, the dataset built
  once by ``to_pyarrow_dataset()`` (only up to ``DATASET_MAX_FILES`` files).

Loading is timed once per tool and reported apart (lakecore: open + file index build, which
parses the stats; delta-rs: ``DeltaTable`` + ``to_pyarrow_dataset()``). Each tool runs in its
own subprocess; every planning call repeats ``-n`` times (within ``BUDGET_S`` per measurement)
and the median is reported. File counts are checked: both tools must report every file and
agree on the partition predicate.

Usage::

    python benchmarks/planning.py               # full: 100k and 1M files, 5 repetitions
    python benchmarks/planning.py --quick       # smoke: 100k files, 3 repetitions
    python benchmarks/planning.py --write-docs  # full run, then update docs/performance.md
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from delta_log_synth import GENERATOR_VERSION, LogSpec, generate

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DATA_DIR = HERE / "_data"
RESULTS = HERE / "results"
DOCS = REPO / "docs" / "performance.md"
START_MARK, END_MARK = "<!-- planning:start -->", "<!-- planning:end -->"
CHILD_TIMEOUT_S = 3600
BUDGET_S = 60.0
"""Time budget of one measurement's repetitions: delta-rs' dataset path takes seconds a call."""

# Same specs (and directory names) as delta_snapshot.py: the tables are shared when present.
CASES = {
    "checkpoint_100k": LogSpec(
        "checkpoint_100k", 100, 1_000, checkpoint_version=99, first_kept_commit=99
    ),
    "checkpoint_1m": LogSpec(
        "checkpoint_1m", 1_000, 1_000, checkpoint_version=999, first_kept_commit=999
    ),
}
FULL, QUICK = ("checkpoint_100k", "checkpoint_1m"), ("checkpoint_100k",)

# name -> (lakecore SQL, delta-rs SQL, delta-rs legacy partition_filters or None)
PREDICATES: dict[str, tuple[str, str, list[tuple[str, str, str]] | None]] = {
    "partition": ("region = 'eu-west'", "region = 'eu-west'", [("region", "=", "eu-west")]),
    "stats (int range)": ("qty > 9900", "qty > 9900", None),
    "stats (time range)": (
        "ts < TIMESTAMP '2023-11-14 22:30:00Z'",
        "ts < '2023-11-14T22:30:00Z'",
        None,
    ),
    "partition + stats": (
        "region = 'eu-west' AND qty > 9900",
        "region = 'eu-west' AND qty > 9900",
        None,
    ),
}
DATASET_MAX_FILES = 200_000
"""delta-rs' ``to_pyarrow_dataset()`` runs only up to this many files: on the 1M-file table it
grew past 18 GB RSS in 7 minutes without finishing (23.6 GB machine) and was stopped."""


def arrow_filter(name: str) -> Any:
    """The pyarrow filter expression of predicate ``name`` (for delta-rs' dataset)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    ts = pa.scalar(
        dt.datetime(2023, 11, 14, 22, 30, tzinfo=dt.timezone.utc), pa.timestamp("us", "UTC")
    )
    return {
        "partition": pc.field("region") == "eu-west",
        "stats (int range)": pc.field("qty") > 9900,
        "stats (time range)": pc.field("ts") < ts,
        "partition + stats": (pc.field("region") == "eu-west") & (pc.field("qty") > 9900),
    }[name]


# --------------------------------------------------------------------------------------------
# Children: one process per tool and table


def _timed(fn: Callable[[], int], reps: int) -> dict[str, Any]:
    """Median of ``reps`` runs; stops early (after at least one) once ``BUDGET_S`` is spent."""
    runs, count = [], -1
    for _ in range(reps):
        t0 = time.perf_counter()
        count = fn()
        runs.append(time.perf_counter() - t0)
        if sum(runs) > BUDGET_S:
            break
    return {"median_s": statistics.median(runs), "runs_s": runs, "files": count}


def child_lakecore(path: str, reps: int) -> dict[str, Any]:
    import lakecore
    from lakecore.planning import Scan

    t0 = time.perf_counter()
    snapshot = lakecore.open(path).snapshot()
    t1 = time.perf_counter()
    total = snapshot.files().num_rows
    t2 = time.perf_counter()
    out: dict[str, Any] = {"open_s": t1 - t0, "index_s": t2 - t1, "total_files": total}
    for name, (sql, _, _) in PREDICATES.items():
        plan = _timed(lambda sql=sql: Scan(snapshot, sql).files().num_rows, reps)  # type: ignore[misc]
        tasks = _timed(lambda sql=sql: len(Scan(snapshot, sql).tasks()), reps)  # type: ignore[misc]
        out[name] = {"plan": plan, "plan_tasks": tasks}
    return out


def child_deltars(path: str, reps: int) -> dict[str, Any]:
    import warnings

    from deltalake import DeltaTable

    warnings.simplefilter("ignore", DeprecationWarning)  # partition_filters, timed on purpose
    t0 = time.perf_counter()
    table = DeltaTable(path)
    out: dict[str, Any] = {"open_s": time.perf_counter() - t0, "dataset_s": None}
    out["total_files"] = len(table.file_uris())
    for name, (_, sql, partition_filters) in PREDICATES.items():
        out[name] = {
            "predicate": _timed(lambda q=sql: len(table.file_uris(file_pruning_predicate=q)), reps)
        }
        if partition_filters is not None:
            out[name]["partition_filters"] = _timed(
                lambda f=partition_filters: len(table.file_uris(partition_filters=f)), reps
            )
    if out["total_files"] <= DATASET_MAX_FILES:
        t1 = time.perf_counter()
        dataset = table.to_pyarrow_dataset()
        out["dataset_s"] = time.perf_counter() - t1
        for name in PREDICATES:
            expr = arrow_filter(name)
            out[name]["fragments"] = _timed(
                lambda e=expr: sum(1 for _ in dataset.get_fragments(filter=e)), reps
            )
    return out


def run_child(tool: str, path: Path, reps: int) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", tool, str(path), str(reps)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S, cwd=REPO)
    if done.returncode != 0:
        raise RuntimeError(f"{tool} on {path.name} failed:\n{done.stderr}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


# --------------------------------------------------------------------------------------------
# Tables, checks, report


def ensure_table(spec: LogSpec) -> Path:
    """The table of ``spec`` under ``_data`` (generated unless an up-to-date copy is there)."""
    root, marker = DATA_DIR / spec.name, DATA_DIR / f"{spec.name}.json"
    want = {"generator": GENERATOR_VERSION, "spec": asdict(spec)}
    if root.is_dir() and marker.is_file():
        stored = json.loads(marker.read_text())
        if {k: v for k, v in stored.items() if k in want} == want:
            return root
    print(f"  generating {spec.name} ...", file=sys.stderr)
    generate(spec, root)
    marker.write_text(json.dumps(want))
    return root


def check(case: str, lake: dict[str, Any], rs: dict[str, Any], spec: LogSpec) -> None:
    """Fail loudly when the tools miss files or disagree on the partition predicate."""
    if lake["total_files"] != spec.live_files or rs["total_files"] != spec.live_files:
        raise RuntimeError(f"{case}: file counts {lake['total_files']}, {rs['total_files']}")
    lake_part = lake["partition"]["plan"]["files"]
    for key, result in rs["partition"].items():
        if result["files"] != lake_part:
            raise RuntimeError(f"{case}: delta-rs {key} kept {result['files']} vs {lake_part}")
    for name in PREDICATES:
        if lake[name]["plan"]["files"] != lake[name]["plan_tasks"]["files"]:
            raise RuntimeError(f"{case}: {name}: tasks and files disagree")


def _ms(result: dict[str, Any] | None) -> str:
    return "n/a" if result is None else f"{result['median_s'] * 1000:,.0f} ms"


def markdown(results: dict[str, Any]) -> str:
    lines = [
        "| table | predicate | files kept (lakecore / delta-rs) | lakecore plan "
        "| lakecore plan + tasks | delta-rs `file_uris(file_pruning_predicate)` "
        "| delta-rs `file_uris(partition_filters)` | delta-rs dataset `get_fragments(filter)` |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for case, r in results["cases"].items():
        lake, rs = r["lakecore"], r["delta-rs"]
        for name, (sql, _, _) in PREDICATES.items():
            kept = f"{lake[name]['plan']['files']:,} / {rs[name]['predicate']['files']:,}"
            lines.append(
                f"| `{case}` ({lake['total_files']:,} files) | `{sql}` | {kept} "
                f"| {_ms(lake[name]['plan'])} | {_ms(lake[name]['plan_tasks'])} "
                f"| {_ms(rs[name]['predicate'])} | {_ms(rs[name].get('partition_filters'))} "
                f"| {_ms(rs[name].get('fragments'))} |"
            )
    lines += ["", "Loading, once per table (not in the planning times above):", ""]
    lines += [
        "| table | lakecore open | lakecore file index | delta-rs open "
        "| delta-rs `to_pyarrow_dataset()` |",
        "|---|---:|---:|---:|---:|",
    ]
    for case, r in results["cases"].items():
        lake, rs = r["lakecore"], r["delta-rs"]
        dataset = "not run" if rs["dataset_s"] is None else f"{rs['dataset_s']:.1f} s"
        lines.append(
            f"| `{case}` | {lake['open_s']:.2f} s | {lake['index_s']:.2f} s "
            f"| {rs['open_s']:.2f} s | {dataset} |"
        )
    return "\n".join(lines + _footer(results))


def _footer(results: dict[str, Any]) -> list[str]:
    m = results["machine"]
    return [
        "",
        f"n/a: delta-rs' `partition_filters` takes partition columns only. Not run: the dataset "
        f"path above {DATASET_MAX_FILES:,} files (on 1M files `to_pyarrow_dataset()` passed "
        "18 GB RSS in 7 minutes without finishing).",
        "",
        f"Machine: {m['cpu']}, {m['cores']} cores; Python {m['python']}, pyarrow {m['pyarrow']}, "
        f"deltalake {m['deltalake']} (delta-rs). Medians of {results['repetitions']} repetitions "
        f"(fewer when one measurement's runs passed {BUDGET_S:.0f} s), run {results['date']}.",
        "",
        "Reproduce: `python benchmarks/planning.py`",
    ]


def machine() -> dict[str, Any]:
    import os

    import deltalake
    import pyarrow

    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "pyarrow": pyarrow.__version__,
        "deltalake": deltalake.__version__,
    }


def write_docs(section: str, path: Path = DOCS) -> None:
    """Replace the text between the planning markers of ``docs/performance.md``."""
    text = path.read_text()
    if START_MARK not in text or END_MARK not in text:
        raise SystemExit(f"{path} lacks the markers {START_MARK} / {END_MARK}")
    head, rest = text.split(START_MARK, 1)
    _, tail = rest.split(END_MARK, 1)
    path.write_text(f"{head}{START_MARK}\n{section}\n{END_MARK}{tail}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="100k-file table only, 3 repetitions")
    parser.add_argument("-n", type=int, default=None, help="repetitions (default 5; quick: 3)")
    parser.add_argument("--write-docs", action="store_true", help="update docs/performance.md")
    parser.add_argument("--output", type=Path, default=None, help="results JSON path")
    parser.add_argument(
        "--child", nargs=3, metavar=("TOOL", "PATH", "REPS"), help=argparse.SUPPRESS
    )
    args = parser.parse_args(argv)
    if args.child:
        tool, path, reps = args.child
        fn = child_lakecore if tool == "lakecore" else child_deltars
        print(json.dumps(fn(path, int(reps))))
        return
    if args.write_docs and args.quick:
        raise SystemExit("--write-docs takes a full run")
    reps = args.n or (3 if args.quick else 5)
    results: dict[str, Any] = {
        "machine": machine(),
        "repetitions": reps,
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cases": {},
    }
    for case in QUICK if args.quick else FULL:
        spec = CASES[case]
        root = ensure_table(spec)
        print(f"{case}: lakecore ...", file=sys.stderr)
        lake = run_child("lakecore", root, reps)
        print(f"{case}: delta-rs ...", file=sys.stderr)
        rs = run_child("delta-rs", root, reps)
        check(case, lake, rs, spec)
        results["cases"][case] = {"lakecore": lake, "delta-rs": rs}
    section = markdown(results)
    print(section)
    RESULTS.mkdir(exist_ok=True)
    output = args.output or RESULTS / ("planning.quick.json" if args.quick else "planning.json")
    output.write_text(json.dumps(results, indent=2) + "\n")
    if args.write_docs:
        write_docs(section)


if __name__ == "__main__":
    main()
