"""Lance open and read benchmark: lakecore vs pylance (``lance.dataset``) in the same run.

Two datasets, written by pylance on first use under ``benchmarks/_data/`` from a fixed seed (a
``<case>.json`` marker records the spec; delete the directory to start over):

- ``versions_1000``: ``--appends`` appends (1,000 in the full run) of 100 rows each, one
  fragment and one version per append (the first creates the dataset): 1,000 versions and
  1,000 fragments, one small data file each;
- ``rows_1m``: 1,000,000 rows (10 fragments of 100,000 rows: int64 ``id``, int32 ``qty``,
  float64 ``price``, a 16-character string ``name`` and a low-cardinality string ``city``),
  then one delete (``id % 7 = 3``), so every fragment has a deletion file.

What is timed, each measurement from a path to the result, median of ``-n`` repetitions,
lakecore and pylance interleaved (the order alternates each repetition) in one process, every
repetition with a fresh ``lakecore.open`` / ``lance.dataset`` (no object or session reused;
the OS page cache is warm for both after an untimed warm-up of each):

- *open*: ``lakecore.open(path).snapshot()`` vs ``lance.dataset(path)`` (the latest version;
  both read the latest manifest);
- *file index*: ``snapshot.files()`` after the open vs ``lance.dataset(path).get_fragments()``
  (one row per fragment with its data files, row counts and deletion file vs one
  ``LanceFragment`` object per fragment from the same manifest); open included on both sides;
- *full read*: ``lakecore.open(path).to_arrow()`` vs ``lance.dataset(path).to_table()``
  (deletions applied, every column);
- *filtered read* (``rows_1m`` only): ``Table.scan(where).to_arrow()`` vs
  ``to_table(filter=...)`` with ``qty < 10`` (about 1% of the rows; neither side has an
  index to prune with, both read the column and filter).

Every run checks that both return the same number of fragments and rows (and the same row
digest for the full read, once) or fails.

    python benchmarks/lance.py            # full: 1,000 versions; 1,000,000 rows; 9 repetitions
    python benchmarks/lance.py --quick    # smoke: 50 versions; 100,000 rows; 2 repetitions

Results go to benchmarks/results/lance[.quick].json; the markdown table on stdout.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

# This script is named like the `lance` package (pylance) it measures against: drop its own
# directory from the import path so that `import lance` finds the package.
HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

import lance  # noqa: E402

import lakecore  # noqa: E402

DATA = ROOT / "benchmarks" / "_data"
RESULTS = ROOT / "benchmarks" / "results"
GENERATOR_VERSION = 1
SEED = 20261125
FILTER = "qty < 10"


# ------------------------------------------------------------------------------ datasets


def _rows(rng: np.random.Generator, start: int, n: int) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.int64)
    letters = rng.integers(97, 123, size=(n, 16), dtype=np.uint8)
    return pa.table(
        {
            "id": ids,
            "qty": pa.array(rng.integers(0, 1000, n, dtype=np.int32)),
            "price": pa.array(rng.random(n) * 100),
            "name": pa.array(letters.view("S16").ravel().astype(str)),
            "city": pa.array([f"city-{i % 20:02d}" for i in ids]),
        }
    )


def _build_versions(root: Path, appends: int) -> None:
    rng = np.random.default_rng(SEED)
    for a in range(appends):
        mode = "create" if a == 0 else "append"
        lance.write_dataset(_rows(rng, a * 100, 100), str(root), mode=mode)


def _build_rows(root: Path, rows: int, per_fragment: int) -> None:
    rng = np.random.default_rng(SEED)
    batches = (_rows(rng, s, min(per_fragment, rows - s)) for s in range(0, rows, per_fragment))
    schema = _rows(np.random.default_rng(0), 0, 1).schema
    reader = pa.RecordBatchReader.from_batches(schema, (b for t in batches for b in t.to_batches()))
    ds = lance.write_dataset(reader, str(root), max_rows_per_file=per_fragment)
    ds.delete("id % 7 = 3")


def dataset_for(name: str, spec: dict[str, Any]) -> Path:
    """The dataset of case ``name`` under ``_data/``, generated when missing or stale."""
    root = DATA / name
    marker = DATA / f"{name}.json"
    want = {"generator": GENERATOR_VERSION, "pylance": lance.__version__, **spec}
    if root.is_dir() and marker.is_file() and json.loads(marker.read_text()) == want:
        return root
    shutil.rmtree(root, ignore_errors=True)
    DATA.mkdir(parents=True, exist_ok=True)
    print(f"generating {name} {spec} ...", file=sys.stderr, flush=True)
    start = time.perf_counter()
    if "appends" in spec:
        _build_versions(root, spec["appends"])
    else:
        _build_rows(root, spec["rows"], spec["per_fragment"])
    ds = lance.dataset(str(root))
    if len(ds.get_fragments()) != spec["fragments"]:
        raise SystemExit(f"{name}: pylance sees {len(ds.get_fragments())} fragments")
    print(f"  {time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)
    marker.write_text(json.dumps(want))
    return root


def data_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in (root / "data").rglob("*.lance"))


# ------------------------------------------------------------------------------ measures


def measures(path: str, filtered: bool) -> dict[str, tuple[Callable[[], Any], Callable[[], Any]]]:
    """name -> (lakecore, pylance); each returns something whose size the run checks."""
    out: dict[str, tuple[Callable[[], Any], Callable[[], Any]]] = {
        "open": (
            lambda: lakecore.open(path).snapshot().version,
            lambda: lance.dataset(path).version,
        ),
        "file index": (
            lambda: lakecore.open(path).snapshot().files().num_rows,
            lambda: len(lance.dataset(path).get_fragments()),
        ),
        "full read": (
            lambda: lakecore.open(path).to_arrow(),
            lambda: lance.dataset(path).to_table(),
        ),
    }
    if filtered:
        out["filtered read"] = (
            lambda: lakecore.open(path).scan(FILTER).to_arrow(),
            lambda: lance.dataset(path).to_table(filter=FILTER),
        )
    return out


def size(result: Any) -> int:
    return int(result.num_rows) if isinstance(result, pa.Table) else int(result)


def digest(table: pa.Table) -> str:
    """Order-independent digest of the rows (sorted by ``id``)."""
    table = table.sort_by("id")
    h = hashlib.sha256()
    for batch in table.to_batches():
        for column in batch.columns:
            for buf in column.buffers():
                if buf is not None:
                    h.update(buf)
    return h.hexdigest()


def bench(path: Path, reps: int, filtered: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, (lc, pl) in measures(str(path), filtered).items():
        lc_size, pl_size = size(lc()), size(pl())  # warm-up, untimed
        if lc_size != pl_size:
            raise SystemExit(f"{path.name} {name}: lakecore {lc_size} vs pylance {pl_size}")
        if name == "full read":
            a, b = lc(), pl()
            a = a.select(b.column_names).combine_chunks()
            if digest(a) != digest(b.combine_chunks()):
                raise SystemExit(f"{path.name}: lakecore and pylance read different rows")
        runs: dict[str, list[float]] = {"lakecore": [], "pylance": []}
        for r in range(reps):
            order = [("lakecore", lc), ("pylance", pl)]
            for tool, fn in order if r % 2 == 0 else order[::-1]:
                start = time.perf_counter()
                got = size(fn())
                runs[tool].append(time.perf_counter() - start)
                if got != lc_size:
                    raise SystemExit(f"{path.name} {name} {tool}: {got} != {lc_size}")
        out[name] = {
            "size": lc_size,
            **{
                tool: {"median": statistics.median(t), "best": min(t), "runs": t}
                for tool, t in runs.items()
            },
        }
        print(
            f"  {name}: {out[name]['lakecore']['median']:.4f} s vs "
            f"{out[name]['pylance']['median']:.4f} s",
            file=sys.stderr,
            flush=True,
        )
    return out


def loadavg() -> float:
    return os.getloadavg()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small datasets, 2 repetitions")
    parser.add_argument("-n", type=int, default=None, help="repetitions per measure (median)")
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args()
    reps = args.n or (2 if args.quick else 9)
    suffix = ".quick" if args.quick else ""
    appends = 50 if args.quick else 1000
    rows = 100_000 if args.quick else 1_000_000
    cases = {
        f"versions_{appends}": {"appends": appends, "fragments": appends},
        "rows_1m" if rows == 1_000_000 else f"rows_{rows // 1000}k": {
            "rows": rows,
            "per_fragment": rows // 10,
            "fragments": 10,
        },
    }
    results: dict[str, Any] = {
        "machine": (
            f"{platform.machine()} {os.cpu_count()} cpus, Python {platform.python_version()}"
        ),
        "pylance": lance.__version__,
        "pyarrow": pa.__version__,
        "repetitions": reps,
        "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "cases": {},
    }
    for name, spec in cases.items():
        root = dataset_for(name, spec)
        load = loadavg()
        print(f"{name} (load {load:.2f}) ...", file=sys.stderr, flush=True)
        results["cases"][name] = {
            **spec,
            "versions": lance.dataset(str(root)).version,
            "rows": lance.dataset(str(root)).count_rows(),
            "data_bytes": data_bytes(root),
            "load_before": load,
            "measures": bench(root, reps, filtered="rows" in spec),
            "load_after": loadavg(),
        }
    out = args.output or RESULTS / f"lance{suffix}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(report(results))


def report(results: dict[str, Any]) -> str:
    lines = [
        "| dataset | measure | lakecore | pylance | lakecore / pylance | best runs: ratio |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for name, case in results["cases"].items():
        label = (
            f"`{name}` ({case['versions']:,} versions, {case['fragments']:,} fragments, "
            f"{case['rows']:,} rows, {case['data_bytes'] / 1e6:.1f} MB)"
        )
        for measure, m in case["measures"].items():
            lc, pl = m["lakecore"]["median"], m["pylance"]["median"]
            best = m["lakecore"]["best"] / m["pylance"]["best"]
            lines.append(
                f"| {label} | {measure} | {_ms(lc)} | {_ms(pl)} | {lc / pl:.2f}x | {best:.2f}x |"
            )
    lines.append("")
    lines.append(
        f"{results['machine']}, pylance {results['pylance']}, pyarrow {results['pyarrow']}; "
        f"medians of {results['repetitions']}, run {results['started']}; 1-minute load "
        + ", ".join(
            f"`{n}` {c['load_before']:.2f}->{c['load_after']:.2f}"
            for n, c in results["cases"].items()
        )
        + "."
    )
    return "\n".join(lines)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.1f} ms" if seconds < 10 else f"{seconds:,.1f} s"


if __name__ == "__main__":
    main()
