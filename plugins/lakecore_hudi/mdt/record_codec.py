"""Encoding any ``HoodieMetadataRecord`` for a metadata-table file: HFile cells and deletes.

A record is the dict fastavro writes for the table version's ``HoodieMetadataRecord`` schema
(``record_schema``): ``key``, ``type``, the ``_hoodie_*`` meta fields (None unless set) and
the partition's payload field. Union branches fastavro cannot infer are ``(name, value)``
tuples; a short record name (``"IntWrapper"``) is qualified with Hudi's namespace here, so
generators may use either form (decoded records carry the full name).

A record whose payload fields are all absent or None is a DELETION of its key: Hudi writes
those (``EmptyHoodieRecordPayload``: record index and secondary index entries that go away)
into a DELETE block, not as HFile cells. ``is_deletion`` says which is which.

Cells are sorted by the key's UTF-8 bytes (HFile rows must increase) and the ``key`` field is
blanked in the value, as Hudi's HFile writer does (the row key holds it). A ``files`` record's
map is written in the iteration order of the ``java.util.HashMap`` Hudi fills.
"""

from __future__ import annotations

import functools
import io
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import fastavro
import pyarrow as pa

from lakecore_hudi.log.delete_blocks import encode_delete_block
from lakecore_hudi.mdt.hfile_writer import java_hash_order
from lakecore_hudi.mdt.record_schema import metadata_record_schema, metadata_record_schema_json

__all__ = [
    "PAYLOAD_FIELDS",
    "blank_record",
    "delete_block",
    "encode_record_cells",
    "is_deletion",
    "qualified",
]

NAMESPACE = "org.apache.hudi.avro.model"
PAYLOAD_FIELDS = (
    "filesystemMetadata",
    "BloomFilterMetadata",
    "ColumnStatsMetadata",
    "recordIndexMetadata",
    "SecondaryIndexMetadata",
)
"""The payload fields of ``HoodieMetadataRecord``: one is set per record type."""
_META_FIELDS = (
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
)


@functools.lru_cache(maxsize=4)
def _parsed(table_version: int) -> Any:
    return fastavro.parse_schema(metadata_record_schema(table_version))


def blank_record(key: str, record_type: int) -> dict[str, Any]:
    """A record of ``record_type`` for ``key`` with every meta and payload field None: a
    deletion of ``key`` until the caller sets its payload."""
    record: dict[str, Any] = dict.fromkeys(_META_FIELDS)
    record.update(key=key, type=record_type)
    record.update(dict.fromkeys(PAYLOAD_FIELDS))
    return record


def is_deletion(record: Mapping[str, Any]) -> bool:
    """Whether ``record`` deletes its key (no payload field set: Hudi's empty payload)."""
    return all(record.get(f) is None for f in PAYLOAD_FIELDS)


def qualified(value: Any) -> Any:
    """``value`` with every ``(record name, fields)`` union tuple naming its record in full
    (Hudi's namespace added to short names), recursively."""
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str):
        name = value[0] if "." in value[0] else f"{NAMESPACE}.{value[0]}"
        return (name, qualified(value[1]))
    if isinstance(value, dict):
        return {k: qualified(v) for k, v in value.items()}
    if isinstance(value, list):
        return [qualified(v) for v in value]
    return value


def encode_record_cells(
    records: Iterable[Mapping[str, Any]], table_version: int
) -> list[tuple[bytes, bytes]]:
    """HFile cells (row key, Avro value) of ``records``, sorted by row key.

    Records must have distinct keys and none may be a deletion.

    Raises:
        ValueError: two records share a key, a record is a deletion, or a record does not
            fit the schema (the message names its key).
    """
    schema = _parsed(table_version)
    cells: dict[bytes, bytes] = {}
    for record in records:
        row = str(record["key"]).encode("utf-8")
        if row in cells:
            raise ValueError(f"two metadata records share the key {row!r}")
        if is_deletion(record):
            raise ValueError(f"metadata record {row!r} is a deletion, not a cell")
        value = {k: qualified(v) for k, v in record.items()}
        value["key"] = ""
        files = value.get("filesystemMetadata")
        if isinstance(files, dict):
            value["filesystemMetadata"] = dict(java_hash_order(files))
        out = io.BytesIO()
        try:
            fastavro.schemaless_writer(out, schema, value)
        except (ValueError, TypeError, KeyError) as exc:
            raise ValueError(f"metadata record {row!r} does not fit the schema: {exc}") from exc
        cells[row] = out.getvalue()
    return sorted(cells.items())


def delete_block(keys: Sequence[str], partition: str, instant: str, table_version: int) -> bytes:
    """A framed DELETE log block removing ``keys`` from metadata partition ``partition``, as
    Hudi writes it: each key with the partition name as its partition path and the
    "natural order" ordering value, the metadata record schema in the SCHEMA header."""
    table = pa.table(
        {
            "record_key": pa.array(sorted(keys), pa.string()),
            "partition_path": pa.array([partition] * len(keys), pa.string()),
        }
    )
    return encode_delete_block(
        table, instant, writer_schema=metadata_record_schema_json(table_version)
    )
