"""Hudi DML benchmark: bytes a one-row delete/update/upsert/merge reads from a 400-slice table.

The table is written by lakecore's Hudi writer (table version 8, partitioned by ``city``, no
metadata table): ``--appends`` inserts of ``--partitions`` partitions each, one file group per
partition per insert, so ``appends x partitions`` slices (default 20 x 20 = 400) of ``--rows``
rows (ids contiguous per slice, a random 48-character text column so files do not compress
away). Each operation runs on a fresh copy of the table through a Storage that counts the
bytes read from every path:

- ``delete``: ``delete("id = <k>")``; ``update``: ``update({"name": "'x'"}, "id = <k>")``;
- ``upsert``: ``Table.upsert`` of one row with an existing key; ``merge``: MERGE of that row
  (update all / insert all);
- ``overwrite_partition``: ``overwrite(<one row>, where="city = '<one partition>'")``.

Reported per operation: the bytes read from data files (base and log files; footers included:
without a metadata table the planner's file index takes min/max from every base file's
footer), how many data files were read beyond their footer (more than 8 KiB), and lakecore's
wall time, each with pruning
(the writer as shipped) and without (``--no-pruning`` monkeypatches the candidate choice to
every slice: the behaviour before issue 10). hudi-rs does not write, so there is no peer time.

    python benchmarks/hudi_dml.py            # full: 400 slices of 2,000 rows
    python benchmarks/hudi_dml.py --quick    # smoke: 40 slices of 500 rows

Results go to benchmarks/results/hudi_dml[.quick].json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import lakecore
from lakecore.storage import open_storage
from lakecore.testing.faults import CountingStorage

FOOTER = 8192  # more than a footer read takes from a file: the file's rows were read
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("name", pa.string()),
        pa.field("ts", pa.int64()),
        pa.field("city", pa.string()),
    ]
)


def build(root: Path, appends: int, partitions: int, rows: int) -> int:
    table = lakecore.create(
        str(root),
        SCHEMA,
        "hudi",
        ["city"],
        {"record_key": "id", "precombine_field": "ts", "table_version": "8"},
    )
    per_append = partitions * rows
    for a in range(appends):
        ids = range(a * per_append, (a + 1) * per_append)
        table.append(
            pa.table(
                {
                    "id": pa.array(ids, pa.int64()),
                    "name": [os.urandom(24).hex() for _ in ids],
                    "ts": pa.array([1] * per_append, pa.int64()),
                    "city": [f"c{(i - a * per_append) // rows:03d}" for i in ids],
                },
                schema=SCHEMA,
            )
        )
    return per_append * appends


def data_bytes(root: Path) -> int:
    return sum(
        p.stat().st_size
        for p in root.rglob("*")
        if p.is_file()
        and ".hoodie" not in p.parts
        and (p.suffix == ".parquet" or ".log." in p.name)
    )


def operations(key: int) -> dict[str, Any]:
    row = pa.Table.from_pylist([{"id": key, "name": "new", "ts": 9, "city": "c005"}], SCHEMA)
    return {
        "delete": lambda t: t.delete(f"id = {key}"),
        "update": lambda t: t.update({"name": "'x'"}, f"id = {key}"),
        "upsert": lambda t: t.upsert(row),
        "merge": lambda t: (
            t.merge(row, on="id").when_matched_update_all().when_not_matched_insert_all().execute()
        ),
        "overwrite_partition": lambda t: t.overwrite(row, where="city = 'c005'"),
    }


def measure(template: Path, work: Path, name: str, op: Any) -> dict[str, Any]:
    root = work / name
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(template, root)
    storage = CountingStorage(open_storage(str(root)))
    table = lakecore.open(str(root), storage=storage)
    storage.reset()
    start = time.perf_counter()
    op(table)
    seconds = time.perf_counter() - start
    read = slices = 0
    for path, n in storage.bytes.items():
        if path.endswith(".parquet") or ".log." in os.path.basename(path):
            read += n
            slices += n > FOOTER
    shutil.rmtree(root)
    return {"seconds": seconds, "bytes_read": read, "files_read": slices}


def no_pruning() -> None:
    """Make every write read every slice (the writer before issue 10)."""
    from lakecore_hudi.write import writer

    every = writer.candidate_slices
    writer.candidate_slices = lambda snapshot, where: every(snapshot, None)  # type: ignore[assignment]
    writer.slices_for_keys = lambda snapshot, *rest: every(snapshot, None)  # type: ignore[assignment]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-pruning", action="store_true")
    parser.add_argument("--output", type=Path, default=None, help="results JSON path")
    args = parser.parse_args()
    appends, partitions, rows = (4, 10, 500) if args.quick else (20, 20, 2000)
    if args.no_pruning:
        no_pruning()
    results: dict[str, Any] = {
        "machine": f"{platform.machine()} {os.cpu_count()} cpus (shared with other work)",
        "slices": appends * partitions,
        "rows_per_slice": rows,
        "pruning": not args.no_pruning,
    }
    with tempfile.TemporaryDirectory() as tmp:
        template = Path(tmp) / "template"
        t0 = time.perf_counter()
        total_rows = build(template, appends, partitions, rows)
        results["build_seconds"] = time.perf_counter() - t0
        results["rows"] = total_rows
        results["table_data_bytes"] = data_bytes(template)
        key = (appends // 2) * partitions * rows + 5 * rows + 7  # in a slice of c005
        results["operations"] = {
            name: measure(template, Path(tmp), name, op) for name, op in operations(key).items()
        }
    total = results["table_data_bytes"]
    for name, r in results["operations"].items():
        print(
            f"{name:20s} {r['files_read']:4d} files read  {r['bytes_read'] / 1e6:7.2f} MB "
            f"({100 * r['bytes_read'] / total:5.2f}% of the data)  {r['seconds']:.2f} s"
        )
    print(f"table: {results['slices']} slices, {total / 1e6:.1f} MB of data files")
    suffix = (".quick" if args.quick else "") + (".nopruning" if args.no_pruning else "")
    output = args.output or Path(__file__).parent / "results" / f"hudi_dml{suffix}.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
