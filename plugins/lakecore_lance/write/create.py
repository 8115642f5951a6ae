"""Creating a Lance dataset: version 1's manifest (V2 naming) and its transaction file."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import pyarrow as pa

from lakecore.errors import SchemaError, TableExistsError, UnsupportedFeatureError
from lakecore.storage import Storage
from lakecore_lance.history import TRANSACTIONS_DIR
from lakecore_lance.manifest import manifest_path
from lakecore_lance.proto import table_pb2, transaction_pb2
from lakecore_lance.write.changes import Combined, apply
from lakecore_lance.write.committer import HINT, encode_manifest
from lakecore_lance.write.fields import PRIMARY_KEY, lance_fields

PRIMARY_KEY_PROPERTY = "lance.primary_key"
"""The ``lakecore.create`` property naming the primary-key columns of a new dataset."""
DEFAULT_DATA_VERSION = "2.2"
"""The data storage version new datasets get: what pylance 14 writes by default."""


def create_dataset(
    storage: Storage,
    schema: pa.Schema,
    partition_by: Sequence[str],
    properties: dict[str, str],
    timestamp_ms: int | None = None,
) -> None:
    """Create an empty dataset of ``schema``: field ids 0.. depth first, data storage version
    ``DEFAULT_DATA_VERSION``, V2 manifest naming, an ``Overwrite`` transaction at read version
    0 (as pylance writes a new dataset).

    ``properties`` may hold ``PRIMARY_KEY_PROPERTY`` (comma-separated top-level columns): they
    become the dataset's unenforced primary key (the ``lance-schema:unenforced-primary-key``
    field metadata pylance reads; the columns become NOT NULL, as Lance requires), which
    ``upsert`` keys on.

    Raises ``UnsupportedFeatureError`` for ``partition_by`` or other ``properties`` (Lance has
    no partitions; table config is not written yet), ``SchemaError`` for types Lance cannot hold,
    ``TableExistsError`` when version 1 exists (decided by ``put_if_absent``).
    ``timestamp_ms``: version 1's timestamp (now by default).
    """
    if partition_by:
        raise UnsupportedFeatureError(
            "lance:partitioning", f"Lance datasets are not partitioned (got {list(partition_by)})"
        )
    keys = [k.strip() for k in properties.get(PRIMARY_KEY_PROPERTY, "").split(",") if k.strip()]
    others = sorted(set(properties) - {PRIMARY_KEY_PROPERTY})
    if others:
        raise UnsupportedFeatureError(
            "lance:properties", f"lakecore does not write Lance table config yet: {others}"
        )
    for key in keys:
        i = schema.get_field_index(key)
        if i < 0:
            raise SchemaError(f"primary key column {key!r} is not a column of the schema")
        field = schema.field(i)
        meta = dict(field.metadata or {})
        meta[PRIMARY_KEY.encode()] = b"true"
        # Lance requires primary-key columns to be non-nullable.
        schema = schema.set(i, field.with_metadata(meta).with_nullable(False))
    fields = lance_fields(schema)
    meta = {k.decode(): bytes(v) for k, v in (schema.metadata or {}).items()}
    txn = transaction_pb2.Transaction(read_version=0, uuid=str(uuid.uuid4()))
    txn.overwrite.schema.extend(fields)
    for k, v in meta.items():
        txn.overwrite.schema_metadata[k] = v
    name = f"0-{txn.uuid}.txn"
    empty = table_pb2.Manifest(fields=fields, schema_metadata=meta, version=0)
    empty.data_format.file_format = "lance"
    empty.data_format.version = DEFAULT_DATA_VERSION
    nothing = Combined("overwrite", (), {}, frozenset(), None)
    stamp = None if timestamp_ms is None else int(timestamp_ms) * 1_000_000
    manifest = apply(nothing, empty, name, timestamp_ns=stamp)
    raw = txn.SerializeToString(deterministic=True)
    storage.put(f"{TRANSACTIONS_DIR}/{name}", raw)
    try:
        storage.put_if_absent(manifest_path(1, "v2"), encode_manifest(manifest, raw))
    except FileExistsError as exc:
        storage.delete(f"{TRANSACTIONS_DIR}/{name}")
        raise TableExistsError(f"{storage.root} already holds a Lance dataset") from exc
    storage.put(HINT, b'{"version":1}')
