"""Bit positions of keys in Hudi's bloom filters: Hadoop's chained MurmurHash 2, vectorised.

``bit_positions`` gives, for every key of an array at once, the ``k`` positions Hadoop's
``HashFunction`` picks: ``h_0 = murmur(key, 0)``, ``h_i = murmur(key, h_{i-1})``, position
``|h_i % bits|`` (Java remainder). ``murmur`` is Hadoop's ``MurmurHash.hash(bytes, length,
seed)``: 32-bit MurmurHash 2 over the key's UTF-8 bytes, little-endian 4-byte blocks, tail bytes
sign-extended as Java's ``byte`` is. numpy does the arithmetic (uint32, wrapping); the loops
run over 4-byte blocks and hash functions, never over keys.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_M = np.uint32(0x5BD1E995)


def key_bytes(keys: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(UTF-8 bytes, offsets, valid mask) of ``keys``; null keys become empty, and empty keys
    are marked invalid."""
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks() if keys.num_chunks else pa.array([], pa.string())
    if not (pa.types.is_binary(keys.type) or pa.types.is_large_binary(keys.type)):
        keys = keys.cast(pa.large_binary() if pa.types.is_large_string(keys.type) else pa.binary())
    keys = pc.fill_null(keys, b"") if keys.null_count else keys
    width = np.int64 if pa.types.is_large_binary(keys.type) else np.int32
    buffers = keys.buffers()
    n = len(keys)
    offsets = np.frombuffer(buffers[1], dtype=width)[keys.offset : keys.offset + n + 1]
    offsets = offsets.astype(np.int64)
    data = (
        np.frombuffer(buffers[2], dtype=np.uint8)
        if buffers[2] is not None
        else np.zeros(0, np.uint8)
    )
    return data, offsets, np.diff(offsets) > 0


def bit_positions(
    data: np.ndarray, offsets: np.ndarray, hashes: int, size: int
) -> list[np.ndarray]:
    """The ``hashes`` bit positions of every key (one int64 array per hash function)."""
    n = len(offsets) - 1
    out = [np.zeros(n, dtype=np.int64) for _ in range(hashes)]
    lengths = np.diff(offsets)
    blocks = lengths >> 2
    # Keys of one block count hash without masks; most tables have few distinct key lengths.
    for count in np.unique(blocks):
        idx = np.nonzero(blocks == count)[0]
        starts, lens = offsets[idx], lengths[idx]
        words = _mixed_words(data, starts, int(count))
        tail, has_tail = _tail(data, starts + lens, lens - 4 * count)
        seed = np.zeros(len(idx), dtype=np.uint32)
        len32 = lens.astype(np.uint32)
        for i in range(hashes):
            h = seed ^ len32
            for w in words:
                h *= _M
                h ^= w
            if has_tail.all():
                h ^= tail
                h *= _M
            elif has_tail.any():
                h = np.where(has_tail, (h ^ tail) * _M, h)
            h ^= h >> np.uint32(13)
            h *= _M
            h ^= h >> np.uint32(15)
            seed = h
            signed = h.view(np.int32).astype(np.int64)
            out[i][idx] = np.abs(np.fmod(signed, size))
    return out


def _mixed_words(data: np.ndarray, starts: np.ndarray, count: int) -> list[np.ndarray]:
    """Per 4-byte block, the block's little-endian word already mixed (``k *= m; k ^= k >>> 24;
    k *= m``): it does not depend on the seed, so it is computed once for all hashes."""
    if count == 0:
        return []
    index = starts[:, None] + np.arange(4 * count, dtype=np.int64)[None, :]
    raw = np.ascontiguousarray(data[index]).view("<u4").astype(np.uint32)
    raw *= _M
    raw ^= raw >> np.uint32(24)
    raw *= _M
    return [np.ascontiguousarray(raw[:, b]) for b in range(count)]


def _tail(data: np.ndarray, ends: np.ndarray, left: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The XOR of the last ``left`` (0-3) bytes, sign-extended as Java bytes, shifted into place."""
    tail = np.zeros(len(ends), dtype=np.uint32)
    for back, shift in ((3, 16), (2, 8), (1, 0)):
        use = left >= back
        if not use.any():
            continue
        byte = data[np.where(use, ends - back, 0)].astype(np.int8).astype(np.int32)
        value = (byte.astype(np.int64) << shift).astype(np.uint64).astype(np.uint32)
        tail ^= np.where(use, value, np.uint32(0))
    return tail, left > 0


__all__ = ["bit_positions", "key_bytes"]
