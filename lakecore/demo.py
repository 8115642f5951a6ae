"""The README's demo: open the corpus Delta, Hudi and Lance tables, show what lakecore sees,
time-travel, write Delta, Hudi and Lance tables, and hand them to Spark (local mode).

Run with ``make demo`` or ``python -m lakecore.demo --corpus PATH``.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table as RichTable

import lakecore
from lakecore.errors import LakecoreError

DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
SHOWCASE = "golden__dv-partitioned-with-checkpoint"
HUDI_SHOWCASE = "mor_avro_v8_trips_8i3u1d"


def corpus_path(given: str | None) -> Path:
    """The corpus root: the argument, else ``LAKECORE_CORPUS``, else ``../shared/corpus``."""
    return Path(given or os.environ.get("LAKECORE_CORPUS") or DEFAULT_CORPUS)


def overview(console: Console, root: Path, fmt: str) -> None:
    """Open every table of one format in the corpus and print one line each."""
    tables = sorted(p for p in (root / fmt).iterdir() if p.is_dir())
    grid = RichTable(title=f"{len(tables)} {fmt} tables in {root / fmt}")
    grid.add_column("table", no_wrap=True)
    for col in ("version", "columns", "files", "rows", "ms"):
        grid.add_column(col, justify="right")
    for path in tables:
        start = time.perf_counter()
        try:
            snap = lakecore.open(str(path)).snapshot()
            rows = str(snap.to_arrow().num_rows)
            cells = [str(snap.version), str(len(snap.schema)), str(snap.files().num_rows), rows]
        except LakecoreError as exc:
            cells = ["-", "-", "-", f"[yellow]{type(exc).__name__}[/]"]
        ms = f"{(time.perf_counter() - start) * 1000:.0f}"
        grid.add_row(path.name, *cells, ms)
    console.print(grid)


def showcase(console: Console, root: Path) -> None:
    """Show one table in depth: schema, file index, history, time travel."""
    table = lakecore.open(str(root / "delta" / SHOWCASE))
    snap = table.snapshot()
    console.rule(f"{SHOWCASE} ({table.format}, version {table.version})")
    console.print("[bold]schema[/]", snap.schema)
    console.print("[bold]partition columns[/]", snap.partition_columns)
    files = snap.files()
    console.print(f"[bold]file index[/] {files.num_rows} files; first 3:")
    for row in files.slice(0, 3).to_pylist():
        console.print(
            f"  {row['path']}  size={row['size']} rows={row['record_count']} "
            f"partition={row['partition']} deleted={(row['deletion'] or {}).get('cardinality', 0)}"
        )
    console.print("[bold]history[/] (newest 5)")
    for entry in table.history(limit=5):
        console.print(f"  v{entry.version}  {entry.operation}  {entry.parameters}")
    for version in (0, snap.version):
        console.print(
            f"[bold]time travel[/] version {version}: "
            f"{table.to_arrow(version=version).num_rows} rows"
        )


def hudi_showcase(console: Console, root: Path) -> None:
    """A merge-on-read Hudi table: file slices with log files, instants, time travel."""
    table = lakecore.open(str(root / "hudi" / HUDI_SHOWCASE))
    snap = table.snapshot()
    console.rule(f"{HUDI_SHOWCASE} ({table.format}, instant {table.version})")
    features = snap.features
    console.print(
        "[bold]table type[/]",
        "merge-on-read" if features.merge_on_read else "copy-on-write",
        "version",
        features.format_version,
    )
    for row in snap.files().to_pylist():
        others = len(row["data_files"]) - 1
        console.print(f"  slice {row['path']}  + {others} more data file(s)")
    console.print("[bold]history[/]")
    for entry in reversed(table.history()):
        console.print(f"  {entry.version}  {entry.operation}")
    for entry in table.history()[::3]:
        if entry.operation in ("indexing", "compaction", "clean", "rollback"):
            continue
        rows = table.to_arrow(version=entry.version).num_rows
        console.print(f"[bold]time travel[/] {entry.version}: {rows} rows")
    optimized = lakecore.open(table.uri, options={"read_optimized": "true"}).to_arrow()
    console.print(
        f"[bold]snapshot[/] {snap.to_arrow().num_rows} rows (logs merged); "
        f"[bold]read-optimized[/] {optimized.num_rows} rows (base files only)"
    )


def hudi_write_demo(console: Console) -> None:
    """Write a merge-on-read Hudi table in pure Python: insert, upsert, delete, compact."""
    import tempfile

    import pyarrow as pa

    with tempfile.TemporaryDirectory(prefix="lakecore-demo-") as tmp:
        uri = f"{tmp}/trips"
        rows = pa.table(
            {
                "id": ["t1", "t2", "t3"],
                "ts": [1, 1, 1],
                "fare": [10.0, 20.0, 30.0],
                "city": ["sf", "sf", "nyc"],
            }
        )
        table = lakecore.create(
            uri,
            rows.schema,
            format="hudi",
            partition_by=["city"],
            properties={
                "record_key": "id",
                "precombine_field": "ts",
                "table_type": "MERGE_ON_READ",
            },
        )
        console.rule(f"writing a Hudi merge-on-read table {uri}")
        first = table.append(rows).version
        table.upsert(pa.table({"id": ["t2", "t4"], "ts": [2, 2], "fare": [25.0, 40.0],
                               "city": ["sf", "nyc"]}))  # fmt: skip
        table.delete("id = 't1'")
        slices = table.snapshot().files().column("data_files").to_pylist()
        logs = sum(len(x) - 1 for x in slices if x)  # base file first (none after one append)
        console.print(f"  after upsert + delete: {logs} log file(s) in the file slices")
        table.compact()
        for entry in reversed(table.history()):
            console.print(f"  {entry.version}  {entry.operation}")
        now = sorted(table.to_arrow(columns=["id", "fare"]).to_pylist(), key=lambda r: r["id"])
        console.print("[bold]now[/]", now)
        console.print("[bold]first instant[/]", table.to_arrow(version=first).num_rows, "rows")


def lance_demo(console: Console, uri: str) -> bool:
    """Write a Lance dataset at ``uri`` with lakecore (no pylance dataset API): create, append,
    delete (a deletion file), update; then its versions, time travel and fragment index.
    Returns False (and says so) when the Lance plugin is not installed."""
    import pyarrow as pa

    from lakecore.errors import PluginNotInstalledError

    schema = pa.schema([("id", pa.int64()), ("item", pa.string()), ("qty", pa.int32())])
    try:
        table = lakecore.create(uri, schema, format="lance")
    except PluginNotInstalledError as exc:
        console.print(f"[yellow]Lance demo skipped[/]: {exc}")
        return False
    console.rule(f"writing a Lance dataset {uri}")
    for start in (0, 4):
        ids = list(range(start, start + 4))
        table.append(
            pa.table(
                {"id": ids, "item": [f"item-{i}" for i in ids], "qty": [i * 10 for i in ids]},
                schema=schema,
            )
        )
    table.delete("id = 2")
    table.update({"qty": -1}, where="id >= 6")
    for entry in reversed(table.history()):
        console.print(f"  v{entry.version}  {entry.operation}")
    snap = table.snapshot()
    console.print(f"[bold]file index[/] {snap.files().num_rows} fragments:")
    for row in snap.files().to_pylist():
        deleted = (row["deletion"] or {}).get("cardinality", 0)
        console.print(
            f"  fragment {row['fragment_id']}: {len(row['data_files'])} data file(s), "
            f"{row['record_count']} rows, {deleted} deleted"
        )
    now = sorted(table.to_arrow(columns=["id", "qty"]).to_pylist(), key=lambda r: r["id"])
    console.print("[bold]now[/]", now)
    for version in (2, 3):
        rows = table.to_arrow(version=version).num_rows
        console.print(f"[bold]time travel[/] version {version}: {rows} rows")
    return True


def spark_demo(console: Console, root: Path, lance_uri: str | None = None) -> None:
    """Plan with lakecore, read in Spark tasks (local mode): the Hudi MoR table, a Delta one,
    and the Lance dataset ``lance_uri`` when given."""
    try:
        import lakecore.spark
    except ImportError as exc:  # pragma: no cover - the spark extra is part of `make install`
        console.print(f"[yellow]Spark demo skipped[/]: {exc}")
        return
    console.rule("Spark (local mode): lakecore plans, Spark tasks read")
    spark = lakecore.spark.session()
    try:
        reads: list[tuple[Path, str | None]] = [
            (root / "hudi" / HUDI_SHOWCASE, "fare > 20"),
            (root / "delta" / SHOWCASE, None),
        ]
        if lance_uri is not None:
            reads.append((Path(lance_uri), "qty < 50"))
        for path, where in reads:
            df = lakecore.spark.read(spark, str(path), where=where)
            local = lakecore.open(str(path)).scan(where=where).to_arrow().num_rows
            console.print(
                f"  {path.name} ({lakecore.open(str(path)).format}) where={where!r}: "
                f"Spark counted {df.count()} rows "
                f"(lakecore alone: {local}), {df.rdd.getNumPartitions()} Spark partition(s)"
            )
    finally:
        spark.stop()


def write_demo(console: Console) -> None:
    """Create a table in a temporary directory, change it, and read it back."""
    import tempfile

    import pyarrow as pa

    with tempfile.TemporaryDirectory(prefix="lakecore-demo-") as tmp:
        uri = f"{tmp}/orders"
        schema = pa.schema([("id", pa.int64()), ("region", pa.string()), ("amount", pa.float64())])
        table = lakecore.create(
            uri,
            schema,
            partition_by=["region"],
            properties={
                "delta.enableDeletionVectors": "true",
                "delta.enableChangeDataFeed": "true",
            },
        )
        console.rule(f"writing {uri}")
        table.append(
            pa.table(
                {
                    "id": [1, 2, 3, 4],
                    "region": ["eu", "us", "eu", "apac"],
                    "amount": [10.0, 20.0, 30.0, 40.0],
                }
            )
        )
        table.delete("amount < 15")
        table.update({"amount": "amount * 2"}, where="region = 'eu'")
        (
            table.merge(
                pa.table({"id": [4, 5], "region": ["apac", "us"], "amount": [41.0, 50.0]}), on="id"
            )
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute()
        )
        for entry in reversed(table.history()):
            console.print(f"  v{entry.version}  {entry.operation}")
        console.print("[bold]now[/]", sorted(table.to_arrow().to_pylist(), key=lambda r: r["id"]))
        console.print("[bold]version 1[/]", table.to_arrow(version=1).num_rows, "rows")
        changes = table.changes(2)
        console.print(
            f"[bold]change feed since v2[/] {changes.num_rows} rows:",
            sorted(set(changes.column("_change_type").to_pylist())),
        )
        scan = table.scan(where="region = 'eu'")
        console.print("[bold]scan region = 'eu'[/]", str(scan.explain()).replace("\n", "; "))


def main(argv: list[str] | None = None) -> int:
    """Run the demo; returns the process exit code."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", help="corpus root (default: ../shared/corpus)")
    args = parser.parse_args(argv)
    root = corpus_path(args.corpus)
    console = Console(width=max(Console().width, 120))
    if not (root / "delta").is_dir():
        console.print(f"[red]no corpus at {root}[/]: pass --corpus or set LAKECORE_CORPUS")
        return 2
    import tempfile

    overview(console, root, "delta")
    overview(console, root, "hudi")
    if (root / "lance").is_dir():
        overview(console, root, "lance")
    showcase(console, root)
    hudi_showcase(console, root)
    write_demo(console)
    hudi_write_demo(console)
    with tempfile.TemporaryDirectory(prefix="lakecore-demo-") as tmp:
        lance_uri = f"{tmp}/inventory.lance"
        written = lance_demo(console, lance_uri)
        spark_demo(console, root, lance_uri if written else None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
