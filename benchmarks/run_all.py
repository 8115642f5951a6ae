"""Run every benchmark, one after another, and print one table of lakecore / reference ratios.

Each benchmark script runs as its own subprocess (this interpreter, the repository root as the
working directory), with ``--quick`` when asked and ``--output <results-dir>/<name>[.quick].json``,
under a per-benchmark timeout. Its results JSON is then read by that benchmark's adapter (one
small function below), which turns the script's own layout into rows of: measure, lakecore
value, reference value and the reference engine. A benchmark whose optional engine is missing
(a module or an executable such as ``java``) is skipped; one that fails, times out or writes no
new results is reported as failed and the others still run. The exit code is 1 when any
benchmark failed, 0 otherwise (skips do not fail the run).

    python benchmarks/run_all.py --quick                  # every benchmark, small inputs (minutes)
    python benchmarks/run_all.py                          # the full run (tens of minutes)
    python benchmarks/run_all.py --quick --only hudi,lance
    python benchmarks/run_all.py --list
    python benchmarks/run_all.py --quick --results-dir /tmp/bench   # keep benchmarks/results as is

Progress and the failures' output go to stderr; the table goes to stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "benchmarks"
RESULTS = HERE / "results"
QUICK_TIMEOUT_S = 600.0
FULL_TIMEOUT_S = 3600.0


@dataclass(frozen=True, slots=True)
class Row:
    """One measure of one benchmark: lakecore's value against a reference's (None: none)."""

    measure: str
    unit: str  # "s", "MiB" or "B"
    lakecore: float
    reference: float | None
    engine: str  # what the reference is ("delta-rs", "pylance", ...), "" without one

    @property
    def ratio(self) -> float | None:
        """lakecore / reference; None without a reference (or a zero one)."""
        if self.reference is None or self.reference == 0:
            return None
        return self.lakecore / self.reference


Adapter = Callable[[dict[str, Any]], list[Row]]


# --- Adapters: one per benchmark, from the script's results JSON to rows. -----------------
# Each must raise (KeyError, TypeError, ...) on a layout it does not know rather than guess.


def delta_snapshot(r: dict[str, Any]) -> list[Row]:
    rows = []
    for case in r["cases"]:
        lc, dr = case["results"]["lakecore"], case["results"]["delta-rs"]
        name = case["name"]
        rows.append(
            Row(
                f"open + file index, {name}",
                "s",
                lc["open_index_s"],
                dr["open_index_s"],
                "delta-rs",
            )
        )
        rows.append(
            Row(f"peak RSS, {name}", "MiB", lc["rss_peak_mb"], dr["rss_peak_mb"], "delta-rs")
        )
    return rows


def planning(r: dict[str, Any]) -> list[Row]:
    rows = []
    for case, tools in r["cases"].items():
        lc, dr = tools["lakecore"], tools["delta-rs"]
        rows.append(Row(f"open, {case}", "s", lc["open_s"], dr["open_s"], "delta-rs"))
        for predicate, lc_plan in lc.items():
            if isinstance(lc_plan, dict):  # the predicates; the rest are load times and counts
                ref = dr[predicate]["predicate"]["median_s"]
                measure = f"plan {predicate}, {case}"
                rows.append(Row(measure, "s", lc_plan["plan"]["median_s"], ref, "delta-rs"))
    return rows


def delta_write(r: dict[str, Any]) -> list[Row]:
    tp, lat = r["throughput"], r["latency"]
    return [
        Row("append throughput, total", "s", tp["lakecore"]["seconds"], tp["delta-rs"]["seconds"],
            "delta-rs"),
        Row("commit latency, median", "s", lat["lakecore"]["median_ms"] / 1000,
            lat["delta-rs"]["median_ms"] / 1000, "delta-rs"),
    ]  # fmt: skip


def delta_dml(r: dict[str, Any]) -> list[Row]:
    ops = r["operations"].items()
    return [
        Row(op, "s", t["lakecore"]["seconds"], t["delta_rs"]["seconds"], "delta-rs")
        for op, t in ops
    ]


def hudi(r: dict[str, Any]) -> list[Row]:
    rows = []
    for case in r["cases"]:
        t = case["median_seconds"]
        measure = f"MoR snapshot read, {case['name']}"
        rows.append(Row(measure, "s", t["lakecore"], t["hudi-rs"], "hudi-rs"))
    return rows


def hudi_dml(r: dict[str, Any]) -> list[Row]:
    # hudi-rs does not write: the measure is the share of the table's data bytes a one-row DML
    # reads, so the "reference" is the whole table.
    total = r["table_data_bytes"]
    ops = r["operations"].items()
    return [Row(f"bytes read, {op}", "B", o["bytes_read"], total, "whole table") for op, o in ops]


def lance(r: dict[str, Any]) -> list[Row]:
    rows = []
    for case, c in r["cases"].items():
        for measure, m in c["measures"].items():
            lc, pl = m["lakecore"]["median"], m["pylance"]["median"]
            rows.append(Row(f"{measure}, {case}", "s", lc, pl, "pylance"))
    return rows


def spark_handoff(r: dict[str, Any]) -> list[Row]:
    # The reference is Spark listing and reading the directory itself (not Delta-correct, but
    # what the goal compares the task-list read with).
    rows = []
    for c in r["cases"]:
        size = f"{c['files']:,} files" if c["rows_per_file"] <= 1000 else (
            f"{c['files']} x {c['rows_per_file']:,} rows")  # fmt: skip
        # ``lakecore``: the read as users call it (runs from before it existed: the task list).
        name, how = ("lakecore", "spark.read") if "lakecore" in c else ("tasks", "task list")
        ours, directory = c[name], c["directory"]
        engine = "Spark directory read"
        rows.append(Row(f"plan ({how}), {size}", "s", ours["plan_s"], directory["plan_s"], engine))
        rows.append(Row(f"read ({how}), {size}", "s", ours["run_s"], directory["run_s"], engine))
    return rows


def streaming_memory(r: dict[str, Any]) -> list[Row]:
    lc, dr = r["runs"]["lakecore"], r["runs"]["delta-rs"]
    size = f"{r['table']['rows']:,} rows"
    peak_lc = min(x["peak_rss_kib"] for x in lc) / 1024
    peak_dr = min(x["peak_rss_kib"] for x in dr) / 1024
    secs_lc = statistics.median(x["seconds"] for x in lc)
    secs_dr = statistics.median(x["seconds"] for x in dr)
    return [
        Row(f"peak RSS, to_batches {size}", "MiB", peak_lc, peak_dr, "delta-rs"),
        Row(f"time, to_batches {size}", "s", secs_lc, secs_dr, "delta-rs"),
    ]


def migration(r: dict[str, Any]) -> list[Row]:
    z = r["zero_copy"]
    rows = [
        Row(
            f"zero-copy Hudi -> Delta, {z['files']:,} files", "s", z["migrate"]["median"], None, ""
        ),
        Row("zero-copy re-run, nothing new", "s", z["re-run"]["median"], None, ""),
    ]
    for case, c in r["rewrite"].items():
        lc, ref = c["lakecore"]["median"], c["baseline"]["median"]
        rows.append(Row(f"rewrite {case}", "s", lc, ref, c["baseline_tool"]))
    return rows


def migration_zero_copy(r: dict[str, Any]) -> list[Row]:
    z = r["zero_copy"]
    return [
        Row(
            f"zero-copy Delta -> Hudi, {z['files']:,} files",
            "s",
            z["delta -> hudi"]["median"],
            None,
            "",
        ),
        Row("zero-copy Delta -> Hudi re-run", "s", z["re-run"]["median"], None, ""),
    ]


@dataclass(frozen=True, slots=True)
class Benchmark:
    """A benchmark script, what it needs beyond lakecore, and how to read its results."""

    name: str  # the script is benchmarks/<name>.py, its results <name>[.quick].json
    adapter: Adapter
    modules: tuple[str, ...] = ()  # importable modules it needs (optional engines)
    executables: tuple[str, ...] = ()  # programs it needs on PATH
    args: tuple[str, ...] = field(default=())  # extra arguments, every run
    script: Path | None = None  # None: HERE / f"{name}.py"

    def script_path(self) -> Path:
        return self.script or HERE / f"{self.name}.py"

    def missing(self) -> list[str]:
        """What this machine lacks to run it (empty: runnable)."""
        absent = [f"module {m}" for m in self.modules if importlib.util.find_spec(m) is None]
        return absent + [f"program {e}" for e in self.executables if shutil.which(e) is None]


BENCHMARKS: tuple[Benchmark, ...] = (
    Benchmark("delta_snapshot", delta_snapshot, ("deltalake",)),
    Benchmark("planning", planning, ("deltalake",)),
    Benchmark("delta_write", delta_write, ("deltalake",)),
    Benchmark("delta_dml", delta_dml, ("deltalake",)),
    Benchmark("hudi", hudi, ("hudi",)),
    Benchmark("hudi_dml", hudi_dml),
    Benchmark("lance", lance, ("lance",)),
    Benchmark("spark_handoff", spark_handoff, ("pyspark",), ("java",)),
    Benchmark("streaming_memory", streaming_memory, ("deltalake",)),
    Benchmark("migration", migration, ("deltalake", "hudi", "lance")),
    Benchmark("migration_zero_copy", migration_zero_copy, ("deltalake",)),
)
# Modules of benchmarks/ that are libraries, or tools that time lakecore against an earlier
# lakecore rather than a reference engine (their results have no ratio to report), not
# benchmarks: the test checks every other script is listed above.
NOT_BENCHMARKS = frozenset({"run_all", "delta_log_synth", "migration_before_after"})


@dataclass(frozen=True, slots=True)
class Outcome:
    """How one benchmark's run ended: status "ok", "failed" or "skipped"."""

    name: str
    status: str
    seconds: float
    rows: tuple[Row, ...] = ()
    reason: str = ""


def results_path(bench: Benchmark, results_dir: Path, quick: bool) -> Path:
    return results_dir / f"{bench.name}{'.quick' if quick else ''}.json"


def run_one(bench: Benchmark, *, quick: bool, timeout: float, results_dir: Path) -> Outcome:
    """Run one benchmark and read its results; never raises for the benchmark's own faults."""
    missing = bench.missing()
    if missing:
        return Outcome(bench.name, "skipped", 0.0, reason="needs " + ", ".join(missing))
    output = results_path(bench, results_dir, quick)
    cmd = [sys.executable, str(bench.script_path()), *bench.args, "--output", str(output)]
    if quick:
        cmd.append("--quick")
    started = time.perf_counter()
    before = output.stat().st_mtime_ns if output.exists() else None
    # Its own session, so a timeout kills the script's children too (Spark's JVM, the
    # per-reader subprocesses of streaming_memory), and nothing else.
    proc = subprocess.Popen(
        cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        log, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):  # it may have ended meanwhile
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return Outcome(bench.name, "failed", timeout, reason=f"timed out after {timeout:.0f} s")
    seconds = time.perf_counter() - started
    # The reason's first line (the table's) ends with the last line of output, usually the
    # error; the lines before it follow for stderr.
    lines = log.strip().splitlines() or ["(no output)"]
    tail = "\n".join(lines[-15:])
    if proc.returncode != 0:
        reason = f"exit {proc.returncode}: {lines[-1]}\n{tail}"
        return Outcome(bench.name, "failed", seconds, reason=reason)
    if not output.exists() or output.stat().st_mtime_ns == before:
        reason = f"wrote no new {output.name}: {lines[-1]}\n{tail}"
        return Outcome(bench.name, "failed", seconds, reason=reason)
    try:
        rows = bench.adapter(json.loads(output.read_text()))
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        return Outcome(bench.name, "failed", seconds, reason=f"{output}: {exc!r}")
    return Outcome(bench.name, "ok", seconds, tuple(rows))


def run_all(
    benches: Sequence[Benchmark], *, quick: bool, timeout: float, results_dir: Path
) -> list[Outcome]:
    """Run ``benches`` one at a time (the machine has few cores), reporting progress."""
    outcomes = []
    for i, bench in enumerate(benches, 1):
        print(f"[{i}/{len(benches)}] {bench.name} ...", file=sys.stderr, flush=True)
        o = run_one(bench, quick=quick, timeout=timeout, results_dir=results_dir)
        print(f"    {o.status} in {o.seconds:.1f} s", file=sys.stderr, flush=True)
        if o.status == "failed":
            print("    " + o.reason.replace("\n", "\n    "), file=sys.stderr, flush=True)
        outcomes.append(o)
    return outcomes


def fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "s":
        return f"{value * 1000:,.1f} ms" if value < 1 else f"{value:,.2f} s"
    if unit == "B":
        return f"{value / 1e6:,.2f} MB"
    return f"{value:,.0f} {unit}"


def table(outcomes: Sequence[Outcome]) -> str:
    """The markdown table of every row, then one line per benchmark not run or failed."""
    lines = [
        "| benchmark | measure | lakecore | reference | ratio (lakecore / reference) |",
        "|---|---|---:|---:|---:|",
    ]
    for o in outcomes:
        for row in o.rows:
            ref = f"{fmt(row.reference, row.unit)} ({row.engine})" if row.engine else "-"
            ratio = "-" if row.ratio is None else f"{row.ratio:.{3 if row.ratio < 0.1 else 2}f}x"
            lines.append(
                f"| {o.name} | {row.measure} | {fmt(row.lakecore, row.unit)} | {ref} | {ratio} |"
            )
    lines.append("")
    for o in outcomes:
        first = o.reason.splitlines()[0] if o.reason else ""
        lines.append(f"{o.name}: {o.status}, {o.seconds:.1f} s" + (f" ({first})" if first else ""))
    return "\n".join(lines)


def select(names: str | None) -> list[Benchmark]:
    """The benchmarks named (comma-separated), in the registry's order; all for None."""
    if names is None:
        return list(BENCHMARKS)
    wanted = {n.strip() for n in names.split(",") if n.strip()}
    unknown = wanted - {b.name for b in BENCHMARKS}
    if unknown:
        raise SystemExit(f"unknown benchmark(s): {', '.join(sorted(unknown))} (see --list)")
    return [b for b in BENCHMARKS if b.name in wanted]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="every benchmark on small inputs")
    parser.add_argument("--only", help="comma-separated benchmark names (see --list)")
    parser.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    timeouts = f"default {QUICK_TIMEOUT_S:.0f} with --quick, {FULL_TIMEOUT_S:.0f} without"
    parser.add_argument(
        "--timeout", type=float, default=None, help=f"seconds per benchmark ({timeouts})"
    )
    parser.add_argument(
        "--results-dir", type=Path, default=RESULTS, help="where the results JSON files go"
    )
    args = parser.parse_args(argv)
    benches = select(args.only)
    if args.list:
        for b in benches:
            needs = ", ".join(b.modules + b.executables) or "lakecore only"
            missing = b.missing()
            state = f"  (missing: {', '.join(missing)})" if missing else ""
            print(f"{b.name:18s} benchmarks/{b.name}.py  needs: {needs}{state}")
        return 0
    timeout = args.timeout or (QUICK_TIMEOUT_S if args.quick else FULL_TIMEOUT_S)
    started = time.perf_counter()
    outcomes = run_all(
        benches, quick=args.quick, timeout=timeout, results_dir=args.results_dir.resolve()
    )
    print(table(outcomes))
    failed = [o.name for o in outcomes if o.status == "failed"]
    mode = "quick" if args.quick else "full"
    elapsed = time.perf_counter() - started
    print(f"\n{mode} run: {elapsed:.0f} s; failed: {', '.join(failed) or 'none'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
