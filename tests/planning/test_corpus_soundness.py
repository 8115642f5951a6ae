"""Soundness of pruning on every corpus Delta table, with the stats real writers wrote.

For each table, every file is read once on its own; then, for predicates built from the data
itself (boundary values: each column's min and max, where truncated stats bite), the test
checks that no file holding a matching row is pruned, and that a scan returns exactly the
matching rows of a full read.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import LakecoreError
from lakecore.expr import tree as ex
from lakecore.expr.arrow_filter import to_arrow_filter
from lakecore.expr.coerce import supported_type
from lakecore.planning import Scan, read_files
from lakecore.plugins import load_registry
from lakecore.storage import open_storage

MIN_TABLES = 100
DELTA = load_registry().get("delta")
MAX_COLUMNS = 6
FULL_READS_PER_TABLE = 4
"""Predicates per table whose scan is also read and compared row by row with a full read."""
FULL_READ_MAX_ROWS = 5_000


def boundary_predicates(table: pa.Table) -> Iterator[ex.Predicate]:
    """Predicates at the edges of each primitive column's values."""
    columns = [f for f in table.schema if supported_type(f.type)][:MAX_COLUMNS]
    for f in columns:
        column = ex.Column(f.name)
        yield ex.IsNull(column)
        values = table.column(f.name).drop_null()
        if pa.types.is_floating(f.type):
            values = values.filter(pc.invert(pc.is_nan(values)))
        if pa.types.is_boolean(f.type) or len(values) == 0:
            continue
        low, high = pc.min(values).as_py(), pc.max(values).as_py()
        yield column.eq(high)
        yield column.ge(high)
        yield column.le(low)
        yield ~column.eq(low)
        if isinstance(high, str) and high:
            yield column.like(high[:2].replace("%", "").replace("_", "") + "%")


FILE = "__file_number"


def read_by_file(scan: Scan) -> pa.Table:
    """All live rows, read one file-index row at a time, with its number in ``FILE``."""
    parts = []
    files = scan.files()
    for number in range(files.num_rows):
        batches = list(read_files(scan.context, files.slice(number, 1)))
        rows = pa.Table.from_batches(batches, scan.snapshot.schema)
        parts.append(rows.append_column(FILE, pa.array([number] * rows.num_rows, pa.int64())))
    schema = scan.snapshot.schema.append(pa.field(FILE, pa.int64()))
    return pa.concat_tables(parts) if parts else schema.empty_table()


def check_table(path: Path) -> int | None:
    """Check one table; return how many predicates were checked (None: data unreadable)."""
    try:
        snapshot = DELTA.load_snapshot(open_storage(str(path)))
        numbered = read_by_file(snapshot.scan())
    except LakecoreError:
        return None  # log-only or unsupported tables; MIN_TABLES keeps this honest
    full = numbered.drop_columns([FILE])
    all_paths = snapshot.files().column("path").to_pylist()
    checked = 0
    for pred in boundary_predicates(full):
        scan = snapshot.scan(pred)
        row_filter = to_arrow_filter(scan.predicate, snapshot.schema)  # type: ignore[arg-type]
        matches = numbered.filter(row_filter)
        needed = {all_paths[i] for i in pc.unique(matches.column(FILE)).to_pylist()}
        pruned = needed - set(scan.files().column("path").to_pylist())
        assert not pruned, f"{path.name}: {pred} pruned files with matching rows: {pruned}"
        if checked < FULL_READS_PER_TABLE and full.num_rows <= FULL_READ_MAX_ROWS:
            expected = matches.drop_columns([FILE])
            assert _rows(scan.to_arrow()) == _rows(expected), f"{path.name}: {pred}"
        checked += 1
    return checked


def _rows(table: pa.Table) -> list[str]:
    return sorted(repr(sorted(r.items())) for r in table.to_pylist())


def test_pruning_is_sound_on_every_corpus_table(corpus: Path) -> None:
    tables = sorted((corpus / "delta").iterdir())
    results = {p.name: check_table(p) for p in tables}
    checked = {name: n for name, n in results.items() if n is not None}
    assert len(checked) >= MIN_TABLES, f"only {len(checked)} corpus tables were readable"
    assert sum(checked.values()) > 10 * len(checked), checked
