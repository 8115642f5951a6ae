"""The HFile writer: Hudi's own HFiles re-encode byte for byte; our files read back."""

from __future__ import annotations

import struct

import pytest
from lakecore_hudi.log.format import BlockType, read_log_blocks
from lakecore_hudi.mdt import hfile
from lakecore_hudi.mdt.hfile_writer import write_hfile

from lakecore.errors import InvalidArgumentError
from tests.corpus import CORPUS

HUDI = CORPUS / "hudi"
_OWN = {
    b"hfile.LASTKEY",
    b"hfile.AVG_KEY_LEN",
    b"hfile.AVG_VALUE_LEN",
    b"MAX_MEMSTORE_TS_KEY",
    b"KEY_VALUE_VERSION",
    b"hfile.CREATE_TIME_TS",
}


def _corpus_hfiles() -> list[tuple[str, bytes]]:
    found = [(str(p), p.read_bytes()) for p in sorted(HUDI.glob("*/.hoodie/metadata/*/*.hfile"))]
    for path in sorted(HUDI.glob("*/.hoodie/metadata/*/.*.log.*")):
        for block in read_log_blocks(path.read_bytes(), str(path)):
            if block.block_type == BlockType.HFILE_DATA:
                found.append((f"{path}@{block.offset}", bytes(block.content)))
    return found


def _meta_blocks(data: bytes, trailer: hfile.HFileTrailer) -> list[tuple[str, bytes]]:
    """The meta blocks named by the meta index (the second root index block)."""
    _, _, after_data_index = hfile._read_block(
        data, trailer.load_on_open_offset, "t", trailer.codec
    )
    _, index, _ = hfile._read_block(data, after_data_index, "t", trailer.codec)
    out, pos = [], 0
    while pos < len(index):
        offset = struct.unpack_from(">q", index, pos)[0]
        length = index[pos + 12]
        name = index[pos + 13 : pos + 13 + length].decode()
        pos += 13 + length
        out.append((name, hfile._read_block(data, offset, "t", trailer.codec)[1]))
    return out


def test_hudi_written_hfiles_reencode_byte_for_byte() -> None:
    """Every HFile Hudi 1.1's own writer wrote (metadata base files and log HFile blocks of
    the corpus) is rebuilt identically from its cells, file info and meta blocks. Files of
    HBase's writer (Hudi 1.0, minor version 3) are another layout and are counted apart."""
    same = hbase = 0
    for name, data in _corpus_hfiles():
        trailer = hfile.read_trailer(data, name)
        if trailer.minor_version != 0:
            hbase += 1
            continue
        info = hfile.read_file_info(data, name)
        user = {k.decode(): v for k, v in info.items() if k not in _OWN}
        created = struct.unpack(">q", info[b"hfile.CREATE_TIME_TS"])[0]
        mine = write_hfile(
            hfile.read_hfile(data, name),
            user,
            meta_blocks=_meta_blocks(data, trailer),
            codec=trailer.codec,
            create_time_ms=created,
        )
        assert mine == data, name
        same += 1
    assert (same, hbase) == (171, 59)


@pytest.mark.parametrize("codec", ["GZ", "NONE"])
def test_round_trip_many_blocks(codec: str) -> None:
    cells = [(f"key-{i:05d}".encode(), bytes([i % 251]) * (i % 300)) for i in range(3000)]
    data = write_hfile(cells, {"schema": b"{}"}, codec=codec, block_size=4096)
    trailer = hfile.read_trailer(data, "t")
    assert trailer.codec == codec and trailer.entry_count == 3000
    assert hfile.read_hfile(data, "t") == cells
    assert hfile.read_file_info(data, "t")[b"schema"] == b"{}"
    assert hfile.read_file_info(data, "t")[b"hfile.LASTKEY"] == b"\x00\x09key-02999"
    start = len(data) - hfile.TRAILER_SIZE
    length, pos = hfile._varint(data, start + 8)
    fields = dict(hfile._proto_fields(data[pos : pos + length], "t"))
    assert fields[5] > 100  # the data index count: split into many data blocks


def test_empty_file_reads_back() -> None:
    data = write_hfile([], {"schema": b"{}"})
    assert hfile.read_trailer(data, "t").first_data_block_offset == -1
    assert hfile.read_hfile(data, "t") == []


def test_rows_must_increase() -> None:
    with pytest.raises(InvalidArgumentError, match="strictly increasing"):
        write_hfile([(b"b", b""), (b"a", b"")], {})
    with pytest.raises(InvalidArgumentError, match="codec"):
        write_hfile([], {}, codec="SNAPPY")
