"""Every Delta corpus table's stats parse the same in one batch, chunk by chunk, and one by one.

A file's parsed stats depend on its own ``stats`` text only: the batch parse (pieces on
threads, fallbacks for bad values, conversion chunk by chunk) must give each file what
parsing its text alone gives, on the stats real writers (Spark, delta-rs, Delta's golden
tables) produced.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from lakecore_delta.source import DeltaSnapshotSource
from lakecore_delta.stats import parse_stats

import lakecore
from lakecore.errors import LakecoreError

from ..corpus import CORPUS
from .test_stats_equivalence import assert_same_tables

SHARED = Path(__file__).resolve().parents[3] / "shared" / "corpus"
TABLES = sorted(p for p in (CORPUS / "delta").iterdir() if p.is_dir()) if CORPUS.is_dir() else []


def _stats_of(path: str) -> tuple[pa.ChunkedArray, list[pa.Field]] | None:
    try:
        source = lakecore.open(path).snapshot().source
    except LakecoreError:
        return None  # tables lakecore refuses (unsupported features, corrupt logs)
    assert isinstance(source, DeltaSnapshotSource)
    return source.state.adds.column("stats"), source.state.data_fields()


def test_corpus_stats_parse_the_same_in_a_batch_and_one_by_one() -> None:
    assert TABLES, f"no Delta corpus under {CORPUS}"
    checked = files = with_stats = 0
    for table in TABLES:
        found = _stats_of(str(table))
        if found is None:
            continue
        stats, fields = found
        batch = parse_stats(stats, fields)
        whole = stats.combine_chunks() if stats.num_chunks else pa.array([], pa.string())
        assert_same_tables(parse_stats(whole, fields), batch)
        if len(whole):
            alone = pa.concat_tables(
                [parse_stats(whole.slice(i, 1), fields) for i in range(len(whole))]
            )
            assert_same_tables(alone, batch)
        checked += 1
        files += len(whole)
        with_stats += len(whole) - whole.null_count
    # The shared corpus: 114 tables, 2 refused; another corpus (LAKECORE_CORPUS) differs.
    if CORPUS.resolve() == SHARED.resolve():
        assert (checked, files, with_stats) == (112, 536, 377)
    assert checked > 0 and with_stats > 0
