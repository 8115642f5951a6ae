"""Read the rows of one legacy (v0.1) Lance data file: the entry point of this package."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa

from lakecore.errors import CorruptTableError, InvalidArgumentError
from lakecore.storage import Storage
from lakecore_lance.legacy.decode import DecodeContext, read_dictionary_values, read_range
from lakecore_lance.legacy.fields import LegacyField, ProtoFieldLike, fields_from_proto
from lakecore_lance.legacy.layout import FileBytes, FileLayout, embedded_fields, read_layout

_REMOTE_READERS = 16


def read_legacy_file(
    storage: Storage,
    path: str,
    fields: Sequence[LegacyField] | Sequence[ProtoFieldLike],
    field_ids: Sequence[int] | None = None,
    *,
    file_field_ids: Sequence[int] | None = None,
    dictionary_file: str | None = None,
) -> pa.Table:
    """Return every row of the legacy Lance data file ``path`` (all batches, in order).

    Args:
        storage: where the file is; it is read with ranged reads (the tail once, then each
            page needed), never whole unless it is smaller than 64 KiB.
        path: the data file, relative to the storage root or absolute.
        fields: the manifest schema, as its flat ``lance.file.Field`` messages (depth first,
            as in ``Manifest.fields``) or as top-level :class:`LegacyField` trees.
        field_ids: the top-level field ids to return, in this order; ``None`` returns every
            top-level field the file stores. Each must be a top-level field of ``fields``.
        file_field_ids: the ``DataFile.fields`` of this file in the manifest: the fields it
            stores, and the page table's extent (from the first id to the largest). ``None``,
            or ids with tombstones (-2), take the extent from the schema the file embeds.
        dictionary_file: the file the fields' ``dictionary`` offsets point into (the manifest
            they were read from). ``None`` uses the schema the data file embeds.

    Returns:
        A table whose columns are the requested fields, typed as the manifest says (children
        the file does not store are left out of structs). Values are what the legacy format
        stores: it has no nulls for numbers, booleans, lists or structs (a null was written as
        its slot's bytes, an empty list, or a struct of its children), and a nullable string
        or binary field reads its empty values as null, as pylance does.

    Raises:
        CorruptTableError: naming the file, for a truncated or invalid file.
        UnsupportedFeatureError: naming a type or encoding this reader does not implement.
        InvalidArgumentError: a requested id is not a top-level field of ``fields``.
    """
    roots = _as_trees(fields)
    data = FileBytes(storage, path)
    layout, stored = _open_layout(data, file_field_ids)
    selected = _select(roots, field_ids, stored)

    def load_dictionary(fld: LegacyField) -> pa.Array:
        return _load_dictionary(storage, data, layout, fld, dictionary_file)

    ctx = DecodeContext(data=data, layout=layout, load_dictionary=load_dictionary)
    if not selected:
        # No columns, but the row count still matters (count_rows on a projection of none).
        rows = layout.batch_offsets[-1] if layout.num_batches else 0
        return pa.table([pa.nulls(rows)], names=["_"]).drop_columns(["_"])
    remote = not getattr(storage, "is_local", False)
    columns = _decode_columns(ctx, selected, parallel=remote)
    return pa.Table.from_arrays(columns, schema=pa.schema([f.arrow_field() for f in selected]))


def _open_layout(
    data: FileBytes, file_field_ids: Sequence[int] | None
) -> tuple[FileLayout, set[int]]:
    """The file's layout and the field ids it stores."""
    ids = list(file_field_ids or ())
    if ids and min(ids) >= 0:
        # The page table starts at the data file's first field id (the writer's schema order,
        # as Lance reads it) and ends at its largest.
        return read_layout(data, (ids[0], max(ids))), set(ids)
    # Unknown ids, or tombstoned ones (-2, after a column update rewrote them into a newer
    # file, which is where they are read from): the schema the file embeds says which ids it
    # was written with, hence the page table's extent.
    layout = read_layout(data, None)
    if ids:
        return layout, {i for i in ids if i >= 0}
    return layout, {f.id for f in embedded_fields(data, layout.manifest_position)}


def _decode_columns(
    ctx: DecodeContext, selected: Sequence[LegacyField], *, parallel: bool
) -> list[pa.ChunkedArray]:
    """Every batch of each selected field, one chunk per batch."""
    layout = ctx.layout
    tasks = [(fld, b) for fld in selected for b in range(layout.num_batches)]

    def decode(task: tuple[LegacyField, int]) -> pa.Array:
        fld, batch = task
        return read_range(ctx, fld, batch, 0, layout.batch_length(batch))

    if not parallel or len(tasks) < 4:
        chunks = [decode(t) for t in tasks]
    else:
        # An object store answers each page request with a round trip: overlap them.
        with ThreadPoolExecutor(_REMOTE_READERS) as pool:
            chunks = list(pool.map(decode, tasks))
    n = layout.num_batches
    return [
        pa.chunked_array(chunks[i * n : (i + 1) * n], type=fld.arrow_type())
        for i, fld in enumerate(selected)
    ]


def _as_trees(fields: Sequence[LegacyField] | Sequence[ProtoFieldLike]) -> tuple[LegacyField, ...]:
    if all(isinstance(f, LegacyField) for f in fields):
        return tuple(f for f in fields if isinstance(f, LegacyField))
    return fields_from_proto([f for f in fields if not isinstance(f, LegacyField)])


def _select(
    roots: Sequence[LegacyField], field_ids: Sequence[int] | None, stored: set[int]
) -> list[LegacyField]:
    by_id = {r.id: r for r in roots}
    if field_ids is None:
        wanted = list(roots)
    else:
        missing = [i for i in field_ids if i not in by_id]
        if missing:
            raise InvalidArgumentError(f"field ids {missing} are not top-level schema fields")
        wanted = [by_id[i] for i in field_ids]
    pruned = [_prune(f, stored) for f in wanted]
    return [f for f in pruned if f is not None]


def _prune(fld: LegacyField, stored: set[int]) -> LegacyField | None:
    """``fld`` restricted to what the file stores: structs keep their stored children."""
    if fld.logical_type != "struct":
        return fld if fld.id in stored else None
    kept = tuple(c for c in (_prune(c, stored) for c in fld.children) if c is not None)
    if not kept:
        return None
    return LegacyField(
        id=fld.id,
        name=fld.name,
        logical_type=fld.logical_type,
        nullable=fld.nullable,
        encoding=fld.encoding,
        dictionary=fld.dictionary,
        children=kept,
    )


def _load_dictionary(
    storage: Storage,
    data: FileBytes,
    layout: FileLayout,
    fld: LegacyField,
    dictionary_file: str | None,
) -> pa.Array:
    value_type = fld.arrow_type().value_type
    if dictionary_file is not None:
        if fld.dictionary is None:
            raise CorruptTableError(
                f"{dictionary_file}: dictionary field {fld.name!r} (id {fld.id}) has no "
                "dictionary offsets"
            )
        source = FileBytes(storage, dictionary_file)
        return read_dictionary_values(source, fld, value_type, *fld.dictionary)
    embedded = _embedded_dictionary(data, layout, fld.id)
    return read_dictionary_values(data, fld, value_type, *embedded)


def _embedded_dictionary(data: FileBytes, layout: FileLayout, field_id: int) -> tuple[int, int]:
    """(offset, length) of a field's dictionary in the schema the data file embeds."""
    for msg in embedded_fields(data, layout.manifest_position):
        if msg.id == field_id and msg.HasField("dictionary"):
            return int(msg.dictionary.offset), int(msg.dictionary.length)
    raise data.corrupt(f"the embedded schema has no dictionary for field id {field_id}")
