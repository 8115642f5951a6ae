"""Schema evolution of Hudi tables: add nullable columns and widen types, as an ALTER_SCHEMA
instant.

Hudi keeps a table's schema in the commit metadata of its writes (``extraMetadata.schema``,
the writer's Avro schema); readers take the latest completed write's. A schema change with
no data is what Spark's ``ALTER TABLE ... ADD COLUMNS`` commits: an instant of the table's
write action (``commit`` on copy-on-write, ``deltacommit`` on merge-on-read) with operation
``alter_schema``, no write stats and the new schema. Files written before it keep their old
schema: readers fill an added column with nulls and read a widened column as its new type
(Avro schema resolution).

What Hudi's Avro schema resolution reads back without schema-on-read: new top-level nullable
columns, and the lossless Avro promotions int -> long, int -> double, float -> double.
Renaming and dropping columns need Hudi's schema-on-read evolution
(``hoodie.schema.on.read.enable``, an internal-schema history under ``.hoodie/.schema``),
which lakecore does not write; they raise ``UnsupportedFeatureError``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import pyarrow as pa

from lakecore.errors import SchemaError, UnsupportedFeatureError
from lakecore.model.actions import Action, FormatPayload
from lakecore_hudi.avro_schema import arrow_to_avro, avro_to_arrow
from lakecore_hudi.keys import META_FIELDS
from lakecore_hudi.timeline.commit_metadata import CommitMetadata, encode_commit_metadata
from lakecore_hudi.timeline.lifecycle import write_inflight
from lakecore_hudi.write.planned import PlannedInstant, start_instant
from lakecore_hudi.write.rollback import rollback_failed_writes

if TYPE_CHECKING:
    from lakecore.storage import Storage
    from lakecore_hudi.write.layout import WriteLayout

#: The operation type Hudi records for a schema-only commit (``WriteOperationType``).
ALTER_SCHEMA = "ALTER_SCHEMA"

_PROMOTIONS = frozenset(
    {
        (pa.int32(), pa.int64()),
        (pa.int32(), pa.float64()),
        (pa.float32(), pa.float64()),
    }
)


def is_widening(old: pa.DataType, new: pa.DataType) -> bool:
    """Whether Avro schema resolution reads ``old`` values as ``new`` without loss."""
    return (old, new) in _PROMOTIONS


class HudiSchemaUpdate:
    """Stages schema changes of one Hudi table; ``actions`` plans the ALTER_SCHEMA instant.

    Changes are checked when staged (``SchemaError`` for a column that is missing, exists or
    cannot be widened so; ``UnsupportedFeatureError`` for what Hudi tables cannot record).
    Nothing is written before ``actions``.
    """

    def __init__(self, storage: Storage, layout: WriteLayout, at: str | None = None) -> None:
        self._storage = storage
        self._layout = layout
        self._at = at
        self._schema = layout.data_schema

    def add_column(self, name: str, type: pa.DataType, nullable: bool = True) -> HudiSchemaUpdate:
        """Add a top-level column; it must be nullable (rows written before hold no value).

        Raises:
            SchemaError: the column exists (names compare ignoring case, as Hudi's readers
                match them), is a meta field, is not nullable, or has a type Avro cannot
                hold.
        """
        if name in META_FIELDS:
            raise SchemaError(f"column {name!r} is a Hudi meta field (written by Hudi itself)")
        same = [n for n in self._schema.names if n.lower() == name.lower()]
        if same:
            # Hudi's readers (Spark, hudi-rs) match column names ignoring case.
            raise SchemaError(f"column {name!r} already exists (as {same[0]!r})")
        if not nullable:
            raise SchemaError(
                f"column {name!r}: a column added to a Hudi table must be nullable (the rows "
                "written before it have no value)"
            )
        candidate = self._schema.append(pa.field(name, type, nullable=True))
        # Refuse a type the table's Avro schema cannot hold now, not when writing.
        arrow_to_avro(candidate, self._layout.record_name, self._layout.namespace)
        self._schema = candidate
        return self

    def widen_type(self, name: str, new_type: pa.DataType) -> HudiSchemaUpdate:
        """Widen a column's type (int -> long, int -> double, float -> double).

        Raises:
            SchemaError: the column is missing, or the change is not one of those widenings.
            UnsupportedFeatureError: the column is a record key or partition column (their
                values are encoded in record keys and partition paths).
        """
        i = self._index(name)
        f = self._schema.field(i)
        layout = self._layout
        if name in (*layout.key_fields, *layout.config.partition_fields):
            raise UnsupportedFeatureError(
                "hudi-widen-key-column",
                f"cannot widen {name!r}: it is a record key or partition column of the table",
            )
        if not is_widening(f.type, new_type):
            raise SchemaError(
                f"column {name!r}: {f.type} -> {new_type} is not a widening Hudi readers "
                "resolve (int -> long, int -> double, float -> double)"
            )
        self._schema = self._schema.set(i, f.with_type(new_type))
        return self

    def rename_column(self, old: str, new: str) -> HudiSchemaUpdate:
        """Raises ``UnsupportedFeatureError``: renames need Hudi's schema-on-read evolution."""
        raise _needs_schema_on_read("rename")

    def drop_column(self, name: str) -> HudiSchemaUpdate:
        """Raises ``UnsupportedFeatureError``: drops need Hudi's schema-on-read evolution."""
        raise _needs_schema_on_read("drop")

    def avro_form(self) -> pa.Schema:
        """The staged data schema as the table's Avro schema reads back (e.g. int8 -> int32):
        the types files written with it hold."""
        layout = replace(self._layout, data_schema=self._schema)
        return avro_to_arrow(layout.data_avro(), "the staged schema")

    def actions(self) -> list[Action]:
        """Plan the ALTER_SCHEMA instant (requested and inflight; completed by the commit),
        or nothing when no change was staged.

        Raises:
            CommitError / CommitConflictError: the instant could not be claimed.
        """
        if self._schema.equals(self._layout.data_schema):
            return []
        layout = replace(self._layout, data_schema=self._schema)
        config = layout.config
        rollback_failed_writes(self._storage, config)
        action = layout.write_action
        ts = start_instant(self._storage, config, action, b"", at=self._at)
        workload = CommitMetadata({}, ALTER_SCHEMA)
        write_inflight(
            self._storage,
            config,
            action,
            ts,
            encode_commit_metadata(workload, config.table_version),
        )
        metadata = CommitMetadata(
            partition_to_write_stats={},
            operation_type=ALTER_SCHEMA,
            extra_metadata={"schema": layout.data_avro_json()},
        )
        # Exclusive: a write completed since the schema was read may have recorded another
        # schema, and the later instant's schema is the one readers take.
        planned = PlannedInstant(ts, action, metadata, (), frozenset(), exclusive=True)
        return [FormatPayload("hudi", planned)]

    def _index(self, name: str) -> int:
        i: int = self._schema.get_field_index(name)
        if i < 0:
            raise SchemaError(f"no column {name!r} (columns: {self._schema.names})")
        return i


def _needs_schema_on_read(verb: str) -> UnsupportedFeatureError:
    return UnsupportedFeatureError(
        "hudi-schema-on-read",
        f"cannot {verb} a column of a Hudi table: that needs Hudi's schema-on-read evolution "
        "(hoodie.schema.on.read.enable), which lakecore does not write; add columns or widen "
        "types instead",
    )
