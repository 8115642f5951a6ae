"""Partition values out: the log's string form and Hive-style directory names.

Delta's ``partitionValues`` strings are the Hive text of each value
(``lakecore.model.partition_paths.hive_texts``: ``{year}-{month}-{day}`` dates of years
0000..9999, year 0 included, as the protocol spells them and delta-rs writes them), an empty
one logged as null; data files go under Hive-escaped ``col=value`` directories
(``partition_segment``).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.model.partition_paths import hive_texts, partition_segment

__all__ = ["partition_dirs", "partition_text_struct", "partition_texts"]


def partition_texts(values: pa.Array | pa.ChunkedArray, name: str) -> pa.Array:
    """The log text of each value of partition column ``name`` (strings; null stays null):
    its Hive text (``hive_texts``), but an empty string or binary value is null.

    Raises ``InvalidArgumentError`` as ``hive_texts`` does (a date or timestamp outside
    years 0000..9999, which the protocol's ``{year}-{month}-{day}`` cannot spell; a
    timestamp finer than microseconds; a binary value that is not UTF-8), naming the column.
    """
    texts = hive_texts(values, name)
    # The protocol reads an empty partition value as null, and Delta Spark writes null for
    # an empty string (delta-rs would read a logged "" back as "").
    empty = pc.fill_null(pc.equal(texts, ""), False)
    if pc.any(empty).as_py():
        texts = pc.if_else(empty, pa.scalar(None, pa.string()), texts)
    return texts


def partition_text_struct(partition: pa.Array | pa.ChunkedArray) -> pa.StructArray:
    """A file index's typed ``partition`` struct as a struct of the log's texts, children
    named as they are (``partition_texts`` for each; raises as it does)."""
    if isinstance(partition, pa.ChunkedArray):
        chunks = partition.chunks
        partition = pa.concat_arrays(chunks) if chunks else pa.nulls(0, partition.type)
    assert isinstance(partition, pa.StructArray)
    t = partition.type
    fields = [pa.field(t.field(i).name, pa.string()) for i in range(t.num_fields)]
    if not fields:
        return partition
    children = partition.flatten()  # parent nulls folded into the children
    texts = [partition_texts(c, f.name) for c, f in zip(children, fields, strict=True)]
    mask = partition.is_null() if partition.null_count else None
    return pa.StructArray.from_arrays(texts, fields=fields, mask=mask)


def partition_dirs(keys: pa.Table, physical: Sequence[str]) -> list[str]:
    """``col=value/...`` of each row of ``keys`` (one typed column per partition column, named
    logically; ``physical`` are their directory names, in order), Hive-escaped. Raises as
    ``partition_texts`` does."""
    texts = [
        partition_texts(keys.column(i), n).to_pylist() for i, n in enumerate(keys.column_names)
    ]
    return [
        "/".join(
            partition_segment(c, column[row]) for c, column in zip(physical, texts, strict=True)
        )
        for row in range(keys.num_rows)
    ]
