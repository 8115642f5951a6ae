"""Hudi's bloom index, lakecore's side: which file slices may hold some of a batch of record keys.

Given the slices left by the planner's pruning and the incoming record keys, each remaining
slice's base-file footer is read (one ranged read of exactly the footer, in threads) and
checked in order of cost:

1. the key range (``hoodie_min_record_key`` / ``hoodie_max_record_key``): keys outside it are
   not in the file;
2. the bloom filter (``org.apache.hudi.bloomfilter``) over the keys left: a slice none of them
   may be in is dropped.

A slice is always kept when nothing proves it holds none of the keys: it has log files (their
records are covered by no filter), no base file, a base file that is neither Parquet nor Lance
(a Lance base file keeps the same entries in its schema metadata, as Hudi 1.1 writes it), a
footer without a filter, or a footer that cannot be read or decoded (the read that follows then
reports the problem). Key ranges are trusted only where Java's ``String`` order (UTF-16 code
units, how Hudi's Avro writer picks the bounds) and UTF-8 byte order (Spark's row writer,
Arrow) agree: when neither the keys nor the bounds hold a character at or above U+E000.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakecore.errors import LakecoreError
from lakecore.storage import Storage
from lakecore_hudi.bloom import MAX_KEY, MIN_KEY, BloomFilter, KeyProbe, filter_from_footer
from lakecore_hudi.view import FileSlice
from lakecore_hudi.write.lance_base import (
    LANCE_EXTENSION,
    is_lance_path,
    read_lance_schema_metadata,
)

FOOTER_READERS = 8
"""Footers read at once (a base file's footer holds its ~430 KB filter)."""
_BEYOND_BMP_ORDER = "[\ue000-\U0010ffff]"


@dataclass(frozen=True, slots=True)
class KeyFooter:
    """What a base file's footer says about its record keys (None = not recorded)."""

    min_key: str | None
    max_key: str | None
    filter: BloomFilter | None


def read_key_footer(storage: Storage, path: str, size: int) -> KeyFooter | None:
    """The key range and bloom filter in the footer of Parquet file ``path`` (``size`` bytes),
    read with two ranged reads (trailer, then exactly the footer). None when the footer cannot
    be read or decoded: the caller must then treat the file as holding any key.
    """
    try:
        trailer = storage.read(path, max(size - 8, 0), size)
        length = int.from_bytes(trailer[:4], "little")
        if len(trailer) != 8 or trailer[4:] != b"PAR1" or length > size - 12:
            return None
        footer = storage.read(path, size - 8 - length, size - 8)
        meta = pq.read_metadata(pa.BufferReader(b"PAR1" + footer + trailer)).metadata or {}
        return _key_footer(meta, path)
    except (LakecoreError, OSError, ValueError, pa.ArrowException):
        return None


def read_lance_key_footer(storage: Storage, path: str) -> KeyFooter | None:
    """The key range and bloom filter in the schema metadata of Lance base file ``path``; None
    when it cannot be read or decoded (the caller must then treat the file as holding any key)."""
    try:
        return _key_footer(read_lance_schema_metadata(storage, path), path)
    except (LakecoreError, OSError, ValueError, pa.ArrowException):
        return None


def _key_footer(meta: Mapping[bytes, bytes], path: str) -> KeyFooter:
    low, high = meta.get(MIN_KEY.encode()), meta.get(MAX_KEY.encode())
    return KeyFooter(
        None if low is None else low.decode("utf-8"),
        None if high is None else high.decode("utf-8"),
        filter_from_footer(meta, path),
    )


def slices_holding(
    storage: Storage, slices: Sequence[FileSlice], kept: Sequence[int], keys: pa.Array
) -> list[int]:
    """The indices among ``kept`` (into ``slices``) of the slices that may hold one of the
    record ``keys`` (strings): a superset of those that do (see the module doc)."""
    keys = pc.unique(pc.drop_null(keys.cast(pa.string())))
    if len(keys) == 0:
        return []
    if not pc.all(pc.greater(pc.binary_length(keys), 0)).as_py():
        return list(kept)  # an empty key: no filter can rule it out
    probe = KeyProbe(keys)
    ranged = not pc.any(pc.match_substring_regex(keys, _BEYOND_BMP_ORDER)).as_py()
    checked = [i for i in kept if _checkable(slices[i])]
    with ThreadPoolExecutor(FOOTER_READERS) as pool:
        footers = dict(
            zip(checked, pool.map(lambda i: _footer_of(storage, slices[i]), checked), strict=True)
        )
    out = []
    for i in kept:
        footer = footers.get(i)
        if footer is None or _may_hold(footer, keys, probe, ranged):
            out.append(i)
    return out


def _checkable(s: FileSlice) -> bool:
    """Whether a footer can rule the slice out: a Parquet or Lance base file and no log files."""
    base = s.base_file
    return (
        base is not None
        and not s.log_files
        and base.path.lower().endswith((".parquet", "." + LANCE_EXTENSION))
    )


def _footer_of(storage: Storage, s: FileSlice) -> KeyFooter | None:
    base = s.base_file
    assert base is not None  # _checkable
    if is_lance_path(base.path):
        return read_lance_key_footer(storage, base.path)
    return read_key_footer(storage, base.path, base.size)


def _may_hold(footer: KeyFooter, keys: pa.Array, probe: KeyProbe, ranged: bool) -> bool:
    """Whether a file with ``footer`` may hold one of ``keys`` (``probe`` hashes them)."""
    inside = np.ones(len(keys), dtype=bool)
    low, high = footer.min_key, footer.max_key
    if ranged and low is not None and high is not None and _plain(low) and _plain(high):
        mask = pc.and_(pc.greater_equal(keys, low), pc.less_equal(keys, high))
        inside = mask.to_numpy(zero_copy_only=False)
        if not inside.any():
            return False
    if footer.filter is None:
        return True
    # Only the keys inside the file's range are looked up (few, when files hold key ranges).
    subset = None if inside.all() else np.nonzero(inside)[0]
    try:
        return bool(footer.filter.might_contain(probe, subset).any())
    except LakecoreError:
        return True  # a filter lakecore cannot evaluate proves nothing


def _plain(bound: str) -> bool:
    """Whether ``bound`` orders the same in UTF-16 code units and in UTF-8 bytes."""
    return not any(ord(c) >= 0xE000 for c in bound)


__all__ = ["FOOTER_READERS", "KeyFooter", "read_key_footer", "slices_holding"]
