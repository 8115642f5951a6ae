"""Migration benchmark: zero-copy Hudi -> Delta in place, and rewrite throughput between formats.

Two questions, lakecore and a hand-made baseline timed in the same run (interleaved, the order
alternating each repetition; medians of ``-n`` repetitions; the load average is recorded at
the start and end of each case):

1. *Zero-copy in place*: ``lakecore.migrate(uri, uri, to="delta", mode="metadata")`` on a Hudi
   copy-on-write table of ``--files`` base files (10,000 in the full run: 2,500 partitions per
   insert, 4 inserts, one 10-row base file per partition), written by lakecore's Hudi writer
   and cached under ``benchmarks/_data/`` (validated with hudi-rs). Each repetition migrates a
   fresh hard-linked copy of it. Measured: the migration, the incremental re-run with no new
   Hudi commit (which must commit nothing), the data files present before/after outside
   ``_delta_log/`` and ``_lakecore_migration/`` (the run fails unless they are the same), and
   deltalake's reading of the result (row count and id sum equal to hudi-rs's, checked once).
   No Python tool does this migration (Apache XTable is Java), so the reference timed next to
   it is the source engine only listing the same table: hudi-rs ``get_file_slices()``, and
   deltalake opening the result and listing its files.
   The issue's goal is the other direction, Delta -> Hudi zero-copy: lakecore refuses it (it
   needs Hudi's metadata table, issue 13), so it is not measured.

2. *Rewrite throughput* on ``--rows`` rows (1,000,000 in the full run): a Delta table of four
   files with deletion vectors on two of them (lakecore's DV delete of ``id % 7 = 3`` in the
   first half), migrated to Lance and to Hudi, and a Lance dataset of the same rows (four
   fragments, deletion files on two) migrated to Delta. Baselines, read with the source's own
   engine and written with the target's own engine:

   - Delta -> Lance: deltalake ``scan().read_all()`` (applies deletion vectors) then pylance
     ``lance.write_dataset``;
   - Lance -> Delta: pylance ``to_table()`` then deltalake ``write_deltalake``;
   - Delta -> Hudi: there is no Python Hudi writer; the baseline is lakecore reading the Delta
     table and appending it to a new keyless Hudi table by hand (``lakecore.create`` +
     ``append``): the migration's cost without its bookkeeping (unit map, migration state).

   Every target is checked once with the target's own engine (deltalake ``scan()``, pylance,
   hudi-rs): row count and id sum equal to the source's live rows.

    python benchmarks/migration.py               # full: 10,000 files; 1,000,000 rows
    python benchmarks/migration.py --quick       # smoke: 1,000 files; 100,000 rows; 1 repetition
    python benchmarks/migration.py --write-docs  # full run, then update docs/performance.md

Results go to benchmarks/results/migration[.quick].json; the markdown tables on stdout.
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# hudi.py and lance.py next to this script are named like the packages measured against:
# drop this directory from the import path so that `import hudi` / `import lance` find them.
HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

import deltalake  # noqa: E402
import hudi  # noqa: E402
import lance  # noqa: E402

import lakecore  # noqa: E402

DATA = ROOT / "benchmarks" / "_data"
RESULTS = ROOT / "benchmarks" / "results"
DOCS = ROOT / "docs" / "performance.md"
START, END = "<!-- migration:start -->", "<!-- migration:end -->"
GENERATOR_VERSION = 1
SEED = 20261125
ROWS_PER_BASE_FILE = 10
PARTITIONS_PER_INSERT = 2_500
SOURCE_FILES = 4
DELETE = "id % 7 = 3 AND id < {half}"
MIGRATION_DIRS = ("_delta_log", "_lakecore_migration")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def loadavg() -> float:
    return round(os.getloadavg()[0], 2)


# ------------------------------------------------------------------------------ tables


def _cached(name: str, spec: dict[str, Any], build: Callable[[Path], None]) -> Path:
    """The table of case ``name`` under ``_data/``, (re)built when missing or stale."""
    root = DATA / name
    marker = DATA / f"{name}.json"
    want = {"generator": GENERATOR_VERSION, "lakecore": lakecore.__version__, **spec}
    if root.is_dir() and marker.is_file() and json.loads(marker.read_text()) == want:
        return root
    shutil.rmtree(root, ignore_errors=True)
    marker.unlink(missing_ok=True)
    DATA.mkdir(parents=True, exist_ok=True)
    log(f"generating {name} {spec} ...")
    started = time.perf_counter()
    build(root)
    log(f"  {time.perf_counter() - started:.1f} s")
    marker.write_text(json.dumps(want))
    return root


def _hudi_rows(start: int, n: int, partitions: int) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.int64)
    rng = np.random.default_rng(SEED + start)
    return pa.table(
        {
            "id": ids,
            "qty": pa.array(rng.integers(0, 1000, n, dtype=np.int32)),
            "price": pa.array(rng.random(n) * 100),
            "part": pa.array([f"p{i:05d}" for i in ids // ROWS_PER_BASE_FILE]),
        }
    )


def hudi_table(files: int) -> Path:
    """A Hudi CoW table of ``files`` base files (one per partition), validated by hudi-rs."""

    def build(root: Path) -> None:
        per_insert = PARTITIONS_PER_INSERT * ROWS_PER_BASE_FILE
        total = files * ROWS_PER_BASE_FILE
        table = None
        for start in range(0, total, per_insert):
            rows = _hudi_rows(start, min(per_insert, total - start), files)
            if table is None:
                table = lakecore.create(
                    str(root),
                    rows.schema,
                    format="hudi",
                    partition_by=["part"],
                    properties={"record_key": "id", "table_type": "COPY_ON_WRITE"},
                )
            table.append(rows)
        slices = len(hudi.HudiTableBuilder.from_base_uri(str(root)).build().get_file_slices())
        got = read_target("hudi", root)
        if slices != files or got != (total, total * (total - 1) // 2):
            raise SystemExit(f"hudi-rs sees {slices} file slices, rows/id sum {got}")

    return _cached(f"migration_hudi_{files}", {"files": files}, build)


def _rows(start: int, n: int) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.int64)
    rng = np.random.default_rng(SEED + start)
    letters = rng.integers(97, 123, size=(n, 16), dtype=np.uint8)
    return pa.table(
        {
            "id": ids,
            "qty": pa.array(rng.integers(0, 1000, n, dtype=np.int32)),
            "price": pa.array(rng.random(n) * 100),
            "name": pa.array(letters.view("S16").ravel().astype(str)),
            "day": pa.array((ids % 365).astype(np.int32)),
        }
    )


def delta_source(rows: int) -> Path:
    """``rows`` rows in SOURCE_FILES Delta files, deletion vectors on the first half's files."""

    def build(root: Path) -> None:
        per_file = rows // SOURCE_FILES
        table = lakecore.create(
            str(root),
            _rows(0, 1).schema,
            format="delta",
            properties={"delta.enableDeletionVectors": "true"},
        )
        for start in range(0, rows, per_file):
            table.append(_rows(start, per_file))
        table.delete(DELETE.format(half=rows // 2))
        files = table.snapshot().files()
        with_dv = sum(1 for d in files.column("deletion").to_pylist() if d)
        if files.num_rows != SOURCE_FILES or with_dv != SOURCE_FILES // 2:
            raise SystemExit(f"Delta source: {files.num_rows} files, {with_dv} with a DV")

    return _cached(f"migration_delta_{rows}", {"rows": rows, "files": SOURCE_FILES}, build)


def lance_source(rows: int) -> Path:
    """The same rows as a Lance dataset of SOURCE_FILES fragments, deletion files on two."""

    def build(root: Path) -> None:
        per_file = rows // SOURCE_FILES
        schema = _rows(0, 1).schema
        batches = (b for s in range(0, rows, per_file) for b in _rows(s, per_file).to_batches())
        reader = pa.RecordBatchReader.from_batches(schema, batches)
        ds = lance.write_dataset(reader, str(root), max_rows_per_file=per_file)
        ds.delete(DELETE.format(half=rows // 2))
        fragments = lance.dataset(str(root)).get_fragments()
        with_deletes = sum(1 for f in fragments if f.deletion_file() is not None)
        if len(fragments) != SOURCE_FILES or with_deletes != SOURCE_FILES // 2:
            raise SystemExit(f"Lance source: {len(fragments)} fragments, {with_deletes} deleted")

    spec = {"rows": rows, "fragments": SOURCE_FILES, "pylance": lance.__version__}
    return _cached(f"migration_lance_{rows}", spec, build)


def live(rows: int) -> tuple[int, int]:
    """Row count and id sum of the sources after the delete."""
    ids = np.arange(rows, dtype=np.int64)
    keep = ~((ids % 7 == 3) & (ids < rows // 2))
    return int(keep.sum()), int(ids[keep].sum())


# ------------------------------------------------------------------------------ engines


def read_target(fmt: str, path: Path) -> tuple[int, int]:
    """Row count and id sum of the table at ``path``, read by the format's own engine."""
    if fmt == "delta":
        table = pa.table(deltalake.DeltaTable(str(path)).scan().read_all())
    elif fmt == "hudi":
        built = hudi.HudiTableBuilder.from_base_uri(str(path)).build()
        table = pa.Table.from_batches(built.read())
    else:
        table = lance.dataset(str(path)).to_table()
    total = pc.sum(table.column("id")).as_py() if table.num_rows else 0
    return table.num_rows, int(total)


def data_files(root: Path) -> int:
    """Files under ``root`` outside the migration's metadata folders."""
    return sum(
        len(names)
        for folder, _, names in os.walk(root)
        if not any(part in MIGRATION_DIRS for part in Path(folder).relative_to(root).parts)
    )


# ------------------------------------------------------------------------------ zero-copy


def zero_copy(files: int, reps: int, work: Path) -> dict[str, Any]:
    source = hudi_table(files)
    expected = (files * ROWS_PER_BASE_FILE, sum(range(files * ROWS_PER_BASE_FILE)))
    runs: dict[str, list[float]] = {
        "migrate": [],
        "re-run": [],
        "hudi-rs list": [],
        "deltalake list": [],
    }
    before_after: list[tuple[int, int]] = []
    load = [loadavg()]
    log(f"zero-copy {files} files (load {load[0]}) ...")
    # Repetition -1 is an untimed warm-up (imports, page cache) that also checks the rows.
    for r in range(-1, reps):
        copy = work / f"hudi_{files}_{r + 1}"
        shutil.copytree(source, copy, copy_function=os.link)  # data files never written to
        uri = str(copy)
        before = data_files(copy)
        took: dict[str, float] = {}

        def migrate(uri: str = uri) -> None:
            report = lakecore.migrate(uri, uri, to="delta", mode="metadata")
            if report.files_rewritten or report.files_adopted != files:
                raise SystemExit(f"adopted {report.files_adopted}, wrote {report.files_rewritten}")

        def hudi_list(uri: str = uri) -> None:
            got = len(hudi.HudiTableBuilder.from_base_uri(uri).build().get_file_slices())
            if got != files:
                raise SystemExit(f"hudi-rs lists {got} file slices")

        steps = [("migrate", migrate), ("hudi-rs list", hudi_list)]
        for name, fn in steps if r % 2 == 0 else steps[::-1]:
            started = time.perf_counter()
            fn()
            took[name] = time.perf_counter() - started
        started = time.perf_counter()
        report = lakecore.migrate(uri, uri, to="delta", mode="metadata")
        took["re-run"] = time.perf_counter() - started
        if report.commits or report.versions:
            raise SystemExit(f"re-run with no new commit committed: {report}")
        started = time.perf_counter()
        listed = len(deltalake.DeltaTable(uri).file_uris())
        took["deltalake list"] = time.perf_counter() - started
        if listed != files:
            raise SystemExit(f"deltalake lists {listed} files")
        after = data_files(copy)
        before_after.append((before, after))
        if after != before:
            raise SystemExit(f"data files {before} -> {after}")
        if r < 0:
            got = read_target("delta", copy)
            if got != expected:
                raise SystemExit(f"deltalake reads rows/id sum {got}, expected {expected}")
        else:
            for name, seconds in took.items():
                runs[name].append(seconds)
        shutil.rmtree(copy)
        log(f"  rep {r}: migrate {took['migrate']:.2f} s, re-run {took['re-run']:.3f} s")
    load.append(loadavg())
    return {
        "files": files,
        "rows": expected[0],
        "data_files_before_after": before_after,
        "data_files_written": max(a - b for b, a in before_after),
        "deltalake_rows": expected[0],
        "load": load,
        **{name: {"median": statistics.median(t), "runs": t} for name, t in runs.items()},
    }


# ------------------------------------------------------------------------------ rewrite


def _lakecore(source: Path, fmt: str) -> Callable[[Path], None]:
    def run(target: Path) -> None:
        lakecore.migrate(str(source), str(target), to=fmt, mode="rewrite")

    return run


def _delta_to_lance(source: Path) -> Callable[[Path], None]:
    def run(target: Path) -> None:
        rows = pa.table(deltalake.DeltaTable(str(source)).scan().read_all())
        lance.write_dataset(rows, str(target))

    return run


def _lance_to_delta(source: Path) -> Callable[[Path], None]:
    def run(target: Path) -> None:
        deltalake.write_deltalake(str(target), lance.dataset(str(source)).to_table())

    return run


def _lakecore_to_hudi(source: Path) -> Callable[[Path], None]:
    def run(target: Path) -> None:
        rows = lakecore.open(str(source)).to_arrow()
        lakecore.create(str(target), rows.schema, format="hudi").append(rows)

    return run


def rewrite(rows: int, reps: int, work: Path) -> dict[str, Any]:
    delta, lance_ds = delta_source(rows), lance_source(rows)
    expected = live(rows)
    cases = {
        "Delta -> Lance": (
            "lance",
            _lakecore(delta, "lance"),
            "deltalake read + pylance write",
            _delta_to_lance(delta),
        ),
        "Delta -> Hudi": (
            "hudi",
            _lakecore(delta, "hudi"),
            "lakecore read + Hudi append",
            _lakecore_to_hudi(delta),
        ),
        "Lance -> Delta": (
            "delta",
            _lakecore(lance_ds, "delta"),
            "pylance read + deltalake write",
            _lance_to_delta(lance_ds),
        ),
    }
    out: dict[str, Any] = {}
    for name, (fmt, lc, baseline, native) in cases.items():
        load = [loadavg()]
        log(f"{name} {rows} rows (load {load[0]}) ...")
        runs: dict[str, list[float]] = {"lakecore": [], "baseline": []}
        # Repetition -1 is an untimed warm-up that also checks the target's rows.
        for r in range(-1, reps):
            order = [("lakecore", lc), ("baseline", native)]
            for tool, fn in order if r % 2 == 0 else order[::-1]:
                target = work / f"{fmt}_{tool}_{r + 1}"
                started = time.perf_counter()
                fn(target)
                if r >= 0:
                    runs[tool].append(time.perf_counter() - started)
                else:
                    got = read_target(fmt, target)
                    if got != expected:
                        raise SystemExit(f"{name} {tool}: rows/id sum {got} != {expected}")
                shutil.rmtree(target)
        medians = {tool: statistics.median(t) for tool, t in runs.items()}
        load.append(loadavg())
        out[name] = {
            "rows": expected[0],
            "baseline_tool": baseline,
            "load": load,
            "ratio": medians["lakecore"] / medians["baseline"],
            **{tool: {"median": medians[tool], "runs": t} for tool, t in runs.items()},
        }
        log(f"  lakecore {medians['lakecore']:.2f} s vs {baseline} {medians['baseline']:.2f} s")
    return out


# ------------------------------------------------------------------------------ output


def tables(result: dict[str, Any]) -> str:
    z = result["zero_copy"]
    lines = [
        f"Run {result['started']}, {result['machine']}; 1-minute load average "
        f"{result['load'][0]} at the start, {result['load'][1]} at the end (the machine was "
        f"shared); medians of {result['repetitions_zero_copy']} (zero-copy) / "
        f"{result['repetitions']} (rewrite) repetitions; deltalake {result['deltalake']}, "
        f"pylance {result['pylance']}, hudi-rs {result['hudi-rs']}.",
        "",
        f'Zero-copy in place, Hudi CoW -> Delta, `mode="metadata"`, {z["files"]:,} base '
        f"files ({z['rows']:,} rows):",
        "",
        "| measure | seconds |",
        "|---|---:|",
        f'| `lakecore.migrate(uri, uri, to="delta", mode="metadata")` | '
        f"{z['migrate']['median']:.2f} |",
        f"| re-run, no new Hudi commit (commits nothing) | {z['re-run']['median']:.3f} |",
        f"| for scale: hudi-rs listing the source's file slices | "
        f"{z['hudi-rs list']['median']:.2f} |",
        f"| for scale: deltalake opening the result and listing its files | "
        f"{z['deltalake list']['median']:.2f} |",
        "",
        f"Data files written: {z['data_files_written']} (every repetition: "
        f"{z['data_files_before_after'][0][0]:,} files outside `_delta_log/` and "
        "`_lakecore_migration/` before and after: base files, partition metadata files and "
        f"`.hoodie/`); deltalake `scan()` reads {z['deltalake_rows']:,} rows, the count and "
        "`id` sum hudi-rs reads.",
        "",
        f"Rewrite, {result['rows']:,}-row source (4 files / fragments, deletes on 2), "
        '`mode="rewrite"` to a new location:',
        "",
        "| migration | lakecore s | baseline | baseline s | lakecore / baseline |",
        "|---|---:|---|---:|---:|",
    ]
    for name, case in result["rewrite"].items():
        lines.append(
            f"| {name} | {case['lakecore']['median']:.2f} | {case['baseline_tool']} | "
            f"{case['baseline']['median']:.2f} | {case['ratio']:.2f}x |"
        )
    return "\n".join(lines)


def write_docs(result: dict[str, Any]) -> None:
    replace_docs_section(START, END, tables(result))


def replace_docs_section(start: str, end: str, body: str) -> None:
    """Put ``body`` between the markers ``start`` and ``end`` of docs/performance.md."""
    text = DOCS.read_text()
    if start not in text or end not in text:
        raise SystemExit(f"{DOCS} has no {start} ... {end} section")
    before, rest = text.split(start, 1)
    after = rest.split(end, 1)[1]
    DOCS.write_text(before + start + "\n" + body + "\n" + end + after)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="1,000 files, 100,000 rows")
    parser.add_argument("--write-docs", action="store_true", help="full run, then update docs")
    parser.add_argument("-n", type=int, default=None, help="repetitions (rewrite cases)")
    parser.add_argument("--files", type=int, default=None)
    parser.add_argument("--rows", type=int, default=None)
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args()
    if args.write_docs and args.quick:
        parser.error("--write-docs needs a full run")
    files = args.files or (1_000 if args.quick else 10_000)
    rows = args.rows or (100_000 if args.quick else 1_000_000)
    reps = args.n or (1 if args.quick else 5)
    reps_zero = 1 if args.quick else 3
    result: dict[str, Any] = {
        "machine": f"{platform.machine()} {os.cpu_count()} cpus, "
        f"Python {platform.python_version()}",
        "lakecore": lakecore.__version__,
        "deltalake": deltalake.__version__,
        "pylance": lance.__version__,
        "hudi-rs": hudi.__version__,
        "pyarrow": pa.__version__,
        "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "repetitions": reps,
        "repetitions_zero_copy": reps_zero,
        "rows": rows,
    }
    hudi_table(files), delta_source(rows), lance_source(rows)  # build before any timing
    load = [loadavg()]
    DATA.mkdir(parents=True, exist_ok=True)
    # Under _data/ (not /tmp): the zero-copy copies are hard links, which need one filesystem.
    with tempfile.TemporaryDirectory(prefix="migration-work-", dir=DATA) as tmp:
        result["zero_copy"] = zero_copy(files, reps_zero, Path(tmp))
        result["rewrite"] = rewrite(rows, reps, Path(tmp))
    load.append(loadavg())
    result["load"] = load
    output = args.output or RESULTS / f"migration{'.quick' if args.quick else ''}.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=2) + "\n")
    print(tables(result))
    if args.write_docs:
        write_docs(result)


if __name__ == "__main__":
    main()
