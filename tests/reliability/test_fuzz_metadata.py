"""Seeded fuzzing of table metadata: every malformed log or timeline gives a typed error.

Small valid tables (a Delta table with commits, deletion vectors and a checkpoint; Hudi
copy-on-write and merge-on-read tables with log blocks; a few corpus tables written by Spark
and delta-rs) are copied (data files hard-linked) and ONE metadata file of each copy is
mutated: truncated, bit-flipped, bytes inserted or deleted, a JSON / Avro / Parquet field
deleted, nulled, retyped or swapped with another, a line duplicated or dropped, the file
removed. Each copy is then opened and read (version, snapshot and files, rows, history).

Every failure must be a ``LakecoreError``; anything else fails the run with the seed and the
mutation that reproduce it (``replay(table, seed)``), as does a read that takes longer than
``CASE_TIMEOUT_S``. A case is deterministic in its seed: ``random.Random(seed)``.
"""

from __future__ import annotations

import io
import json
import os
import random
import shutil
import signal
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakecore
from lakecore.errors import LakecoreError
from tests.corpus import CORPUS

CASE_TIMEOUT_S = 20
CURRENT_CASE = "fuzz-current-case.txt"
"""Written to the test's tmp dir before each case runs (a native crash leaves it behind)."""
DEFAULT_CASES = 360
SLOW_CASES = 5000
BASE_SEED = int(os.environ.get("LAKECORE_FUZZ_SEED", "20261125"))
"""Case ``i`` runs with seed ``BASE_SEED * 1_000_003 + i``; set ``LAKECORE_FUZZ_SEED`` to
explore other cases (a failure message names the seed that reproduces it)."""

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("name", pa.string()),
        pa.field("ts", pa.int64()),
        pa.field("city", pa.string()),
    ]
)


def _rows(ids: range | list[int], name: str, ts: int = 1) -> pa.Table:
    ids = list(ids)
    return pa.table(
        {
            "id": ids,
            "name": [f"{name}{i}" for i in ids],
            "ts": [ts] * len(ids),
            "city": [("x", "y", "z")[i % 3] for i in ids],
        },
        schema=SCHEMA,
    )


# ----------------------------------------------------------------------------- base tables


def _delta(root: Path) -> None:
    props = {"delta.enableDeletionVectors": "true", "delta.enableChangeDataFeed": "true"}
    table = lakecore.create(str(root), SCHEMA, "delta", ["city"], props)
    table.append(_rows(range(0, 6), "a"))
    table.append(_rows(range(6, 12), "b"))
    table.delete("id = 3")
    table.checkpoint()
    table.update({"name": "'u'"}, "id = 7")
    table.append(_rows(range(12, 15), "c"))


def _delta_column_mapping(root: Path) -> None:
    props = {"delta.columnMapping.mode": "name", "delta.checkpointInterval": "2"}
    table = lakecore.create(str(root), SCHEMA, "delta", ["city"], props)
    table.append(_rows(range(0, 4), "a"))
    with table.update_schema() as update:
        update.rename_column("name", "label")
    table.append(
        _rows(range(4, 8), "b").rename_columns(["id", "label", "ts", "city"]),
    )
    table.delete("id = 5")


def _hudi(root: Path, table_type: str, version: str) -> None:
    properties = {
        "record_key": "id",
        "precombine_field": "ts",
        "table_type": table_type,
        "table_version": version,
    }
    table = lakecore.create(str(root), SCHEMA, "hudi", ["city"], properties)
    table.append(_rows(range(0, 6), "a"))
    table.upsert(_rows([1, 2, 7], "b", ts=2))
    table.delete("id = 4")
    table.upsert(_rows([2, 8], "c", ts=3))


def _hudi_overwritten(root: Path) -> None:
    _hudi(root, "COPY_ON_WRITE", "8")
    lakecore.open(str(root)).overwrite(_rows([21, 24], "o", ts=5), where="city = 'x'")


BUILT: dict[str, Callable[[Path], None]] = {
    "delta": _delta,
    "delta_column_mapping": _delta_column_mapping,
    "hudi_cow_v8_replaced": _hudi_overwritten,
    "hudi_cow_v6": lambda root: _hudi(root, "COPY_ON_WRITE", "6"),
    "hudi_mor_v8": lambda root: _hudi(root, "MERGE_ON_READ", "8"),
    "hudi_mor_v6": lambda root: _hudi(root, "MERGE_ON_READ", "6"),
}
FROM_CORPUS = {
    "deltars_dv_small": "delta/deltars__table-with-dv-small",
    "deltars_checkpoint_v2": "delta/deltars__checkpoint-v2-table",
    "hudi_java_mor_v6": "hudi/mor_avro_v6_trips_8i1u",
}
TABLES = sorted([*BUILT, *FROM_CORPUS])


def _is_metadata(rel: str) -> bool:
    """Whether a table file is metadata the fuzzer mutates (logs, timelines, log blocks)."""
    name = rel.rsplit("/", 1)[-1]
    if rel.startswith("_delta_log/"):
        return True
    if rel.startswith(".hoodie/"):
        # The metadata table (a table of its own) and heartbeats are not read by readers.
        return not rel.startswith((".hoodie/metadata/", ".hoodie/.heartbeat/", ".hoodie/.aux"))
    return ".log." in name  # Hudi log files: blocks with headers and Avro records


@dataclass(frozen=True)
class BaseTable:
    """A valid table to mutate: its directory and its metadata files (table-relative)."""

    name: str
    root: Path
    metadata: tuple[str, ...]
    files: tuple[str, ...]


@pytest.fixture(scope="module")
def base_tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, BaseTable]:
    out = {}
    base = tmp_path_factory.mktemp("fuzz-base")
    for name in TABLES:
        root = base / name
        if name in BUILT:
            BUILT[name](root)
        else:
            shutil.copytree(CORPUS / FROM_CORPUS[name], root)
        files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
        meta = tuple(f for f in files if _is_metadata(f))
        assert meta, name
        lakecore.open(str(root)).to_arrow()  # the unmutated table reads
        out[name] = BaseTable(name, root, meta, tuple(files))
    return out


# ----------------------------------------------------------------------------- mutations


class Skip(Exception):
    """The mutation does not apply to this file (e.g. a JSON mutation of binary bytes)."""


def _truncate(rng: random.Random, data: bytes) -> bytes:
    return data[: rng.randrange(len(data))] if data else b""


def _bit_flips(rng: random.Random, data: bytes) -> bytes:
    if not data:
        raise Skip
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        i = rng.randrange(len(out))
        out[i] ^= 1 << rng.randrange(8)
    return bytes(out)


def _insert_bytes(rng: random.Random, data: bytes) -> bytes:
    i = rng.randint(0, len(data))
    junk = rng.choice(
        [
            bytes(rng.randrange(256) for _ in range(rng.randint(1, 16))),
            b"\x00" * rng.randint(1, 8),
            b"\xff\xff\xff\x7f",
            b'"}]{',
            b"\n",
        ]
    )
    return data[:i] + junk + data[i:]


def _delete_bytes(rng: random.Random, data: bytes) -> bytes:
    if not data:
        raise Skip
    i = rng.randrange(len(data))
    return data[:i] + data[i + rng.randint(1, 32) :]


def _region_flips(rng: random.Random, data: bytes) -> bytes:
    """Flip characters inside an embedded JSON document (Avro schemas in log block headers
    and Avro containers), keeping the length so that the framing around it stays valid."""
    starts = [i for i in range(len(data)) if data.startswith(b'{"', i)][:50]
    if not starts:
        raise Skip
    start = rng.choice(starts)
    end = data.find(b"}", start)
    end = len(data) if end < 0 else min(len(data), end + 1 + rng.randint(0, 200))
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(start, end)
        out[i] = rng.choice(b'{}[]":,0123456789aZ \x00\xff')
    return bytes(out)


# Structured documents: (decode bytes -> document, encode document -> bytes).
def _json_lines(data: bytes) -> tuple[Any, Callable[[Any], bytes]]:
    lines = [json.loads(line) for line in data.decode().splitlines() if line.strip()]
    return lines, lambda doc: b"".join(json.dumps(x).encode() + b"\n" for x in doc)


def _json_doc(data: bytes) -> tuple[Any, Callable[[Any], bytes]]:
    return json.loads(data.decode()), lambda doc: json.dumps(doc).encode()


def _avro_doc(data: bytes) -> tuple[Any, Callable[[Any], bytes]]:
    # Readers take Avro or JSON instant metadata: the mutated record goes back as JSON, so
    # fields of any type reach the field parsers.
    records = list(fastavro.reader(io.BytesIO(data)))
    if len(records) != 1:
        raise Skip
    return records[0], lambda doc: json.dumps(doc, default=str).encode()


def _parquet_doc(data: bytes) -> tuple[Any, Callable[[Any], bytes]]:
    rows = pq.read_table(io.BytesIO(data)).to_pylist()

    def encode(doc: Any) -> bytes:
        out = io.BytesIO()
        try:
            pq.write_table(pa.Table.from_pylist(doc), out)
        except (pa.ArrowException, ValueError, TypeError, OverflowError, AttributeError) as exc:
            raise Skip from exc  # not representable as Parquet (e.g. a row that is no object)
        return out.getvalue()

    return rows, encode


def _properties_doc(data: bytes) -> tuple[Any, Callable[[Any], bytes]]:
    lines = data.decode("latin-1").splitlines()
    pairs = [line.split("=", 1) for line in lines if "=" in line and not line.startswith("#")]
    doc = {k: v for k, v in pairs}
    return doc, lambda d: "".join(f"{k}={v}\n" for k, v in d.items()).encode("latin-1")


def _document(rel: str, data: bytes) -> tuple[Any, Callable[[Any], bytes]]:
    try:
        if rel.endswith(".parquet"):
            return _parquet_doc(data)
        if rel.endswith("hoodie.properties"):
            return _properties_doc(data)
        if data.startswith(b"Obj\x01"):
            return _avro_doc(data)
        if rel.startswith("_delta_log/") and rel.endswith(".json"):
            return _json_lines(data)
        return _json_doc(data)
    except Skip:
        raise
    except Exception as exc:
        raise Skip from exc


def _containers(doc: Any, out: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """Every (container, key) pair of a nested document, depth first."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.append((doc, k))
            _containers(v, out)
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out.append((doc, i))
            _containers(v, out)
    return out


ODD_VALUES: list[Any] = [
    None,
    "",
    "x",
    "../../escape.parquet",
    -1,
    0,
    2**63,
    -(2**63) - 1,
    1.5e308,
    True,
    [],
    {},
    [1, "a"],
    {"a": None},
    "9" * 40,
    "{not json",
    "null",
]


def _structural(
    change: Callable[[random.Random, list[tuple[Any, Any]]], None],
) -> Callable[[random.Random, bytes, str], bytes]:
    def mutate(rng: random.Random, data: bytes, rel: str) -> bytes:
        doc, encode = _document(rel, data)
        slots = _containers(doc, [])
        if not slots:
            raise Skip
        change(rng, slots)
        return encode(doc)

    return mutate


def _delete_field(rng: random.Random, slots: list[tuple[Any, Any]]) -> None:
    container, key = rng.choice(slots)
    del container[key]


def _null_field(rng: random.Random, slots: list[tuple[Any, Any]]) -> None:
    container, key = rng.choice(slots)
    container[key] = None


def _retype_field(rng: random.Random, slots: list[tuple[Any, Any]]) -> None:
    container, key = rng.choice(slots)
    value = container[key]
    choices = [v for v in ODD_VALUES if type(v) is not type(value)]
    if isinstance(value, str) and value.lstrip("-").isdigit():
        choices.append(int(value))
    if isinstance(value, int | float) and not isinstance(value, bool):
        choices.append(str(value))
    container[key] = rng.choice(choices)


def _swap_fields(rng: random.Random, slots: list[tuple[Any, Any]]) -> None:
    (c1, k1), (c2, k2) = rng.choice(slots), rng.choice(slots)
    try:
        c1[k1], c2[k2] = c2[k2], c1[k1]
    except (KeyError, IndexError) as exc:  # one slot contained the other
        raise Skip from exc
    if _cyclic(c1) or _cyclic(c2):
        raise Skip


def _cyclic(doc: Any, seen: frozenset[int] = frozenset()) -> bool:
    if not isinstance(doc, dict | list):
        return False
    if id(doc) in seen:
        return True
    values = doc.values() if isinstance(doc, dict) else doc
    return any(_cyclic(v, seen | {id(doc)}) for v in values)


def _embedded_document(rng: random.Random, data: bytes, rel: str) -> bytes:
    """Mutate a JSON document kept as a string inside the metadata (Delta ``schemaString``
    and ``stats``, Hudi's writer ``schema`` in ``extraMetadata``, table properties)."""
    doc, encode = _document(rel, data)
    slots = [
        (c, k)
        for c, k in _containers(doc, [])
        if isinstance(c[k], str) and c[k][:1] in ("{", "[") and _parses(c[k])
    ]
    if not slots:
        raise Skip
    container, key = rng.choice(slots)
    inner = json.loads(container[key])
    inner_slots = _containers(inner, [])
    if not inner_slots:
        raise Skip
    rng.choice([_delete_field, _null_field, _retype_field, _swap_fields])(rng, inner_slots)
    container[key] = json.dumps(inner)
    return encode(doc)


def _parses(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _duplicate_line(rng: random.Random, data: bytes, rel: str) -> bytes:
    lines = data.splitlines(keepends=True)
    if not lines:
        raise Skip
    i = rng.randrange(len(lines))
    return b"".join([*lines[: i + 1], lines[i], *lines[i + 1 :]])


def _drop_line(rng: random.Random, data: bytes, rel: str) -> bytes:
    lines = data.splitlines(keepends=True)
    if len(lines) < 2:
        raise Skip
    i = rng.randrange(len(lines))
    return b"".join(lines[:i] + lines[i + 1 :])


REMOVE = object()

MUTATIONS: dict[str, Callable[[random.Random, bytes, str], bytes | object]] = {
    "truncate": lambda rng, data, rel: _truncate(rng, data),
    "bit_flips": lambda rng, data, rel: _bit_flips(rng, data),
    "insert_bytes": lambda rng, data, rel: _insert_bytes(rng, data),
    "delete_bytes": lambda rng, data, rel: _delete_bytes(rng, data),
    "embedded_json_flips": lambda rng, data, rel: _region_flips(rng, data),
    "field_delete": _structural(_delete_field),
    "field_null": _structural(_null_field),
    "field_retype": _structural(_retype_field),
    "field_swap": _structural(_swap_fields),
    "embedded_document": _embedded_document,
    "line_duplicate": _duplicate_line,
    "line_drop": _drop_line,
    "file_remove": lambda rng, data, rel: REMOVE,
}


# ----------------------------------------------------------------------------- one case


class Hang(BaseException):
    """Raised by the alarm when a case runs past its deadline (not an Exception, so that no
    ``except Exception`` in the code under test swallows it)."""


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raise ``Hang`` in the block after ``seconds`` (SIGALRM; tests run in the main thread)."""

    def alarm(signum: int, frame: FrameType | None) -> None:
        raise Hang(f"no answer within {seconds} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@dataclass
class Outcome:
    """What one case did: its mutation, the typed errors seen, an untyped failure if any."""

    table: str
    seed: int
    file: str = ""
    mutation: str = ""
    typed: list[str] = field(default_factory=list)
    failure: str | None = None


def _copy(base: BaseTable, target: Path, skip: str) -> None:
    """Hard-link every file of ``base`` into ``target`` except ``skip`` (written by the case);
    readers never write, so the links are safe to share."""
    for rel in base.files:
        if rel == skip:
            continue
        dest = target / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.link(base.root / rel, dest)


def _mutate(base: BaseTable, seed: int, target: Path) -> tuple[str, str]:
    """Make ``target`` a copy of ``base`` with one metadata file mutated; returns (file,
    mutation). Deterministic in ``seed``."""
    rng = random.Random(seed)
    for _ in range(50):
        rel = rng.choice(base.metadata)
        kind = rng.choice(sorted(MUTATIONS))
        data = (base.root / rel).read_bytes()
        try:
            mutated = MUTATIONS[kind](rng, data, rel)
        except Skip:
            continue
        if mutated is not REMOVE and mutated == data:
            continue
        _copy(base, target, rel)
        if mutated is not REMOVE:
            assert isinstance(mutated, bytes)
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            (target / rel).write_bytes(mutated)
        return rel, kind
    raise AssertionError(f"seed {seed}: no mutation applied to {base.name}")


READS: dict[str, Callable[[Any], object]] = {
    "version": lambda t: t.version,
    "files": lambda t: t.snapshot().files(),
    "to_arrow": lambda t: t.to_arrow(),
    "history": lambda t: t.history(),
}


def run_case(base: BaseTable, seed: int, workdir: Path) -> Outcome:
    """Mutate a copy of ``base`` with ``seed``, then open and read it."""
    target = workdir / f"{base.name}-{seed}"
    outcome = Outcome(base.name, seed)
    try:
        outcome.file, outcome.mutation = _mutate(base, seed, target)
        # A crash in native code (pyarrow, fastavro) ends the process: this file then names
        # the case that did it.
        (workdir / CURRENT_CASE).write_text(f"table={base.name} seed={seed} {outcome}\n")
        with deadline(CASE_TIMEOUT_S):
            try:
                table = lakecore.open(str(target))
            except LakecoreError as exc:
                outcome.typed.append(type(exc).__name__)
                return outcome
            for read in READS.values():
                try:
                    read(table)
                except LakecoreError as exc:
                    outcome.typed.append(type(exc).__name__)
    except Hang as exc:
        outcome.failure = f"hang: {exc}"
    except Exception as exc:
        where = _where(exc)
        outcome.failure = f"{type(exc).__name__} at {where}: {str(exc)[:200]}"
    finally:
        shutil.rmtree(target, ignore_errors=True)
    return outcome


def _where(exc: BaseException) -> str:
    """The innermost lakecore frame of ``exc`` (where a typed error was missing)."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "/lakecore" in f.filename and "/tests/" not in f.filename]
    frame = (ours or frames)[-1]
    parts = Path(frame.filename).parts
    return f"{'/'.join(parts[-2:])}:{frame.lineno}"


def replay(table: str, seed: int, workdir: Path, base_tables: dict[str, BaseTable]) -> Outcome:
    """Re-run one case (for debugging a reported failure)."""
    return run_case(base_tables[table], seed, workdir)


def _run(base_tables: dict[str, BaseTable], cases: int, workdir: Path) -> list[Outcome]:
    outcomes = []
    for i in range(cases):
        base = base_tables[TABLES[i % len(TABLES)]]
        outcomes.append(run_case(base, BASE_SEED * 1_000_003 + i, workdir))
    return outcomes


def _report(outcomes: list[Outcome], elapsed: float) -> str:
    mutations = Counter(o.mutation for o in outcomes)
    typed = Counter(name for o in outcomes for name in o.typed)
    clean = sum(1 for o in outcomes if not o.typed and o.failure is None)
    return (
        f"{len(outcomes)} cases in {elapsed:.1f} s; "
        f"tables {dict(Counter(o.table for o in outcomes))}; "
        f"mutations {dict(sorted(mutations.items()))}; typed errors {dict(typed.most_common())}; "
        f"read without error: {clean}"
    )


def _check(outcomes: list[Outcome], cases: int) -> None:
    failures = [
        f"table={o.table} seed={o.seed} file={o.file} mutation={o.mutation}: {o.failure}"
        for o in outcomes
        if o.failure is not None
    ]
    assert not failures, f"{len(failures)} untyped failures or hangs:\n" + "\n".join(failures)
    assert len(outcomes) == cases


def test_fuzzed_metadata_gives_only_typed_errors(
    base_tables: dict[str, BaseTable], tmp_path: Path
) -> None:
    started = time.monotonic()
    outcomes = _run(base_tables, DEFAULT_CASES, tmp_path)
    print(_report(outcomes, time.monotonic() - started))
    _check(outcomes, DEFAULT_CASES)
    assert len({o.mutation for o in outcomes}) == len(MUTATIONS)  # every kind was exercised


@pytest.mark.slow
def test_fuzzed_metadata_gives_only_typed_errors_long_run(
    base_tables: dict[str, BaseTable], tmp_path: Path
) -> None:
    started = time.monotonic()
    outcomes = _run(base_tables, SLOW_CASES, tmp_path)
    print(_report(outcomes, time.monotonic() - started))
    _check(outcomes, SLOW_CASES)
