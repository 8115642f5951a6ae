"""The write gate of the record-level index partitions: refuse, before any file is written, a
table whose ``record_index`` or secondary indexes lakecore cannot keep as Hudi does.

``record_index_records.commit_records`` and ``secondary_index_records.commit_records`` raise
the same errors, but only while the metadata delta commit is written, after the data files:
a writer calls ``ensure_index_partitions_writable`` when it opens the table.
"""

from __future__ import annotations

import pyarrow as pa

from lakecore.storage import Storage
from lakecore_hudi.mdt import record_index_records, secondary_index_records
from lakecore_hudi.mdt.maintain import _index_defs
from lakecore_hudi.table_config import TableConfig

__all__ = ["ensure_index_partitions_writable"]


def ensure_index_partitions_writable(
    storage: Storage, config: TableConfig, schema: pa.Schema
) -> None:
    """Refuse a partitioned record index, and a secondary index that is not an identity
    index of one string, integer, boolean or date column of ``schema`` (the table's full
    schema), or that names another index version than its table version's.

    Raises:
        UnsupportedFeatureError: naming the partition and why.
        CorruptTableError: the index definitions file is not a JSON object.
    """
    partitions = list(config.metadata_partitions)
    indexed = [p for p in partitions if p.startswith(secondary_index_records.PARTITION_PREFIX)]
    if record_index_records.PARTITION not in partitions and not indexed:
        return
    defs = _index_defs(storage, config)
    if record_index_records.PARTITION in partitions:
        record_index_records.ensure_supported(defs)
    secondary_index_records.ensure_supported(defs, schema, indexed, config.table_version)
