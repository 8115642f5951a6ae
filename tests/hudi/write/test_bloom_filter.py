"""Bloom filters in Hudi base-file footers (issue 13): lakecore writes Hudi's format, reads Spark's.

The format is checked with an independent decoder written here from the format description
(Hadoop's ``BloomFilter``/``DynamicBloomFilter`` Writable bytes, base64; Hadoop's MurmurHash 2
with sign-extended tail bytes; chained hashes ``|h % bits|``), scalar Python sharing no code
with ``lakecore_hudi.bloom``. It decodes the footers lakecore writes and the footers Spark wrote
in the corpus (which proves the decoder right), checks every written key is a member, and
measures the false-positive rate. lakecore's own reader is checked on every corpus base file:
each of its record keys must test positive, and the filter lakecore builds from the same keys
in file order must be byte-identical to the one Hudi wrote.
"""

from __future__ import annotations

import base64
import glob
import math
import struct
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from lakecore_hudi import bloom
from lakecore_hudi.write.files_out import write_base_file

import lakecore
from lakecore.errors import CorruptTableError, InvalidArgumentError, UnsupportedFeatureError
from lakecore.storage import open_storage
from tests.hudi.write.helpers import SCHEMA, create, rows, upsert

CORPUS = Path("/work/shared/corpus/hudi")

# ---------------------------------------------------------------- the independent decoder


def _int32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x & 0x80000000 else x


def murmur(data: bytes, seed: int) -> int:
    """Hadoop's MurmurHash.hash(data, length, seed) as a Java int."""
    m, length = 0x5BD1E995, len(data)
    h = (seed ^ length) & 0xFFFFFFFF
    for i in range(length // 4):
        k = int.from_bytes(data[4 * i : 4 * i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> 24
        k = (k * m) & 0xFFFFFFFF
        h = ((h * m) & 0xFFFFFFFF) ^ k
    left = length % 4
    if left:
        signed = [b - 256 if b > 127 else b for b in data[length - left :]]
        # Java: h ^= (int) data[len-3] << 16; h ^= (int) data[len-2] << 8; h ^= data[len-1]
        for value, shift in zip(signed, (16, 8, 0)[3 - left :], strict=True):
            h ^= (value << shift) & 0xFFFFFFFF
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return _int32(h)


def positions(key: bytes, hashes: int, bits: int) -> list[int]:
    out, seed = [], 0
    for _ in range(hashes):
        seed = murmur(key, seed)
        out.append(abs(int(math.fmod(seed, bits))))  # Java's % keeps the dividend's sign
    return out


@dataclass
class Decoded:
    hashes: int
    hash_type: int
    bits: int
    rows: list[bytes]
    keys_per_row: int | None = None
    active: int | None = None

    def contains(self, key: str) -> bool:
        spots = positions(key.encode("utf-8"), self.hashes, self.bits)
        return any(all(row[p // 8] & (1 << (p % 8)) for p in spots) for row in self.rows)


def decode(text: bytes | str, type_code: str | None) -> Decoded:
    raw = base64.b64decode(text)
    at = 0

    def header() -> tuple[int, int, int]:
        nonlocal at
        version, hashes, hash_type, size = struct.unpack_from(">iibi", raw, at)
        assert version == -1
        at += 13
        return hashes, hash_type, size

    def vector(size: int) -> bytes:
        nonlocal at
        n = (size + 7) // 8
        at += n
        return raw[at - n : at]

    hashes, hash_type, size = header()
    if type_code in (None, "SIMPLE"):
        out = Decoded(hashes, hash_type, size, [vector(size)])
    else:
        assert type_code == "DYNAMIC_V0"
        nr, active, count = struct.unpack_from(">iii", raw, at)
        at += 12
        matrix = []
        for _ in range(count):
            assert header() == (hashes, hash_type, size)
            matrix.append(vector(size))
        out = Decoded(hashes, hash_type, size, matrix, nr, active)
    assert at == len(raw), "trailing bytes"
    return out


def footer_of(path: str | Path) -> dict[str, bytes]:
    meta = pq.read_metadata(str(path)).metadata or {}
    return {k.decode(): v for k, v in meta.items()}


def decode_footer(path: str | Path) -> Decoded:
    meta = footer_of(path)
    code = meta.get("hoodie_bloom_filter_type_code")
    return decode(meta["org.apache.hudi.bloomfilter"], None if code is None else code.decode())


def java_order(keys: list[str]) -> list[str]:
    return sorted(keys, key=lambda s: s.encode("utf-16-be", "surrogatepass"))


# ---------------------------------------------------------------- lakecore-written footers


def _base_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.parquet") if ".hoodie" not in p.parts)


def test_lakecore_footers_decode_with_every_key(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = create(root)
    data = rows(*[(i, f"n{i}", 1, "x" if i % 3 else "y") for i in range(300)])
    table.append(data)
    upsert(table, rows((5, "changed", 2, "x"), (1000, "new", 1, "y")))
    files = _base_files(root)
    live = lakecore.open(str(root)).to_arrow(columns=["_hoodie_file_name"]).column(0)
    checked = 0
    for path in files:
        meta = footer_of(path)
        assert set(meta) == {
            "ARROW:schema",
            "org.apache.hudi.bloomfilter",
            "hoodie_bloom_filter_type_code",
            "hoodie_min_record_key",
            "hoodie_max_record_key",
        }
        # The filter is in the footer once, not a second time inside the Arrow schema.
        assert len(meta["ARROW:schema"]) < 10_000
        assert meta["hoodie_bloom_filter_type_code"] == b"DYNAMIC_V0"
        keys = [str(k) for k in pq.read_table(path, columns=["_hoodie_record_key"]).column(0)]
        filt = decode_footer(path)
        assert (filt.hashes, filt.hash_type, filt.bits) == (30, 1, 2587966)
        assert (filt.keys_per_row, filt.active, len(filt.rows)) == (60000, len(keys), 1)
        assert all(filt.contains(k) for k in keys)
        ordered = java_order(keys)
        assert meta["hoodie_min_record_key"].decode() == ordered[0]
        assert meta["hoodie_max_record_key"].decode() == ordered[-1]
        checked += 1
    # Two partitions appended, then the upsert rewrote x's file and added one to y.
    assert checked == len(files) == 4
    assert len(set(live.to_pylist())) == 3


def test_false_positive_rate_is_near_the_configured_fpp(tmp_path: Path) -> None:
    storage = open_storage(str(tmp_path))
    settings = bloom.BloomSettings(bloom.SIMPLE, num_entries=1000, fpp=0.02)
    keys = [f"member-{i}" for i in range(1000)]
    write_base_file(storage, "f.parquet", _records(keys), settings)
    meta = footer_of(tmp_path / "f.parquet")
    assert "hoodie_bloom_filter_type_code" not in meta  # Hudi writes it for dynamic filters only
    filt = decode(meta["org.apache.hudi.bloomfilter"], None)
    bits = math.ceil(1000 * -math.log(0.02) / math.log(2) ** 2)
    assert (filt.hashes, filt.bits) == (settings.hashes, settings.bits)
    assert (filt.bits, filt.hashes) == (bits, math.ceil(math.log(2) * bits / 1000))
    assert all(filt.contains(k) for k in keys)
    probes = [f"other-{i}" for i in range(6000)]
    rate = sum(filt.contains(k) for k in probes) / len(probes)
    assert 0.01 <= rate <= 0.04, rate
    # lakecore's vectorised test answers exactly as the independent decoder does.
    ours = bloom.parse_filter(meta["org.apache.hudi.bloomfilter"], None, "f.parquet")
    hits = ours.might_contain(pa.array(probes))
    assert hits.tolist() == [filt.contains(k) for k in probes]


def test_default_filter_has_no_false_positive_in_100k_probes() -> None:
    members = pa.array([f"key-{i:06d}" for i in range(5000)])
    filt = bloom.build_filter(members, bloom.BloomSettings())
    assert filt.might_contain(members).all()
    assert not filt.might_contain(pa.array([f"none-{i}" for i in range(100_000)])).any()


def test_dynamic_filter_grows_rows_then_round_robins(tmp_path: Path) -> None:
    storage = open_storage(str(tmp_path))
    settings = bloom.BloomSettings(num_entries=500, fpp=0.01, max_entries=1000)
    keys = [f"k{i}" for i in range(1700)]
    write_base_file(storage, "f.parquet", _records(keys), settings)
    filt = decode_footer(tmp_path / "f.parquet")
    # Two rows of 500 fill in turn (2 * 500 >= 1000 ends growth); the active count keeps going.
    assert (len(filt.rows), filt.keys_per_row, filt.active) == (2, 500, 1200)
    assert all(filt.contains(k) for k in keys)
    first, second = (Decoded(filt.hashes, 1, filt.bits, [row]) for row in filt.rows)
    assert all(first.contains(k) for k in keys[:500])
    assert all(second.contains(k) for k in keys[500:1000])
    # Key 1000 goes to row 0, then 1001 to row 0, 1002 to row 1, alternating.
    assert first.contains(keys[1000]) and first.contains(keys[1001])
    assert second.contains(keys[1002]) and first.contains(keys[1003])


def test_non_ascii_keys_hash_their_utf8_bytes_sign_extended(tmp_path: Path) -> None:
    storage = open_storage(str(tmp_path))
    keys = ["é", "日本", "日本語x", "a\U0001f600", "\ue000", "zz"]
    write_base_file(storage, "f.parquet", _records(keys))
    filt = decode_footer(tmp_path / "f.parquet")
    assert all(filt.contains(k) for k in keys)
    meta = footer_of(tmp_path / "f.parquet")
    # Java String order: the surrogate pair of U+1F600 sorts below U+E000 (UTF-8 says above).
    assert meta["hoodie_min_record_key"].decode() == "a\U0001f600"
    assert meta["hoodie_max_record_key"].decode() == "\ue000"
    assert bloom.key_bounds(pa.array(keys)) == ("a\U0001f600", "\ue000")


def _records(keys: list[str]) -> pa.Table:
    return pa.table({"_hoodie_record_key": pa.array(keys, pa.string()), "v": range(len(keys))})


# ---------------------------------------------------------------- Spark-written corpus footers


def _corpus_files() -> list[str]:
    if not CORPUS.is_dir():
        pytest.fail(f"the shared corpus is not at {CORPUS} (set LAKECORE_CORPUS)")
    return sorted(glob.glob(str(CORPUS / "*" / "**" / "*.parquet"), recursive=True))


def test_corpus_filters_hold_every_record_key() -> None:
    with_filter = without = 0
    for path in _corpus_files():
        meta = pq.read_metadata(path).metadata or {}
        filt = bloom.filter_from_footer(meta, path)
        if filt is None:
            without += 1
            continue
        keys = pq.read_table(path, columns=["_hoodie_record_key"]).column(0)
        assert filt.might_contain(keys).all(), path
        # Same keys in file order -> the very bytes Hudi wrote.
        text = meta[bloom.FILTER_KEY.encode()].decode()
        assert bloom.footer_metadata(keys)[bloom.FILTER_KEY] == text, path
        assert filt.serialize() == text
        with_filter += 1
    # 20 Spark-written tables; only the two no-meta-fields tables' 6 files carry no filter.
    assert (with_filter, without) == (74, 6)


def test_independent_decoder_reads_spark_footers() -> None:
    path = next(p for p in _corpus_files() if "mor_avro_v8_trips_8i3u1d" in p)
    filt = decode_footer(path)
    keys = [str(k) for k in pq.read_table(path, columns=["_hoodie_record_key"]).column(0)]
    assert keys and all(filt.contains(k) for k in keys)
    assert not any(filt.contains(f"absent-{i}") for i in range(200))


# ---------------------------------------------------------------- bad input


def test_bad_filters_raise_typed_errors() -> None:
    good = bloom.footer_metadata(pa.array(["a"]))[bloom.FILTER_KEY]
    with pytest.raises(CorruptTableError, match=r"f\.parquet"):
        bloom.parse_filter(good[:-8], "DYNAMIC_V0", "f.parquet")
    with pytest.raises(CorruptTableError, match="not a SIMPLE"):
        bloom.parse_filter(good, None, "f.parquet")  # a dynamic filter read as a simple one
    with pytest.raises(CorruptTableError):
        bloom.parse_filter("not base64!", "DYNAMIC_V0", "f.parquet")
    with pytest.raises(UnsupportedFeatureError, match="BITSET"):
        bloom.parse_filter(good, "BITSET", "f.parquet")
    with pytest.raises(InvalidArgumentError):
        bloom.BloomSettings(fpp=1.5)
    with pytest.raises(UnsupportedFeatureError):
        bloom.BloomSettings(type_code="BITSET")
    with pytest.raises(InvalidArgumentError, match="empty"):
        bloom.build_filter(pa.array(["a", ""]), bloom.BloomSettings())


def test_table_schema_is_unchanged_by_footer_metadata(tmp_path: Path) -> None:
    root = tmp_path / "t"
    create(root).append(rows((1, "a", 1, "x")))
    got = lakecore.open(str(root)).to_arrow(columns=SCHEMA.names)
    assert got.schema.metadata is None or bloom.FILTER_KEY.encode() not in got.schema.metadata


def test_files_without_the_key_column_get_no_bloom_entries(tmp_path: Path) -> None:
    """As Hudi writes tables with hoodie.populate.meta.fields=false (the corpus's)."""
    storage = open_storage(str(tmp_path))
    write_base_file(storage, "f.parquet", pa.table({"id": [1, 2]}))
    assert set(footer_of(tmp_path / "f.parquet")) == {"ARROW:schema"}
