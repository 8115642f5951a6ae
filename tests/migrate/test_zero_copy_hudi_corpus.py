"""Every corpus Delta table, copied, migrated in place to Hudi with ``mode="metadata"``: either
every file is adopted and lakecore's Hudi reader returns the corpus's rows (digest equal), no
data file written, or the migration refuses as pinned below, naming why, and writes nothing.
(hudi-rs 0.5.0 cannot read the result: test_zero_copy_hudi.py pins that.) The whole corpus
is ``slow``; the default run takes one table of each outcome kind.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

import lakecore
from lakecore.errors import MigrationError
from tests.migrate.engines import SourceTable, corpus, expected_digest, source_tables, user_columns

DELTA_TABLES = source_tables("delta")
# table -> why mode="metadata" in place refuses it (the words of the MigrationError).
REFUSED = {
    "deltars__cdf-table-with-cdc-and-dvs": r"row-level deletes",
    "deltars__checkpoint-v2-table": r"as timestamp\[ns\]",
    "deltars__delta-1.2.1-only-struct-stats": r"as timestamp\[ns\]",
    "deltars__delta-checkpoint-stats-optional": r"as timestamp\[ns\]",
    "deltars__http_requests": r"as timestamp\[us\],",
    "deltars__spark-variant-checkpoint": r"as struct<value",
    "deltars__table-with-dv-small": r"row-level deletes",
    "deltars__table_with_column_mapping": r"is not a partition path",
    "gen__partitioned_special_chars": r"names partition values",
    "golden__data-reader-date-types-America": r"as timestamp\[ns\]",
    "golden__data-reader-date-types-Asia": r"as timestamp\[ns\]",
    "golden__data-reader-date-types-Etc": r"as timestamp\[ns\]",
    "golden__data-reader-date-types-Iceland": r"as timestamp\[ns\]",
    "golden__data-reader-date-types-PST": r"as timestamp\[ns\]",
    "golden__data-reader-date-types-UTC": r"as timestamp\[ns\]",
    "golden__data-reader-map": r"Avro map keys must be strings",
    "golden__data-reader-partition-values": r"do not read back from path text",
    "golden__data-reader-timestamp_ntz": r"do not read back from path text",
    "golden__data-reader-timestamp_ntz-name-mode": r"do not read back from path text",
    "golden__data-skipping-basic-stats-all-types": r"as timestamp\[ns\]",
    "golden__data-skipping-basic-stats-all-types-checkpoint": r"as timestamp\[ns\]",
    "golden__data-skipping-basic-stats-all-types-columnmapping-id": r"column mapping",
    "golden__dv-partitioned-with-checkpoint": r"row-level deletes",
    "golden__hive-deltatbl-map-types-correctly": r"as timestamp\[ns\]",
    "golden__kernel-timestamp-PST": r"do not read back from path text",
    "golden__kernel-timestamp-TIMESTAMP_MICROS": r"do not read back from path text",
    "golden__kernel-timestamp-TIMESTAMP_MILLIS": r"do not read back from path text",
    "golden__kernel-timestamp-partition-col-ISO8601": r"do not read back from path text",
    "golden__log-replay-dv-key-cases": r"row-level deletes",
    "golden__parquet-all-types": r"as timestamp\[ns\]",
    "golden__spark-variant-checkpoint": r"as struct<value",
    "golden__table-with-columnmapping-mode-name": r"column mapping",
    "golden__table-with-icebegCompatV2Enabled": r"column mapping",
}
QUICK = {
    "deltars__delta-0.8.0-null-partition",  # adopted (a null partition value)
    "deltars__table-with-dv-small",  # deletion vectors
    "golden__table-with-columnmapping-mode-name",  # column mapping
}


def tree(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.relative_to(root).parts[0] not in (".hoodie", "_lakecore_migration")
    }


def cases() -> list[object]:
    return [
        pytest.param(t, id=t.name, marks=() if t.name in QUICK else pytest.mark.slow)
        for t in DELTA_TABLES
    ]


@pytest.mark.parametrize("table", cases())
def test_corpus_delta_table_in_place_to_hudi(table: SourceTable, tmp_path: Path) -> None:
    if table.skip_reason:
        pytest.skip(table.skip_reason)
    root = tmp_path / table.name
    shutil.copytree(table.path, root)
    before = tree(root)
    refusal = REFUSED.get(table.name)
    if refusal is not None:
        with pytest.raises(MigrationError, match=refusal):
            lakecore.migrate(str(root), str(root), to="hudi", mode="metadata")
        assert tree(root) == before
        assert not (root / ".hoodie").exists()
        return
    report = lakecore.migrate(str(root), str(root), to="hudi", mode="metadata")
    assert report.files_rewritten == 0
    assert tree(root) == before  # no data file written, the Delta table untouched
    data = user_columns(lakecore.open(str(root), format="hudi").to_arrow())
    c = corpus()
    assert c.digest(data) == expected_digest(c, table)


def test_corpus_case_count() -> None:
    assert len(DELTA_TABLES) == 114
    assert sum(1 for t in DELTA_TABLES if t.skip_reason) == 17
    assert len(REFUSED) == 33
    names = {t.name for t in DELTA_TABLES}
    assert set(REFUSED) <= names and names >= QUICK
