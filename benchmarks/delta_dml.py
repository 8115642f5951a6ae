"""Delta DML benchmark: bytes and time of small delete/update/merge/overwrite(where) vs delta-rs.

Two tables, generated on first use under ``benchmarks/_data/`` by lakecore's writer (a
``<case>.json`` marker records the spec; delete the directory to start over):

- ``dml_400``: 400 data files, partitioned by ``region`` (20 values): 20 appends of 20
  partitions x ``--rows`` rows (ids contiguous per file, a random 48-character text column so
  files do not compress away). ``delete("id = k")``, ``update({"name": "'x'"}, "id = k")`` and
  a MERGE of one row on ``id`` (update all / insert all) change one row of one file;
- ``overwrite_10k``: 10,000 data files, partitioned by ``part`` (100 values): 100 appends of
  100 partitions x 10 rows. ``overwrite(<10 rows>, where="part = 'p007'")`` replaces one
  partition (100 files).

Every operation runs on a fresh copy of its table, timed from opening the table to the landed
commit, for lakecore and for delta-rs in the same run (median of ``-n`` runs, after one
untimed warm-up run of each side so one-time imports are not timed). lakecore opens
the table through a Storage that counts the bytes read from data files (the JSON log and
checkpoints are not data); the report gives them against the table's data bytes.

    python benchmarks/delta_dml.py            # full: 400 files of 2,000 rows; 10,000 files; 3 runs
    python benchmarks/delta_dml.py --quick    # smoke: 400 files of 200 rows; 1,000 files; 1 run

Results go to benchmarks/results/delta_dml[.quick].json; the markdown table on stdout.
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

import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import lakecore  # noqa: E402
from lakecore.storage import open_storage  # noqa: E402
from lakecore.testing.faults import CountingStorage  # noqa: E402

DATA = ROOT / "benchmarks" / "_data"
RESULTS = ROOT / "benchmarks" / "results"
GENERATOR_VERSION = 1
SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("name", pa.string()),
        ("value", pa.float64()),
        ("region", pa.string()),
    ]
)
WIDE = pa.schema([("id", pa.int64()), ("value", pa.float64()), ("part", pa.string())])


# ------------------------------------------------------------------------------ tables


def _build_400(root: Path, regions: int, rows: int) -> None:
    table = lakecore.create(str(root), SCHEMA, partition_by=["region"])
    per_append = regions * rows
    for a in range(20):
        ids = range(a * per_append, (a + 1) * per_append)
        table.append(
            pa.table(
                {
                    "id": pa.array(ids, pa.int64()),
                    "name": [os.urandom(24).hex() for _ in ids],
                    "value": pa.array([float(i % 1000) for i in ids]),
                    "region": [f"r{(i - a * per_append) // rows:02d}" for i in ids],
                },
                schema=SCHEMA,
            )
        )


def _build_10k(root: Path, parts: int, appends: int) -> None:
    table = lakecore.create(str(root), WIDE, partition_by=["part"])
    rows = parts * 10
    for a in range(appends):
        ids = range(a * rows, (a + 1) * rows)
        table.append(
            pa.table(
                {
                    "id": pa.array(ids, pa.int64()),
                    "value": pa.array([float(i) for i in ids]),
                    "part": [f"p{(i % rows) // 10:03d}" for i in ids],
                },
                schema=WIDE,
            )
        )


def table_for(name: str, spec: dict[str, Any]) -> Path:
    """The table of case ``name`` under ``_data/``, generated when missing or stale."""
    root = DATA / name
    marker = DATA / f"{name}.json"
    want = {"generator": GENERATOR_VERSION, **spec}
    if root.is_dir() and marker.is_file() and json.loads(marker.read_text()) == want:
        return root
    shutil.rmtree(root, ignore_errors=True)
    DATA.mkdir(parents=True, exist_ok=True)
    print(f"generating {name} {spec} ...", file=sys.stderr, flush=True)
    if name.startswith("dml_"):
        _build_400(root, spec["regions"], spec["rows"])
    else:
        _build_10k(root, spec["parts"], spec["appends"])
    from deltalake import DeltaTable

    files = len(DeltaTable(str(root)).file_uris())
    if files != spec["files"]:
        raise SystemExit(f"{name}: delta-rs sees {files} files, expected {spec['files']}")
    marker.write_text(json.dumps(want))
    return root


def data_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*.parquet") if "_delta_log" not in p.parts)


# ------------------------------------------------------------------------------ operations


def lakecore_ops(key: int) -> dict[str, Callable[[Any], object]]:
    row = pa.Table.from_pylist([{"id": key, "name": "new", "value": 1.0, "region": "r05"}], SCHEMA)
    return {
        "delete": lambda t: t.delete(f"id = {key}"),
        "update": lambda t: t.update({"name": "'x'"}, f"id = {key}"),
        "merge": lambda t: (
            t.merge(row, on="id").when_matched_update_all().when_not_matched_insert_all().execute()
        ),
    }


def delta_rs_ops(key: int) -> dict[str, Callable[[Any], object]]:
    row = pa.Table.from_pylist([{"id": key, "name": "new", "value": 1.0, "region": "r05"}], SCHEMA)
    return {
        "delete": lambda t: t.delete(f"id = {key}"),
        "update": lambda t: t.update(updates={"name": "'x'"}, predicate=f"id = {key}"),
        "merge": lambda t: (
            t.merge(row, "t.id = s.id", source_alias="s", target_alias="t")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute()
        ),
    }


def overwrite_rows() -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(10**9, 10**9 + 10), pa.int64()),
            "value": pa.array([0.5] * 10),
            "part": ["p007"] * 10,
        },
        schema=WIDE,
    )


def run_lakecore(template: Path, work: Path, op: Callable[[Any], object]) -> dict[str, Any]:
    root = work / "lakecore"
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(template, root)
    storage = CountingStorage(open_storage(str(root)))
    start = time.perf_counter()
    op(lakecore.open(str(root), storage=storage))
    seconds = time.perf_counter() - start
    read = files = 0
    for path, n in storage.bytes.items():
        if path.endswith(".parquet") and "_delta_log" not in path:
            read += n
            files += 1
    shutil.rmtree(root)
    return {"seconds": seconds, "bytes_read": read, "files_read": files}


def run_delta_rs(template: Path, work: Path, op: Callable[[Any], object]) -> dict[str, Any]:
    from deltalake import DeltaTable

    root = work / "delta_rs"
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(template, root)
    start = time.perf_counter()
    op(DeltaTable(str(root)))
    seconds = time.perf_counter() - start
    shutil.rmtree(root)
    return {"seconds": seconds}


def median_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "seconds": statistics.median(r["seconds"] for r in runs),
        "runs": [r["seconds"] for r in runs],
        **{k: runs[0][k] for k in ("bytes_read", "files_read") if k in runs[0]},
    }


def bench(
    template: Path, reps: int, lc: Callable[[Any], object], rs: Callable[[Any], object]
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        # One untimed run of each side first: the first call pays one-time costs (imports
        # such as sqlglot's parser, delta-rs's native module, cold page cache of the copy)
        # that would otherwise be the whole of a --quick single-run measurement.
        run_lakecore(template, work, lc)
        run_delta_rs(template, work, rs)
        lakecore_runs = [run_lakecore(template, work, lc) for _ in range(reps)]
        delta_rs_runs = [run_delta_rs(template, work, rs) for _ in range(reps)]
    return {"lakecore": median_of(lakecore_runs), "delta_rs": median_of(delta_rs_runs)}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small tables, one run")
    parser.add_argument("-n", type=int, default=None, help="runs per operation (median)")
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args()
    reps = args.n or (1 if args.quick else 3)
    small = {"files": 400, "regions": 20, "rows": 200 if args.quick else 2000}
    big = {
        "files": 1000 if args.quick else 10_000,
        "parts": 100,
        "appends": 10 if args.quick else 100,
    }
    suffix = ".quick" if args.quick else ""
    small_root = table_for(f"dml_400{suffix}", small)
    big_root = table_for(f"overwrite_10k{suffix}", big)
    import deltalake

    results: dict[str, Any] = {
        "machine": f"{platform.machine()} {os.cpu_count()} cpus, {platform.python_version()}",
        "deltalake": deltalake.__version__,
        "runs": reps,
        "warmup_runs": 1,
        "dml_400": {**small, "data_bytes": data_bytes(small_root)},
        "overwrite_10k": {**big, "data_bytes": data_bytes(big_root)},
        "operations": {},
    }
    key = 10 * small["regions"] * small["rows"] + 5 * small["rows"] + 7  # a file of r05
    for name, op in lakecore_ops(key).items():
        print(f"{name} ...", file=sys.stderr, flush=True)
        results["operations"][name] = bench(small_root, reps, op, delta_rs_ops(key)[name])
    print("overwrite(where) ...", file=sys.stderr, flush=True)
    results["operations"]["overwrite_where"] = bench(
        big_root,
        reps,
        lambda t: t.overwrite(overwrite_rows(), where="part = 'p007'"),
        lambda t: deltalake.write_deltalake(
            t, overwrite_rows(), mode="overwrite", predicate="part = 'p007'"
        ),
    )
    out = args.output or RESULTS / f"delta_dml{suffix}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(report(results))


def report(results: dict[str, Any]) -> str:
    lines = [
        "| operation | table | lakecore data read | of data bytes | lakecore | delta-rs | ratio |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for name, r in results["operations"].items():
        case = results["overwrite_10k" if name == "overwrite_where" else "dml_400"]
        lc, rs = r["lakecore"], r["delta_rs"]
        ratio = lc["seconds"] / rs["seconds"]
        share = lc["bytes_read"] / case["data_bytes"]
        lines.append(
            f"| {name} | {case['files']:,} files, {case['data_bytes'] / 1e6:.1f} MB "
            f"| {lc['files_read']} files, {lc['bytes_read'] / 1e3:,.0f} kB | {share:.2%} "
            f"| {lc['seconds']:.3f} s | {rs['seconds']:.3f} s | {ratio:.1f}x |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
