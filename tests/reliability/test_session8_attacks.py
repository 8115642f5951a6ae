"""Attacks on the Parquet footer reader that landed in session 8 (``lakecore.model.footers``
and its Thrift walk ``lakecore.model.footer_thrift``).

A footer read for statistics must give either a typed ``LakecoreError`` (``CorruptTableError``
through ``Footers.get``; ``pa.ArrowInvalid`` from the low-level ``footer_bytes`` /
``parse_footer``, which ``Footers`` maps) or exactly pyarrow's own parse of the file apart
from the large key-value values: never a hang, a raw ``RecursionError``/``IndexError``/
``struct.error``/``MemoryError``, nor different statistics (wrong statistics prune rows).

Hand-made footers are a Thrift compact ``FileMetaData`` body; the walk only runs on footers
over ``KEEP_VALUE_BYTES`` (shorter ones go to pyarrow whole), so the attacks pad past it.
Passing tests are attacks that held; ``xfail(strict=True)`` tests pin bugs found.
"""

from __future__ import annotations

import contextlib
import faulthandler
import io
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakecore.errors import CorruptTableError, LakecoreError
from lakecore.model.footer_thrift import KEEP_VALUE_BYTES
from lakecore.model.footers import Footers, footer_bytes, parse_footer
from lakecore.storage import open_storage

PAD = b"\x00" * (KEEP_VALUE_BYTES + 1000)  # makes a footer long enough to be walked
HUGE_VARINT = b"\xff" * 8 + b"\x7f"  # 2**63 - 1: a container count no footer can hold


class Hang(Exception):
    """Raised by ``deadline`` when a call takes longer than it may."""


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Turn a call that runs longer than ``seconds`` into ``Hang`` (the walk is pure Python,
    so SIGALRM's handler interrupts it)."""

    def fire(*_: Any) -> None:
        raise Hang(f"still running after {seconds} s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def parquet_with_footer(body: bytes) -> bytes:
    """A file ending in footer ``body``, its length and ``PAR1``."""
    return b"PAR1" + b"\x00" * 16 + body + len(body).to_bytes(4, "little") + b"PAR1"


def footer_outcome(data: bytes, seconds: float = 3.0) -> pq.FileMetaData | None:
    """The footer of file ``data`` as lakecore reads it for statistics; None when refused
    with the low-level functions' documented error (``pa.ArrowInvalid``)."""
    with deadline(seconds):
        try:
            return parse_footer(footer_bytes(io.BytesIO(data)))
        except pa.ArrowInvalid:
            return None


def get_typed(tmp_path: Path, data: bytes, name: str = "f.parquet") -> Exception | None:
    """What ``Footers.get`` raises on a file of bytes ``data`` (None when it reads it)."""
    (tmp_path / name).write_bytes(data)
    with deadline(5.0):
        try:
            Footers(open_storage(str(tmp_path))).get(name)
        except LakecoreError as exc:
            return exc
    return None


def stats_of(meta: pq.FileMetaData) -> Any:
    """Everything pruning and schema checks use from a footer (not the key-value metadata).

    Read through accessors that survive damaged footers: pyarrow aborts the process on
    ``statistics`` of a chunk whose type differs from its schema column's (see
    ``test_a_mistyped_column_chunk_is_a_typed_error_not_an_abort``) and on ``compression``
    of an unknown codec, so neither is asked then.
    """
    groups = []
    for g in range(meta.num_row_groups):
        rg = meta.row_group(g)
        chunks = []
        for c in range(rg.num_columns):
            chunk = rg.column(c)
            typed = chunk.physical_type == meta.schema.column(c).physical_type
            stats = chunk.statistics if typed else None
            chunks.append(
                (
                    chunk.path_in_schema,
                    chunk.physical_type,
                    chunk.num_values,
                    chunk.total_compressed_size,
                    chunk.data_page_offset,
                    chunk.dictionary_page_offset,
                    None if stats is None else (stats.has_min_max, stats.null_count),
                    None if stats is None or not stats.has_min_max else (stats.min, stats.max),
                )
            )
        groups.append((rg.num_rows, rg.total_byte_size, chunks))
    return (
        str(meta.schema).split("\n", 1)[1],
        meta.schema.to_arrow_schema(),
        meta.num_rows,
        meta.created_by,
        groups,
    )


def sample_file(big_value: bool, row_group_size: int = 4) -> bytes:
    """A Parquet file of several row groups and types with statistics; with a large
    key-value value (as Hudi's bloom filter) when ``big_value``, so its footer is walked."""
    n = 10
    table = pa.table(
        {
            "i": pa.array([None if k == 3 else k - 5 for k in range(n)], pa.int64()),
            "f": pa.array(
                [float("nan") if k == 2 else -0.0 if k == 4 else k / 3 for k in range(n)]
            ),
            "s": pa.array(["", "a", "\U0001f600", None, "\uffff"] * 2),
            "d": pa.array([k * 101 for k in range(n)], pa.decimal128(9, 2)),
            "t": pa.array(range(n), pa.timestamp("us", tz="UTC")),
        }
    )
    sink = pa.BufferOutputStream()
    with pq.ParquetWriter(sink, table.schema) as writer:
        writer.write_table(table, row_group_size=row_group_size)
        if big_value:
            writer.add_key_value_metadata({"bloom": "b" * (KEEP_VALUE_BYTES * 3), "small": "x"})
    return bytes(sink.getvalue().to_pybytes())


def _footer_span(data: bytes) -> tuple[int, int]:
    length = int.from_bytes(data[-8:-4], "little")
    return len(data) - 8 - length, length


# --- plain refusals: typed errors through Footers.get ------------------------------------


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("empty", b""),
        ("magic-only", b"PAR1"),
        ("eleven-bytes", b"PAR1PAR1PAR"),
        ("text", b"hello, this is not a Parquet file at all\n" * 10),
        ("length-past-start", b"PAR1" + b"\x00" * 20 + (10**6).to_bytes(4, "little") + b"PAR1"),
        ("length-max", b"PAR1" + b"\x00" * 20 + b"\xff\xff\xff\xff" + b"PAR1"),
        ("length-zero", b"PAR1" + b"\x00" * 20 + (0).to_bytes(4, "little") + b"PAR1"),
        ("encrypted-magic", b"PAR1" + b"\x00" * 20 + (4).to_bytes(4, "little") + b"PARE"),
        ("garbage-footer", parquet_with_footer(b"\xff" * 200)),
        ("garbage-long-footer", parquet_with_footer(b"\xff" * (KEEP_VALUE_BYTES * 2))),
        ("stop-only", parquet_with_footer(b"\x00" + PAD)),
    ],
)
def test_unreadable_files_are_corrupt_table_errors(tmp_path: Path, name: str, data: bytes) -> None:
    exc = get_typed(tmp_path, data)
    assert isinstance(exc, CorruptTableError), (name, exc)
    assert "f.parquet" in str(exc)


def test_truncated_real_footers_are_refused_or_read_exactly(tmp_path: Path) -> None:
    """A real walked footer cut at every 97th byte (and its length fixed up, so the walk sees
    a footer that ends early): refused, or read exactly as pyarrow reads that file."""
    data = sample_file(big_value=True)
    start, length = _footer_span(data)
    body = data[start : start + length]
    cases = 0
    for cut in range(1, length, 97):
        cut_file = data[:start] + body[:cut] + cut.to_bytes(4, "little") + b"PAR1"
        _same_as_pyarrow_or_refused(cut_file)
        cases += 1
    assert cases == len(range(1, length, 97)) > 50


def test_truncated_file_with_footer_length_past_the_file(tmp_path: Path) -> None:
    """The file's head is lost (the footer length now points before its start)."""
    data = sample_file(big_value=True)
    _, length = _footer_span(data)
    for keep in (length + 11, length + 8, 13, 12):
        exc = get_typed(tmp_path, data[-keep:])
        assert isinstance(exc, CorruptTableError), keep


def _same_as_pyarrow_or_refused(data: bytes) -> None:
    """lakecore's footer of ``data`` is pyarrow's (in everything but key-value values) or
    lakecore refuses it; when pyarrow reads the file, lakecore must read it too."""
    try:
        reference: pq.FileMetaData | None = pq.read_metadata(pa.BufferReader(data))
    except Exception:  # pyarrow refuses it (its own error types do not matter here)
        reference = None
    got = footer_outcome(data)
    if reference is not None:
        assert got is not None, "pyarrow reads this footer, lakecore refused it"
        try:
            want = stats_of(reference)
        except KNOWN as exc:  # pyarrow's own conversion of a damaged statistic
            with pytest.raises(type(exc)):
                stats_of(got)
            return
        assert stats_of(got) == want


@pytest.mark.parametrize("big_value", [True, False])
def test_real_footers_read_as_pyarrow(big_value: bool) -> None:
    for rows in (1, 3, 10):
        data = sample_file(big_value, row_group_size=rows)
        got = footer_outcome(data)
        assert got is not None
        assert stats_of(got) == stats_of(pq.read_metadata(pa.BufferReader(data)))
        if big_value:
            assert got.metadata is not None and b"bloom" not in got.metadata
            assert got.metadata[b"small"] == b"x"


# --- hostile Thrift: hangs and recursion --------------------------------------------------
# Each body is a FileMetaData whose first bytes the walk must get past; PAD makes the footer
# long enough to be walked (pyarrow refuses every one of them, so the answer must be a
# refusal, quickly).

KEY_VALUE_LIST = bytes([0x59, 0x1C, 0x18, 1]) + b"k"  # field 5: list of 1 KeyValue, key "k"
HOSTILE = {
    # field 1 a map of 2**63-1 (double, double) entries: the walk adds 16 per entry unread
    "head-map-of-doubles": bytes([0x1B]) + HUGE_VARINT + bytes([0x77]),
    # a KeyValue field 3: a list of 2**63-1 bools, each skipped as one byte unread
    "key-value-list-of-bools": KEY_VALUE_LIST + bytes([0x39, 0xF1]) + HUGE_VARINT,
    # a KeyValue field 3: a list of 2**63-1 doubles
    "key-value-list-of-doubles": KEY_VALUE_LIST + bytes([0x39, 0xF7]) + HUGE_VARINT,
    # a KeyValue field 3: a map of 2**63-1 (double, double) entries
    "key-value-map-of-doubles": KEY_VALUE_LIST + bytes([0x3B]) + HUGE_VARINT + bytes([0x77]),
    # field 1 a struct nested 6,000 deep (each level's first field is a struct)
    "head-nested-structs": bytes([0x1C]) * 6000,
    # a KeyValue field 3 nested 6,000 structs deep
    "key-value-nested-structs": KEY_VALUE_LIST + bytes([0x3C]) * 6000,
    # a list of lists of lists ... (each a list of one list)
    "head-nested-lists": bytes([0x19]) + bytes([0x19]) * 6000,
}


@pytest.mark.parametrize(
    "case",
    [
        "head-map-of-doubles",
        "key-value-list-of-bools",
        "key-value-list-of-doubles",
        "key-value-map-of-doubles",
    ],
)
def test_huge_container_counts_are_refused_quickly(tmp_path: Path, case: str) -> None:
    data = parquet_with_footer(HOSTILE[case] + PAD)
    assert footer_outcome(data, seconds=0.5) is None


@pytest.mark.parametrize(
    "case", ["head-nested-structs", "key-value-nested-structs", "head-nested-lists"]
)
def test_deeply_nested_structs_are_corrupt_table_errors(tmp_path: Path, case: str) -> None:
    data = parquet_with_footer(HOSTILE[case] + PAD)
    assert isinstance(get_typed(tmp_path, data), CorruptTableError)


def test_moderate_counts_with_real_bytes_are_refused_quickly(tmp_path: Path) -> None:
    """Held: counts a little past the footer's end are caught by the end checks."""
    for body in (
        bytes([0x19, 0xFC]) + b"\xff\xff\x03",  # list of 65,535 structs
        bytes([0x19, 0xF8]) + b"\xff\xff\x03",  # list of 65,535 binaries
        bytes([0x1B]) + b"\xff\xff\x03" + bytes([0x88]),  # map of binaries
    ):
        data = parquet_with_footer(body + PAD)
        assert footer_outcome(data, seconds=2.0) is None


# --- fuzzing ------------------------------------------------------------------------------

_BASES = {big: sample_file(big) for big in (True, False)}

mutation = st.one_of(
    st.tuples(st.just("set"), st.integers(0, 10**6), st.integers(0, 255)),
    st.tuples(st.just("flip"), st.integers(0, 10**6), st.integers(0, 7)),
    st.tuples(st.just("insert"), st.integers(0, 10**6), st.binary(min_size=1, max_size=12)),
    st.tuples(st.just("delete"), st.integers(0, 10**6), st.integers(1, 40)),
    st.tuples(
        st.just("varint"),
        st.integers(0, 10**6),
        st.sampled_from([b"\xff" * 10, b"\x80\x80\x80\x80\x10", HUGE_VARINT]),
    ),
)


def _mutate(data: bytes, mutations: list[tuple[str, int, Any]], fix_length: bool) -> bytes:
    start, length = _footer_span(data)
    body = bytearray(data[start : start + length])
    for kind, at, arg in mutations:
        at %= max(1, len(body))
        if kind == "set":
            body[at] = arg
        elif kind == "flip":
            body[at] ^= 1 << arg
        elif kind in ("insert", "varint"):
            body[at:at] = arg
        elif kind == "delete":
            del body[at : at + arg]
    new_length = len(body) if fix_length else length
    return data[:start] + bytes(body) + new_length.to_bytes(4, "little") + b"PAR1"


def _fuzz_case(big: bool, mutations: list[tuple[str, int, Any]], fix_length: bool) -> None:
    data = _mutate(_BASES[big], mutations, fix_length)
    try:
        _same_as_pyarrow_or_refused(data)
    except Hang:
        pytest.fail("the footer read hung")


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.booleans(), st.lists(mutation, min_size=1, max_size=4), st.booleans())
def test_fuzzed_footers_are_refused_or_read_as_pyarrow(
    big: bool, mutations: list[tuple[str, int, Any]], fix_length: bool
) -> None:
    _fuzz_case(big, mutations, fix_length)


def test_a_footer_pyarrow_calls_not_implemented_is_refused() -> None:
    """Found by the slow fuzz: one byte set in a small footer makes pyarrow raise
    ArrowNotImplementedError ("Integers with more than 64 bits"), which must be a refusal."""
    _fuzz_case(False, [("set", 4051, 47)], False)


def _survives(data: bytes) -> bool:
    """Whether pyarrow's own statistics accessors survive the footer of ``data`` (some damage
    makes them abort the process: ``std::terminate`` on a ParquetException), tried in a
    forked child (given 20 s)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        faulthandler.disable()  # an abort is an answer here, not news for the log
        os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
        signal.alarm(20)
        try:
            stats_of(pq.read_metadata(pa.BufferReader(data)))
        except BaseException:
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    return not os.WIFSIGNALED(status)


ABORTING: list[bytes] = []


@pytest.mark.slow
@settings(max_examples=3000, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(st.booleans(), st.lists(mutation, min_size=1, max_size=6), st.booleans())
def test_fuzzed_footers_slow(
    big: bool, mutations: list[tuple[str, int, Any]], fix_length: bool
) -> None:
    """As the default fuzz, random; a footer whose statistics pyarrow itself cannot take
    without aborting is only read (lakecore must still refuse it or parse it, quickly)."""
    data = _mutate(_BASES[big], mutations, fix_length)
    if _survives(data):
        _same_as_pyarrow_or_refused(data)  # stats_of's own KNOWN errors are compared there
        return
    ABORTING.append(data)
    try:
        footer_outcome(data)
    except Hang:
        pytest.fail("the footer read hung")


KNOWN = (UnicodeDecodeError, OverflowError)
"""What ``stats_of`` itself raises on some damaged footers (pyarrow's conversion of a
statistic to a Python value: a string that is not UTF-8, a date after year 9999), lakecore's
and pyarrow's parse alike; a hang or any other error of the footer read fails the fuzz."""


# --- footers pyarrow parses but cannot take statistics from ------------------------------


def _hudi_table_with_mistyped_chunk(root: Path) -> None:
    """A Hudi copy-on-write table (no metadata table: its file index takes statistics from
    the base files' footers) whose one base file's footer says its double column's chunk is
    of physical type 63 (no such type): pyarrow parses the footer, and its statistics accessor
    throws a C++ exception it does not catch (std::terminate)."""
    import lakecore

    schema = pa.schema(
        [pa.field("id", pa.int64(), nullable=False), ("ts", pa.int64()), ("f", pa.float64())]
    )
    properties = {
        "record_key": "id",
        "precombine_field": "ts",
        "table_type": "COPY_ON_WRITE",
        "table_version": "8",
    }
    table = lakecore.create(str(root), schema, "hudi", [], properties)
    table.append(pa.table({"id": [1, 2], "ts": [1, 1], "f": [0.5, 2.5]}, schema=schema))
    (base,) = [p for p in root.rglob("*.parquet") if ".hoodie" not in p.relative_to(root).parts]
    raw = base.read_bytes()
    start, _ = _footer_span(raw)
    # ColumnMetaData field 1 (type, i32): header 0x15 then zigzag(DOUBLE = 5) = 0x0a; the
    # last such pair of the footer is the last row group's double chunk (the schema's
    # element for the column comes first).
    at = raw.rindex(b"\x15\x0a", start)
    base.write_bytes(raw[: at + 1] + b"\x7e" + raw[at + 2 :])
    pq.read_metadata(base)  # pyarrow parses it


def test_a_mistyped_column_chunk_is_a_typed_error_not_an_abort(tmp_path: Path) -> None:
    import subprocess
    import sys

    root = tmp_path / "t"
    _hudi_table_with_mistyped_chunk(root)
    code = (
        "import lakecore\n"
        "try:\n"
        f"    lakecore.open({str(root)!r}).scan('f > 1').to_arrow()\n"
        "    print('read')\n"
        "except lakecore.errors.LakecoreError as exc:\n"
        "    print('typed', type(exc).__name__)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stdout.startswith("typed CorruptTableError")


# --- footers larger than one read window --------------------------------------------------


class _CountingReader(io.RawIOBase):
    """A file in memory that counts the bytes read from it."""

    def __init__(self, data: bytes) -> None:
        self._f = io.BytesIO(data)
        self.read_bytes = 0

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._f.seek(offset, whence)

    def read(self, n: int | None = -1) -> bytes:
        data = self._f.read(n)
        self.read_bytes += len(data)
        return data


def _many_row_groups(groups: int) -> bytes:
    """A file of ``groups`` one-row row groups (a footer head of ~190 bytes per group) and a
    500 KB key-value value after them, as Hudi's bloom filter."""
    table = pa.table({"a": pa.array(range(groups)), "s": [f"v{i}" for i in range(groups)]})
    sink = pa.BufferOutputStream()
    with pq.ParquetWriter(sink, table.schema) as writer:
        writer.write_table(table, row_group_size=1)
        writer.add_key_value_metadata({"bloom": "b" * 500_000, "small": "x"})
    return bytes(sink.getvalue().to_pybytes())


def test_a_footer_with_a_head_past_one_window_reads_as_pyarrow() -> None:
    data = _many_row_groups(3000)
    got = footer_outcome(data)
    assert got is not None
    assert stats_of(got) == stats_of(pq.read_metadata(pa.BufferReader(data)))
    assert got.metadata is not None and b"bloom" not in got.metadata


def test_a_footer_with_a_head_past_one_window_is_read_at_most_once() -> None:
    data = _many_row_groups(3000)
    _, length = _footer_span(data)
    f = _CountingReader(data)
    assert parse_footer(footer_bytes(f)).num_row_groups == 3000  # type: ignore[arg-type]
    assert f.read_bytes <= length + 8


@pytest.mark.parametrize("big_value", [True, False])
def test_a_column_name_that_is_not_utf8_is_a_corrupt_table_error(
    tmp_path: Path, big_value: bool
) -> None:
    table = pa.table({"zq": [1, 2]})
    sink = pa.BufferOutputStream()
    with pq.ParquetWriter(sink, table.schema, store_schema=False) as writer:
        writer.write_table(table)
        if big_value:
            writer.add_key_value_metadata({"bloom": "b" * (KEEP_VALUE_BYTES * 3)})
    data = bytes(sink.getvalue().to_pybytes())
    start, _ = _footer_span(data)
    at = data.index(b"zq", start)
    exc = get_typed(tmp_path, data[:at] + b"\x80" + data[at + 1 :])
    assert isinstance(exc, CorruptTableError)
