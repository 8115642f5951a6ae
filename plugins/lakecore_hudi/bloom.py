"""Hudi's bloom filters: the record-key filter every Parquet base file carries in its footer.

Hudi's bloom index finds the file groups that may hold a key by reading, from each base file's
footer key-value metadata:

- ``org.apache.hudi.bloomfilter``: the filter, serialized (older files: ``com.uber.hoodie.
  bloomfilter``);
- ``hoodie_bloom_filter_type_code``: ``DYNAMIC_V0`` for a dynamic filter (absent = ``SIMPLE``);
- ``hoodie_min_record_key`` / ``hoodie_max_record_key``: the file's key range.

The serialized filter is standard base64 (with padding; the text is ASCII, which Hudi reads
as UTF-8 or ISO-8859-1 alike) of big-endian Java ``DataOutput`` bytes, Hadoop's ``Writable``
layout of ``org.apache.hadoop.util.bloom.BloomFilter``:

- a filter header: int32 version ``-1``, int32 number of hash functions, int8 hash type
  (``1`` Murmur, ``0`` Jenkins), int32 vector size in bits; then the bit vector in
  ``ceil(bits / 8)`` bytes, bit ``i`` in byte ``i // 8`` at mask ``1 << (i % 8)``;
- ``DYNAMIC_V0`` (Hudi's ``InternalDynamicBloomFilter``, a bounded Hadoop
  ``DynamicBloomFilter``): a filter header, int32 keys per row, int32 keys in the active row,
  int32 row count, then each row as a whole filter (header + bits). Rows fill in turn while
  ``rows * keys_per_row < max_entries``; once that bound is reached, keys go round-robin over
  the rows. A key may be present when any row holds it.

The ``k`` bit positions of a key are Hadoop's chained MurmurHash 2 of its UTF-8 bytes
(``bloom_hash``, vectorised over whole key arrays). Sizes follow Hudi:
``bits = ceil(n * -ln(fpp) / ln(2)^2)``, ``k = ceil(ln(2) * bits / n)``.
"""

from __future__ import annotations

import base64
import binascii
import math
import struct
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import CorruptTableError, InvalidArgumentError, UnsupportedFeatureError
from lakecore_hudi.bloom_hash import bit_positions, key_bytes

FILTER_KEY = "org.apache.hudi.bloomfilter"
OLD_FILTER_KEY = "com.uber.hoodie.bloomfilter"
TYPE_CODE_KEY = "hoodie_bloom_filter_type_code"
MIN_KEY = "hoodie_min_record_key"
MAX_KEY = "hoodie_max_record_key"

SIMPLE = "SIMPLE"
DYNAMIC_V0 = "DYNAMIC_V0"
MURMUR_HASH = 1
JENKINS_HASH = 0
_VERSION = -1
_HEADER = struct.Struct(">iib")  # version, number of hashes, hash type (then vector size)


@dataclass(frozen=True, slots=True)
class BloomSettings:
    """How a writer sizes its filters: Hudi's defaults (``hoodie.bloom.index.filter.type``,
    ``hoodie.index.bloom.num_entries``, ``hoodie.index.bloom.fpp``,
    ``hoodie.bloom.index.filter.dynamic.max.entries``)."""

    type_code: str = DYNAMIC_V0
    num_entries: int = 60_000
    fpp: float = 1e-9
    max_entries: int = 100_000

    def __post_init__(self) -> None:
        if self.type_code not in (SIMPLE, DYNAMIC_V0):
            raise UnsupportedFeatureError(
                f"hudi-bloom-type-{self.type_code.lower()}",
                f"bloom filter type {self.type_code!r}: lakecore writes SIMPLE and DYNAMIC_V0",
            )
        if self.num_entries <= 0 or self.max_entries <= 0 or not 0.0 < self.fpp < 1.0:
            raise InvalidArgumentError(
                f"bloom filter settings need entries > 0 and 0 < fpp < 1, not {self}"
            )

    @property
    def bits(self) -> int:
        """Bits of one filter (one row of a dynamic filter)."""
        return math.ceil(self.num_entries * (-math.log(self.fpp) / (math.log(2) * math.log(2))))

    @property
    def hashes(self) -> int:
        """Hash functions per key."""
        return math.ceil(math.log(2) * self.bits / self.num_entries)


@dataclass(frozen=True, slots=True)
class BloomFilter:
    """A decoded Hudi bloom filter: one bit vector per row (``SIMPLE`` has one row).

    ``rows`` hold unpacked bits (numpy bool arrays of ``vector_size``); ``keys_per_row`` and
    ``active_keys`` are the dynamic filter's ``nr`` and ``currentNbRecord`` (0 for SIMPLE).
    """

    type_code: str
    hash_type: int
    hashes: int
    vector_size: int
    rows: tuple[np.ndarray, ...]
    keys_per_row: int = 0
    active_keys: int = 0

    def might_contain(
        self, keys: pa.Array | pa.ChunkedArray | KeyProbe, subset: np.ndarray | None = None
    ) -> np.ndarray:
        """Per key (strings or binary, or a ``KeyProbe``; with ``subset``, only the probe's
        keys at those indices), False when the filter proves the key was never added. A null
        or empty key answers True (Hadoop cannot hash it, so it proves nothing).

        Raises ``UnsupportedFeatureError`` for a Jenkins-hashed filter.
        """
        if self.hash_type != MURMUR_HASH:
            raise UnsupportedFeatureError(
                "hudi-bloom-jenkins-hash", "lakecore tests keys against Murmur-hashed filters only"
            )
        probe = keys if isinstance(keys, KeyProbe) else KeyProbe(keys)
        valid = probe.valid if subset is None else probe.valid[subset]
        per_row = [np.ones(len(valid), dtype=bool) for _ in self.rows]
        for positions in probe.positions(self.hashes, self.vector_size):
            picked = positions if subset is None else positions[subset]
            for r, bits in enumerate(self.rows):
                per_row[r] &= bits[picked]
        found = np.zeros(len(valid), dtype=bool)
        for hit in per_row:
            found |= hit
        out: np.ndarray = found | ~valid
        return out

    def serialize(self) -> str:
        """The footer text Hudi writes for this filter (base64 of its Writable bytes)."""
        parts = []
        if self.type_code == DYNAMIC_V0:
            parts.append(self._header())
            parts.append(struct.pack(">iii", self.keys_per_row, self.active_keys, len(self.rows)))
        for bits in self.rows:
            parts.append(self._header())
            parts.append(np.packbits(bits, bitorder="little").tobytes())
        return base64.b64encode(b"".join(parts)).decode("ascii")

    def _header(self) -> bytes:
        return _HEADER.pack(_VERSION, self.hashes, self.hash_type) + struct.pack(
            ">i", self.vector_size
        )


class KeyProbe:
    """Keys to test against many filters: their bit positions are hashed once per filter
    shape (hash count, vector size) and reused for every filter of that shape (all of a
    table's files, when one writer configuration wrote them)."""

    def __init__(self, keys: pa.Array | pa.ChunkedArray) -> None:
        self._data, self._offsets, self.valid = key_bytes(keys)
        self.size = len(self.valid)
        self._cache: dict[tuple[int, int], list[np.ndarray]] = {}

    def positions(self, hashes: int, size: int) -> list[np.ndarray]:
        """The ``hashes`` bit positions of every key in a vector of ``size`` bits."""
        shape = (hashes, size)
        if shape not in self._cache:
            self._cache[shape] = bit_positions(self._data, self._offsets, hashes, size)
        return self._cache[shape]


def build_filter(keys: pa.Array | pa.ChunkedArray, settings: BloomSettings) -> BloomFilter:
    """The filter Hudi's writer builds when it adds ``keys`` in this order (same bits).

    Raises:
        InvalidArgumentError: a key is null or empty (Hadoop cannot hash it).
    """
    data, offsets, valid = key_bytes(keys)
    n = len(offsets) - 1
    if not valid.all():
        raise InvalidArgumentError("a bloom filter cannot hold a null or empty record key")
    size, hashes = settings.bits, settings.hashes
    if settings.type_code == SIMPLE:
        row_of = np.zeros(n, dtype=np.int64)
        count, active, nr = 1, 0, 0
    else:
        nr = settings.num_entries
        row_of, count, active = _dynamic_rows(n, nr, settings.max_entries)
    flat = np.zeros(count * size, dtype=bool)
    base = row_of * size
    for positions in bit_positions(data, offsets, hashes, size):
        flat[base + positions] = True
    rows = tuple(flat[r * size : (r + 1) * size] for r in range(count))
    return BloomFilter(settings.type_code, MURMUR_HASH, hashes, size, rows, nr, active)


def parse_filter(text: str | bytes, type_code: str | None, where: str) -> BloomFilter:
    """Decode a footer's serialized filter (``type_code`` None = ``SIMPLE``, as Hudi reads it).

    Raises:
        CorruptTableError: the text is not a filter of that type (names ``where``).
        UnsupportedFeatureError: an unknown type code.
    """
    code = (type_code or SIMPLE).strip()
    if code not in (SIMPLE, DYNAMIC_V0):
        raise UnsupportedFeatureError(
            f"hudi-bloom-type-{code.lower()}", f"{where}: unknown bloom filter type {code!r}"
        )
    try:
        raw = base64.b64decode(text, validate=True)
        reader = _Reader(raw)
        if code == SIMPLE:
            hashes, hash_type, size = reader.header()
            filt = BloomFilter(code, hash_type, hashes, size, (reader.bits(size),))
        else:
            hashes, hash_type, size = reader.header()
            nr, active, count = reader.ints(3)
            if count < 1:
                raise ValueError(f"{count} rows")
            matrix = tuple(reader.row(hashes, hash_type, size) for _ in range(count))
            filt = BloomFilter(code, hash_type, hashes, size, matrix, nr, active)
        reader.done()
    except (binascii.Error, ValueError, struct.error) as exc:
        raise CorruptTableError(f"{where}: not a {code} bloom filter ({exc})") from None
    return filt


def key_bounds(keys: pa.Array | pa.ChunkedArray) -> tuple[str, str] | None:
    """The (min, max) record key as Hudi's writer records them (Java ``String`` order: UTF-16
    code units), None when there is no key.

    UTF-8 byte order is the same order unless a key holds a character at or above U+E000, so
    only then are the keys sorted in Python.
    """
    keys = pc.drop_null(keys.cast(pa.string()))
    if len(keys) == 0:
        return None
    if pc.any(pc.match_substring_regex(keys, "[\ue000-\U0010ffff]")).as_py():
        values = pc.unique(keys).to_pylist()
        ordered = sorted(values, key=lambda s: s.encode("utf-16-be", "surrogatepass"))
        return ordered[0], ordered[-1]
    bounds = pc.min_max(keys)
    return str(bounds["min"].as_py()), str(bounds["max"].as_py())


def footer_metadata(
    keys: pa.Array | pa.ChunkedArray, settings: BloomSettings | None = None
) -> dict[str, str]:
    """The footer key-value metadata Hudi's Parquet writer records for a file of ``keys`` (in
    file order): the filter, its type code (dynamic filters only), and the key range (when the
    file has keys). Null and empty keys (which Hudi's writers refuse) are left out of the
    filter; a lookup of such a key answers "may contain" anyway."""
    settings = settings or BloomSettings()
    keys = keys.cast(pa.string()) if not pa.types.is_string(keys.type) else keys
    filt = build_filter(pc.filter(keys, pc.fill_null(pc.not_equal(keys, ""), False)), settings)
    out = {FILTER_KEY: filt.serialize()}
    if filt.type_code == DYNAMIC_V0:
        out[TYPE_CODE_KEY] = DYNAMIC_V0
    bounds = key_bounds(keys)
    if bounds is not None:
        out[MIN_KEY], out[MAX_KEY] = bounds
    return out


def filter_from_footer(metadata: Mapping[bytes, bytes], where: str) -> BloomFilter | None:
    """The filter in a Parquet footer's key-value ``metadata``, None when it has none.

    Raises ``CorruptTableError``/``UnsupportedFeatureError`` as ``parse_filter`` does.
    """
    text = metadata.get(FILTER_KEY.encode()) or metadata.get(OLD_FILTER_KEY.encode())
    if text is None:
        return None
    code = metadata.get(TYPE_CODE_KEY.encode())
    return parse_filter(text, None if code is None else code.decode("utf-8", "replace"), where)


def _dynamic_rows(n: int, nr: int, max_entries: int) -> tuple[np.ndarray, int, int]:
    """(row of each key, row count, keys in the active row) of a bounded dynamic filter that
    received ``n`` keys: rows fill in turn up to ``ceil(max_entries / nr)`` rows; after that the
    first key goes to row 0 and the next ones round-robin from row 0."""
    limit = max(1, -(-max_entries // nr))
    index = np.arange(n, dtype=np.int64)
    filled = limit * nr
    row_of = np.minimum(index // nr, limit - 1)
    extra = index >= filled
    if extra.any():
        j = index[extra] - filled
        row_of[extra] = np.where(j == 0, 0, (j - 1) % limit)
    rows = min(limit, max(1, -(-n // nr)))
    active = n if n <= nr else (n - (rows - 1) * nr)
    return row_of, rows, active


class _Reader:
    """Big-endian ``DataInput`` over serialized filter bytes."""

    def __init__(self, raw: bytes) -> None:
        self._raw = raw
        self._at = 0

    def ints(self, count: int) -> tuple[int, ...]:
        values = struct.unpack_from(f">{count}i", self._raw, self._at)
        self._at += 4 * count
        return values

    def header(self) -> tuple[int, int, int]:
        """(hashes, hash type, vector size) of a versioned filter header."""
        version, hashes, hash_type = _HEADER.unpack_from(self._raw, self._at)
        self._at += _HEADER.size
        if version > 0:
            raise ValueError("unversioned (Jenkins-hashed) filter headers are not supported")
        if version != _VERSION:
            raise ValueError(f"unknown filter version {version}")
        (size,) = self.ints(1)
        if size <= 0 or hashes <= 0:
            raise ValueError(f"{size} bits, {hashes} hashes")
        return hashes, hash_type, size

    def bits(self, size: int) -> np.ndarray:
        count = (size + 7) // 8
        chunk = self._raw[self._at : self._at + count]
        if len(chunk) != count:
            raise ValueError(f"the bit vector is cut short ({len(chunk)} of {count} bytes)")
        self._at += count
        return np.unpackbits(np.frombuffer(chunk, np.uint8), bitorder="little")[:size].astype(bool)

    def row(self, hashes: int, hash_type: int, size: int) -> np.ndarray:
        header = self.header()
        if header != (hashes, hash_type, size):
            raise ValueError(f"a row's header {header} differs from the filter's")
        return self.bits(size)

    def done(self) -> None:
        if self._at != len(self._raw):
            raise ValueError(f"{len(self._raw) - self._at} bytes after the filter")


__all__ = [
    "DYNAMIC_V0",
    "FILTER_KEY",
    "MAX_KEY",
    "MIN_KEY",
    "SIMPLE",
    "TYPE_CODE_KEY",
    "BloomFilter",
    "BloomSettings",
    "KeyProbe",
    "build_filter",
    "filter_from_footer",
    "footer_metadata",
    "key_bounds",
    "parse_filter",
]
