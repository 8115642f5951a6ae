"""Zero-copy Hudi -> Delta in place: lakecore now against an earlier commit, in one run.

Times ``lakecore.migrate(uri, uri, to="delta", mode="metadata")`` on a fresh hard-linked copy
of benchmarks/migration.py's Hudi table (``--files`` base files, one 10-row file per partition,
each footer holding Hudi's ~430 KB bloom filter, no metadata-table column_stats: the file
index reads every footer) and records its peak RSS. Each migration runs in its own Python
process importing lakecore from one of two trees: "after" (the working tree, or ``git
archive`` of ``--after``) and "before" (``git archive`` of ``--before``), alternating which
goes first each repetition; the load average is recorded at the start and end. Every
migration must adopt every file and write none.

    python benchmarks/migration_before_after.py --before 14e99d6~1            # 1,000 files x 4
    python benchmarks/migration_before_after.py --before 14e99d6~1 --after HEAD \\
        --files 1000 10000 -n 3 --write-docs   # then the table in docs/performance.md

Results go to benchmarks/results/migration_before_after.json; the table on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
START, END = "<!-- migration-before-after:start -->", "<!-- migration-before-after:end -->"


def child(source: str, copy: str) -> None:
    """Migrate a hard-linked copy of ``source``; print seconds, peak RSS (MiB), adopted."""
    shutil.copytree(source, copy, copy_function=os.link)
    import lakecore

    started = time.perf_counter()
    report = lakecore.migrate(copy, copy, to="delta", mode="metadata")
    took = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if report.files_rewritten:
        raise SystemExit(f"rewrote {report.files_rewritten} files")
    print(json.dumps({"seconds": took, "peak_mib": peak, "adopted": report.files_adopted}))
    shutil.rmtree(copy)


def _export(commit: str, into: Path) -> Path:
    into.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", commit], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def run(files: int, reps: int, before: str, after: str | None, work: Path) -> dict[str, Any]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from migration import hudi_table, loadavg, log

    source = hudi_table(files)
    trees = {
        "after": ROOT if after is None else _export(after, work / "after"),
        "before": _export(before, work / "before"),
    }
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    load = [loadavg()]
    for r in range(reps):
        for name in list(trees) if r % 2 == 0 else list(trees)[::-1]:
            tree = trees[name]
            env = dict(os.environ, PYTHONPATH=f"{tree}{os.pathsep}{tree / 'plugins'}")
            done = subprocess.run(
                [sys.executable, __file__, "--child", str(source), str(work / f"{name}_{r}")],
                cwd=work,
                env=env,
                capture_output=True,
                text=True,
            )
            if done.returncode:
                raise SystemExit(f"{name}: {done.stderr[-3000:]}")
            got = json.loads(done.stdout.strip().splitlines()[-1])
            if got["adopted"] != files:
                raise SystemExit(f"{name} adopted {got['adopted']} of {files} files")
            runs[name].append(got)
            log(f"  rep {r} {name}: {got['seconds']:.2f} s, peak RSS {got['peak_mib']:.0f} MiB")
    load.append(loadavg())
    return {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.machine()} {os.cpu_count()} cpus",
        "files": files,
        "before": before,
        "after": after or "the working tree",
        "load": load,
        "runs": runs,
    }


def table(results: list[dict[str, Any]]) -> str:
    """The markdown of the docs section: one row per file count and tree."""
    first = results[0]
    lines = [
        f"Run {first['date']} ({first['machine']}); before = `{first['before']}`, after = "
        f"`{first['after']}`; each migration in its own process, the order alternating.",
        "",
        "| files | tree | median (s) | runs (s) | peak RSS (MiB) | load start -> end |",
        "|---:|---|---:|---|---|---|",
    ]
    for result in results:
        for name in ("before", "after"):
            runs = result["runs"][name]
            seconds = [r["seconds"] for r in runs]
            peaks = [r["peak_mib"] for r in runs]
            lines.append(
                f"| {result['files']:,} | {name} | {statistics.median(seconds):.2f} | "
                f"{', '.join(f'{x:.2f}' for x in seconds)} | "
                f"{min(peaks):,.0f}-{max(peaks):,.0f} | "
                f"{result['load'][0]:.1f} -> {result['load'][1]:.1f} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--before", help="the git commit to compare with")
    parser.add_argument("--after", help="a git commit to time instead of the working tree")
    parser.add_argument("--files", type=int, nargs="+", default=[1000])
    parser.add_argument("-n", type=int, default=4, help="repetitions")
    parser.add_argument("--write-docs", action="store_true", help="then update docs")
    parser.add_argument("--child", nargs=2, metavar=("SOURCE", "COPY"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    if not args.before:
        parser.error("--before is required")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from migration import DATA, replace_docs_section

    DATA.mkdir(parents=True, exist_ok=True)
    results = []
    for files in args.files:
        # Under _data/ (not /tmp): the copies are hard links, which need one filesystem.
        with tempfile.TemporaryDirectory(prefix="before-after-work-", dir=DATA) as tmp:
            results.append(run(files, args.n, args.before, args.after, Path(tmp)))
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "migration_before_after.json").write_text(json.dumps(results, indent=1) + "\n")
    print(table(results))
    if args.write_docs:
        replace_docs_section(START, END, table(results))


if __name__ == "__main__":
    main()
