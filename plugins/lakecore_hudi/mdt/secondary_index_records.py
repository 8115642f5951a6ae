"""Records of the metadata table's secondary index partitions (``secondary_index_<name>``).

A secondary index on column ``c`` (``.hoodie/.index_defs/index.json``: ``indexType``
``secondary_index``, ``indexFunction`` ``identity``, ``sourceFields`` ``[c]``) holds one
record per live data record (type 7): key ``<escaped value of c>$<escaped record key>``
(``SecondaryIndexKeyUtils.constructSecondaryIndexKey``: ``\\``, ``$`` and NUL are escaped
with ``\\``; a null value is the single character NUL), payload
``HoodieSecondaryIndexInfo {isDeleted: false}``.

Per data instant (``commit_records``), as Hudi's
``SecondaryIndexRecordGenerationUtils.convertWriteStatsToSecondaryIndexRecords``, file group
by file group (its records before and after the instant, ``group_changes``):

- a key new to the group gets an entry for its value;
- a key whose value changed gets a deletion of its old entry and an entry for the new value;
- a key gone from the group gets a deletion of its entry;
- a key whose value did not change gets nothing.

An entry and a deletion of the same index key (a record moved to another file group, same
value) keep the entry (Hudi's ``reduceByKeys``, non-deleted first). Unlike Hudi, which maps
each record key of a group to one value, every (value, key) pair counts: a key stored twice
(an insert repeating a key) has an entry per value, and an entry one group lost that another
touched group still holds is not deleted. Hudi's deletions are
entries with ``isDeleted`` set, which ``HoodieMetadataPayload`` turns into no record: its log
writer puts them into the DELETE block (so does the corpus); here they are records without
payload, written the same way. Compactions and cleans write nothing.

Values are rendered as Hudi's Spark reader renders them (``value.toString()`` of the Spark
internal value): strings as they are, integers in decimal, dates as epoch days (the corpus
index on a DATE column holds ``19737``), booleans ``true``/``false``. Other column types
(floating point, decimals, timestamps, binary, nested) are refused: their text depends on
the engine and is not verified.

Routing: Hudi 1.0 (table version 8, index version V1) hashes the whole key; Hudi 1.1 (table
version 9, index version V2) hashes the escaped value with its ``$``
(``getSecondaryKeyToFileGroupMappingFunction``), so one value's entries share a file group.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import UnsupportedFeatureError
from lakecore_hudi.keys import RECORD_KEY
from lakecore_hudi.mdt.group_changes import group_changes, is_compaction, table_schema
from lakecore_hudi.mdt.index_context import IndexContext
from lakecore_hudi.mdt.record_codec import blank_record
from lakecore_hudi.mdt.record_index import ensure_keys_fit, is_deleted

__all__ = [
    "DEFAULT_FILE_GROUPS",
    "FILE_ID_PREFIX",
    "PARTITION_PREFIX",
    "RECORD_TYPE",
    "commit_records",
    "deletion",
    "ensure_supported",
    "entry",
    "escape",
    "file_id_prefix",
    "index_key",
    "merge",
    "partition_name",
    "routing_key",
    "source_field",
    "split_key",
]

PARTITION_PREFIX = "secondary_index_"
FILE_ID_PREFIX = "secondary-index-"
"""Prefix of every secondary index file group id; a partition's own prefix is
``file_id_prefix(partition)`` (``secondary-index-rider-idx-``)."""
RECORD_TYPE = 7
DEFAULT_FILE_GROUPS = 10
"""File groups Hudi gives a new secondary index partition (the corpus tables have 10)."""

NULL = "\0"
ESCAPE = "\\"
SEPARATOR = "$"


def partition_name(index_name: str) -> str:
    """The metadata partition of secondary index ``index_name`` (``rider_idx`` or
    ``secondary_index_rider_idx`` -> ``secondary_index_rider_idx``)."""
    return index_name if index_name.startswith(PARTITION_PREFIX) else PARTITION_PREFIX + index_name


def file_id_prefix(partition: str) -> str:
    """The file group id prefix of secondary index partition ``partition``."""
    return partition.replace("_", "-") + "-"


def escape(value: str | None) -> str:
    """``SecondaryIndexKeyUtils.escapeSpecialChars``: ``\\``, ``$`` and NUL get a ``\\``;
    None is the single character NUL."""
    if value is None:
        return NULL
    out = []
    for c in value:
        if c in (ESCAPE, SEPARATOR, NULL):
            out.append(ESCAPE)
        out.append(c)
    return "".join(out)


def _unescape(text: str) -> str | None:
    if text == NULL:
        return None
    out, pending = [], False
    for c in text:
        if pending or c != ESCAPE:
            out.append(c)
            pending = False
        else:
            pending = True
    return "".join(out)


def _separator(key: str) -> int:
    pending = False
    for i, c in enumerate(key):
        if pending:
            pending = False
        elif c == ESCAPE:
            pending = True
        elif c == SEPARATOR:
            return i
    raise ValueError(f"secondary index key {key!r} has no unescaped '$'")


def index_key(value: str | None, record_key: str) -> str:
    """The index key of data record ``record_key`` whose indexed value is ``value``."""
    return f"{escape(value)}{SEPARATOR}{escape(record_key)}"


def split_key(key: str) -> tuple[str | None, str]:
    """(value, record key) of an index key.

    Raises:
        ValueError: ``key`` has no unescaped ``$``.
    """
    at = _separator(key)
    record_key = _unescape(key[at + 1 :])
    if record_key is None:
        raise ValueError(f"secondary index key {key!r} has a null record key")
    return _unescape(key[:at]), record_key


def routing_key(key: str, table_version: int, index_version: int | None = None) -> str:
    """The string Hudi hashes to pick an index key's file group: the whole key for index
    version 1 (Hudi 1.0, table version 8), the escaped value with its ``$`` for version 2+
    (Hudi 1.1, table version 9; ``index_version`` overrides the table version's default)."""
    version = index_version if index_version is not None else (2 if table_version >= 9 else 1)
    if version < 2:
        return key
    return key[: _separator(key) + 1]


def merge(older: dict[str, Any] | None, newer: dict[str, Any]) -> dict[str, Any] | None:
    """Hudi's payload merge of two records of one index key: the newer wins; None when it is
    a deletion (compaction drops the key)."""
    return None if is_deleted(newer) else newer


def entry(key: str) -> dict[str, Any]:
    """The live record of index key ``key``."""
    return {**blank_record(key, RECORD_TYPE), "SecondaryIndexMetadata": {"isDeleted": False}}


def deletion(key: str) -> dict[str, Any]:
    """The record deleting index key ``key`` (no payload: a DELETE-block entry)."""
    return blank_record(key, RECORD_TYPE)


def source_field(index_defs: Mapping[str, Any], partition: str) -> str:
    """The column secondary index ``partition`` indexes.

    Raises:
        UnsupportedFeatureError: the index is not defined, is not an identity index of one
            column, or indexes a nested field.
    """
    definition = (index_defs.get("indexDefinitions") or {}).get(partition)
    if not isinstance(definition, Mapping):
        raise UnsupportedFeatureError(
            f"hudi-metadata-{partition}",
            f"secondary index {partition!r} has no definition in .hoodie/.index_defs/index.json",
        )
    fields = list(definition.get("sourceFields") or [])
    function = definition.get("indexFunction") or "identity"
    if function != "identity" or len(fields) != 1 or "." in str(fields[0]):
        raise UnsupportedFeatureError(
            f"hudi-metadata-{partition}",
            f"lakecore maintains secondary indexes on one top-level column, not {partition!r} "
            f"(function {function!r}, fields {fields})",
        )
    return str(fields[0])


def ensure_supported(
    index_defs: Mapping[str, Any],
    schema: pa.Schema,
    partitions: Iterable[str],
    table_version: int | None = None,
) -> None:
    """Refuse secondary indexes lakecore cannot keep exactly as Hudi does (see the module
    doc); call before writing anything. With ``table_version``, an index whose definition
    names an index version other than the one ``routing_key`` routes that table version by
    (V1 on version 8, V2 on 9+) is refused too: its entries would land in other file groups.

    Raises:
        UnsupportedFeatureError: naming the index and why.
    """
    for partition in partitions:
        if not partition.startswith(PARTITION_PREFIX):
            continue
        column = source_field(index_defs, partition)
        if table_version is not None:
            _check_version(index_defs, partition, table_version)
        index = schema.get_field_index(column)
        if index < 0 or not _renders(schema.field(index).type):
            kind = schema.field(index).type if index >= 0 else "missing"
            raise UnsupportedFeatureError(
                f"hudi-metadata-{partition}",
                f"lakecore cannot maintain secondary index {partition!r}: column {column!r} "
                f"({kind}) is not a string, integer, boolean or date column",
            )


def _check_version(index_defs: Mapping[str, Any], partition: str, table_version: int) -> None:
    definition = (index_defs.get("indexDefinitions") or {}).get(partition) or {}
    named = str(definition.get("version") or "").upper()
    expected = "V2" if table_version >= 9 else "V1"
    if named and named != expected:
        raise UnsupportedFeatureError(
            f"hudi-metadata-{partition}",
            f"secondary index {partition!r} is of index version {named}; lakecore maintains "
            f"version {expected} secondary indexes on table version {table_version}",
        )


def _renders(t: pa.DataType) -> bool:
    return bool(
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_integer(t)
        or pa.types.is_boolean(t)
        or pa.types.is_date32(t)
    )


def commit_records(ctx: IndexContext, partition: str) -> list[dict[str, Any]]:
    """The records data instant ``ctx.instant`` adds to secondary index ``partition`` (see
    the module doc): entries sorted by key, then deletions sorted by key.

    Raises:
        UnsupportedFeatureError: an index ``ensure_supported`` refuses.
        ConstraintViolationError: a new index key is too long (``record_index.MAX_KEY_BYTES``).
        CorruptTableError: a data file of a touched file group is unreadable.
    """
    if ctx.meta is None or is_compaction(ctx):
        return []
    column = source_field(ctx.index_defs, partition)
    schema = table_schema(ctx, ())
    ensure_supported(ctx.index_defs, schema, [partition], ctx.config.table_version)
    live: set[str] = set()
    gone: set[str] = set()
    held: set[str] = set()
    for change in group_changes(ctx, [column]):
        before = _index_keys(change.before, column)
        after = _index_keys(change.after, column)
        live |= after - before
        gone |= before - after
        held |= after
    ensure_keys_fit(live, partition)
    out = [entry(k) for k in sorted(live)]
    # An entry one group lost that another touched group still holds stays.
    out.extend(deletion(k) for k in sorted(gone - live - held))
    return out


def _index_keys(rows: pa.Table, column: str) -> set[str]:
    """The index keys of ``rows``: one per (value, record key) pair, so a key stored twice
    with two values has both."""
    keys = rows.column(RECORD_KEY).to_pylist()
    return {index_key(v, k) for v, k in zip(render(rows.column(column)), keys, strict=True)}


def render(values: pa.ChunkedArray | pa.Array) -> Sequence[str | None]:
    """The text Hudi's Spark reader gives each value of a supported column (module doc).

    Raises:
        UnsupportedFeatureError: a column type ``ensure_supported`` refuses.
    """
    t = values.type
    if pa.types.is_date32(t):
        values = values.cast(pa.int32())
    elif pa.types.is_boolean(t):
        return [None if v is None else ("true" if v else "false") for v in values.to_pylist()]
    elif not _renders(t):
        raise UnsupportedFeatureError(
            "hudi-secondary-index-type", f"secondary index values of type {t} are not supported"
        )
    return pc.cast(values, pa.string()).to_pylist()  # type: ignore[no-any-return]
