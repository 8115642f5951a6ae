"""Session 12 attack review of the public surface shared by every format.

A careless or hostile user's calls against ``lakecore.open``/``create``, ``Table``,
``Snapshot``, the expression layer (SQL and ``pyarrow.compute`` predicates, trees), the
Arrow/pandas outputs and the CLI, on Delta, Hudi and Lance alike. Predicate answers are checked
against each format's reference reader (deltalake, hudi-rs, pylance) filtered by
``pyarrow.compute``; a failed call must raise a typed ``LakecoreError`` and leave the table as
it was (same version, same rows). Cases that showed a bug name the commit that fixed it; bugs
in a format plugin stay strict xfails (the plugin's owner fixes them).
"""

from __future__ import annotations

import datetime as dt
import decimal
import gc
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from typer.testing import CliRunner

import lakecore
from lakecore.cli import app
from lakecore.errors import (
    ArgumentTypeError,
    InvalidArgumentError,
    LakecoreError,
    MergeConflictError,
    PredicateError,
    SchemaError,
    VersionNotFoundError,
)
from lakecore.expr import tree as ex
from lakecore.table import Table
from tests.hudi.write.helpers import hudi_rs_table

FORMATS = ("delta", "hudi", "lance")
PROPERTIES: dict[str, dict[str, str]] = {"delta": {}, "hudi": {"record_key": "id"}, "lance": {}}
UTC = dt.timezone.utc
SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("name", pa.string()),
        ("x", pa.float64()),
        ("d", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("dec", pa.decimal128(10, 2)),
        ("flag", pa.bool_()),
    ]
)
ROWS = pa.table(
    {
        "id": [1, 2, 3, 4, 5],
        "name": ["a", None, "c", "O'Brien", "ü"],
        "x": [1.0, None, float("nan"), -0.0, 2.5],
        "d": [
            dt.date(2024, 1, 1),
            None,
            dt.date(1, 1, 1),
            dt.date(9999, 12, 31),
            dt.date(2024, 2, 29),
        ],
        "ts": [
            dt.datetime(2024, 1, 1, tzinfo=UTC),
            None,
            dt.datetime(1, 1, 1, tzinfo=UTC),
            dt.datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC),
            dt.datetime(2024, 6, 1, 12, tzinfo=UTC),
        ],
        "dec": [
            decimal.Decimal("1.10"),
            None,
            decimal.Decimal("-99999999.99"),
            decimal.Decimal("0.00"),
            decimal.Decimal("2.50"),
        ],
        "flag": [True, None, False, True, False],
    },
    schema=SCHEMA,
)


def make(fmt: str, root: str | None = None) -> Table:
    table = lakecore.create(
        root or tempfile.mkdtemp(prefix=f"attack-{fmt}-"), SCHEMA, fmt, [], PROPERTIES[fmt]
    )
    table.append(ROWS)
    return table


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Table]:
    """One table per format: ROWS appended, then its first two rows again (two versions)."""
    root = tmp_path_factory.mktemp("attack-api")
    out = {}
    for fmt in FORMATS:
        table = make(fmt, str(root / fmt))
        table.append(ROWS.slice(0, 2).set_column(0, "id", pa.array([6, 7], pa.int64())))
        out[fmt] = table
    return out


def state(table: Table) -> tuple[int | str, str]:
    """The version and the user rows sorted by id, as text (NaN equals NaN there)."""
    rows = table.to_arrow(SCHEMA.names).sort_by("id")
    return table.version, repr(rows.to_pylist())


def assert_intact(table: Table, before: tuple[int | str, str]) -> None:
    assert state(table) == before


def reference_rows(table: Table) -> pa.Table:
    """The table's rows as the format's own reader (not lakecore) returns them."""
    if table.format == "delta":
        import deltalake

        return deltalake.DeltaTable(table.uri).to_pyarrow_table().select(SCHEMA.names)
    if table.format == "lance":
        import lance

        return lance.dataset(table.uri).to_table().select(SCHEMA.names)
    return hudi_rs_table(Path(table.uri)).select(SCHEMA.names)


# ------------------------------------------------------------------ predicates vs reference


def _f(name: str) -> pc.Expression:
    return pc.field(name)


NONE = _f("id") != _f("id")
"""Selects no row (an integer never differs from itself; NULL is dropped)."""

# SQL predicate -> the same predicate as pyarrow.compute (pyarrow's filter drops NULL like SQL's
# WHERE; NaN compares as IEEE, as lakecore documents in docs/planning.md).
PREDICATES: list[tuple[str, pc.Expression]] = [
    ("x != 1", _f("x") != 1.0),
    ("NOT (x = 1)", ~(_f("x") == 1.0)),
    ("x > 0", _f("x") > 0.0),
    ("x != x", _f("x") != _f("x")),
    ("x = -0.0", _f("x") == 0.0),
    ("x < 'inf'", _f("x") < float("inf")),
    ("x = 'NaN'", _f("x") == float("nan")),
    ("id IN (NULL)", NONE),
    ("id NOT IN (1, NULL)", NONE),
    ("NOT (id IN (NULL))", NONE),
    ("name IN ('a', NULL)", _f("name") == "a"),
    ("NOT (name = 'a')", _f("name") != "a"),
    ("name = NULL", NONE),
    ("NOT (name = NULL)", NONE),
    ("name <=> NULL", _f("name").is_null()),
    ("NOT (name <=> 'a')", (_f("name") != "a") | _f("name").is_null()),
    ("flag", _f("flag")),
    ("NOT flag", ~_f("flag")),
    ("name = 'O\\'Brien'", _f("name") == "O'Brien"),
    ("name = 'O''Brien'", _f("name") == "OBrien"),
    ("name = 'ü'", _f("name") == "ü"),
    ("name LIKE '%'", _f("name").is_valid()),
    ("dec = 1.1", _f("dec") == pa.scalar(decimal.Decimal("1.10"), pa.decimal128(10, 2))),
    ("dec = 1.105", NONE),
    (
        "dec < -99999999.985",
        _f("dec") < pa.scalar(decimal.Decimal("-99999999.98"), pa.decimal128(10, 2)),
    ),
    (
        "dec IN (1.1, 2.5)",
        _f("dec").isin(
            pa.array([decimal.Decimal("1.10"), decimal.Decimal("2.50")], pa.decimal128(10, 2))
        ),
    ),
    ("d = DATE '0001-01-01'", _f("d") == pa.scalar(dt.date(1, 1, 1))),
    ("d > DATE '9999-12-30'", _f("d") > pa.scalar(dt.date(9999, 12, 30))),
    (
        "ts < TIMESTAMP '0001-01-02'",
        _f("ts") < pa.scalar(dt.datetime(1, 1, 2, tzinfo=UTC), pa.timestamp("us", "UTC")),
    ),
    (
        "ts = TIMESTAMP '9999-12-31 23:59:59'",
        _f("ts")
        == pa.scalar(dt.datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC), pa.timestamp("us", "UTC")),
    ),
    (
        "ts = TIMESTAMP '2024-01-01 01:00:00+01:00'",
        _f("ts") == pa.scalar(dt.datetime(2024, 1, 1, tzinfo=UTC), pa.timestamp("us", "UTC")),
    ),
    (
        "ts > DATE '2024-01-01'",
        _f("ts") > pa.scalar(dt.datetime(2024, 1, 1, tzinfo=UTC), pa.timestamp("us", "UTC")),
    ),
    ("id = 9223372036854775807", _f("id") == 9223372036854775807),
    ("id < 9223372036854775808", _f("id").is_valid()),
    ("id > 1e30", NONE),
    ("id = 1.5", NONE),
    ("id BETWEEN 3 AND 1", NONE),
    ("name = 'a' OR 1=1", _f("id").is_valid()),
    ("COALESCE(name, 'z') = 'z'", _f("name").is_null()),
    ("`ID` = 1", _f("id") == 1),
]


@pytest.mark.parametrize("fmt", FORMATS)
def test_predicates_select_what_the_reference_reader_and_pyarrow_select(
    tables: dict[str, Table], fmt: str
) -> None:
    """NULL semantics (``x != 1`` never returns nulls; ``IN (NULL)``, NOT of NULL), NaN,
    decimal and year 1 / year 9999 literals: each SQL predicate selects the ids pyarrow selects
    from the reference reader's rows, on every format. Held."""
    table = tables[fmt]
    reference = reference_rows(table)
    ran = 0
    for sql, expression in PREDICATES:
        got = sorted(table.scan(sql, columns=["id"]).to_arrow().column("id").to_pylist())
        expected = sorted(reference.filter(expression).column("id").to_pylist())
        assert got == expected, sql
        assert table.count(sql) == len(expected), sql
        ran += 1
    assert ran == len(PREDICATES) == 40


ARROW_PREDICATES: list[tuple[pc.Expression, list[int]]] = [
    (pc.field("x") != 1, [3, 4, 5]),
    (~(pc.field("name") == "a"), [3, 4, 5]),
    (pc.field("id").isin([None, 1]), [1]),
    (pc.field("flag") == True, [1, 4, 6]),  # noqa: E712 (an Arrow expression)
]


@pytest.mark.parametrize("fmt", FORMATS)
def test_arrow_expressions_follow_sql_null_semantics(tables: dict[str, Table], fmt: str) -> None:
    """``pyarrow.compute`` predicates: the same rows as SQL (nulls never selected). Held."""
    ran = 0
    for expression, ids in ARROW_PREDICATES:
        got = sorted(tables[fmt].scan(expression, columns=["id"]).to_arrow()["id"].to_pylist())
        assert got == ids, str(expression)
        ran += 1
    assert ran == 4


BAD_PREDICATES: list[tuple[Any, type[LakecoreError]]] = [
    ("nope = 1", SchemaError),
    ("name = 'a'; DROP TABLE x", PredicateError),
    ("id = 1 UNION SELECT 1", PredicateError),
    ("", PredicateError),
    ("id =", PredicateError),
    ("id + 1", PredicateError),
    ("1", PredicateError),
    ("name", PredicateError),
    ("id = TRUE", PredicateError),
    ("flag = 1", PredicateError),
    ("d = '2024-02-30'", PredicateError),
    ("d < DATE '10000-01-01'", PredicateError),
    ("ts > TIMESTAMP '0000-01-01'", PredicateError),
    ("name LIKE NULL", PredicateError),
    ("name RLIKE 'a'", PredicateError),
    ("id IN (SELECT 1)", PredicateError),
    (pc.field("nope") == 1, SchemaError),
    (pc.is_nan(pc.field("x")), PredicateError),
    (pc.scalar(True), PredicateError),
    (5, PredicateError),
]


@pytest.mark.parametrize("fmt", FORMATS)
def test_bad_predicates_are_typed_before_anything_is_written(
    tables: dict[str, Table], fmt: str
) -> None:
    """Unknown columns, injection-looking text, non-boolean and ill-typed predicates: the same
    typed error from scan, count and delete, and the table stays as it was. Held."""
    table = tables[fmt]
    before = state(table)
    ran = 0
    for where, error in BAD_PREDICATES:
        with pytest.raises(error):
            table.scan(where)
        with pytest.raises(error):
            table.count(where)
        if isinstance(where, str):
            with pytest.raises(error):
                table.delete(where)
        ran += 1
    assert_intact(table, before)
    assert ran == len(BAD_PREDICATES) == 20


def test_ambiguous_case_insensitive_column_is_named(tmp_path: Path) -> None:
    """``NAME`` on a table with ``Name`` and ``name``: a SchemaError saying it is ambiguous and
    which columns it matches. Fixed in dc26d60; was: "unknown column 'NAME'" (both exist)."""
    schema = pa.schema([("Name", pa.int64()), ("name", pa.int64())])
    table = lakecore.create(str(tmp_path), schema)
    table.append(pa.table({"Name": [1], "name": [2]}, schema=schema))
    with pytest.raises(SchemaError, match=r"ambiguous.*\['Name', 'name'\]"):
        table.count("NAME = 1")
    assert table.count("`Name` = 1") == table.count("name = 2") == 1


# ------------------------------------------------------ timestamps below the microsecond


def test_nanosecond_literal_is_refused_not_truncated(tmp_path: Path) -> None:
    """A Lance ``timestamp[ns]`` column with rows at 0, 1 and 2 ns: ``ts = '...000000001'``
    must select the 1 ns row or be refused. Fixed in d3c434d; was: Python's ``fromisoformat``
    dropped the digits below the microsecond, so the predicate selected the row at 0 ns (and
    ``>=`` all three): a wrong answer without an error. Now a PredicateError, as the
    ``pyarrow.compute`` form of the same literal already was."""
    schema = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("ns"))])
    table = lakecore.create(str(tmp_path), schema, "lance")
    table.append(pa.table({"id": [1, 2, 3], "ts": pa.array([0, 1, 2], pa.timestamp("ns"))}))
    for where in (
        "ts = '1970-01-01 00:00:00.000000001'",
        "ts >= TIMESTAMP '1970-01-01 00:00:00.000000001'",
        pc.field("ts") == pa.scalar(1, pa.timestamp("ns")),
    ):
        with pytest.raises(PredicateError):
            table.count(where)
    # Zeros below the microsecond change nothing and are taken.
    assert table.count("ts >= '1970-01-01 00:00:00.000000000'") == 3


@pytest.mark.parametrize("fmt", FORMATS)
def test_sub_microsecond_digits_are_refused_on_microsecond_columns(
    tables: dict[str, Table], fmt: str
) -> None:
    """As docs/planning.md says: digits below the column's unit are refused, not dropped.
    Fixed in d3c434d; was: ``ts = '2024-01-01 00:00:00.0000001'`` selected the row at
    00:00:00."""
    with pytest.raises(PredicateError, match="below the microsecond"):
        tables[fmt].count("ts = '2024-01-01 00:00:00.0000001'")
    assert tables[fmt].count("ts = '2024-01-01 00:00:00.000000'") == 2


def test_tree_constructors_raise_lakecore_errors() -> None:
    """Trees are public (``where=`` takes them): a bad operator, an unknown function or an
    empty AND is a typed error. Fixed in 79bcae3; was: a bare ``ValueError``/``TypeError``
    raised outside any guarded call."""
    cases: list[Callable[[], object]] = [
        lambda: ex.Comparison("==", ex.Column("id"), ex.Literal(1)),
        lambda: ex.Compare("<>", ex.Column("id"), ex.Literal(1)),
        lambda: ex.Arithmetic("^", ex.Column("id"), ex.Literal(1)),
        lambda: ex.Call("drop_table", ()),
        lambda: ex.and_(),
        lambda: ex.or_(ex.Column("id"), "x"),  # type: ignore[arg-type]
    ]
    for case in cases:
        with pytest.raises(LakecoreError):
            case()
    with pytest.raises(ValueError):  # still the builtin kind callers caught before
        cases[0]()
    with pytest.raises(TypeError):
        cases[5]()
    assert len(cases) == 6


# ------------------------------------------------------------------ versions and time travel


@pytest.mark.parametrize("fmt", FORMATS)
def test_bool_and_float_versions_are_refused_on_every_format(
    tables: dict[str, Table], fmt: str
) -> None:
    """``True`` and ``1.0`` are no version. Fixed in 868e42e; was: Delta read version 1 for
    both (``count(version=True)`` answered 5), Hudi and Lance looked up an instant/tag named
    ``'True'`` (VersionNotFoundError): three answers to one call."""
    table = tables[fmt]
    calls: list[Callable[[Any], object]] = [
        lambda v: table.snapshot(v),
        lambda v: table.count(version=v),
        lambda v: table.to_arrow(version=v),
        lambda v: table.scan(version=v),
        lambda v: table.head(version=v),
    ]
    ran = 0
    for value in (True, False, 1.0, np.float64(1)):
        for call in calls:
            with pytest.raises(ArgumentTypeError, match="must be a version"):
                call(value)
            ran += 1
    assert ran == 20


def test_numpy_integer_versions_still_read() -> None:
    """A version from a numpy array (history in a DataFrame) is an integer version."""
    table = make("delta")
    table.append(ROWS)
    assert table.to_arrow(version=np.int64(1)).num_rows == 5
    assert table.snapshot(np.int32(2)).version == 2


def test_bool_version_is_refused_by_restore_and_create_tag() -> None:
    """Fixed in 868e42e; was: ``restore(True)`` restored Delta version 1 and
    ``create_tag('t', True)`` was left to the format."""
    delta = make("delta")
    delta.append(ROWS)
    with pytest.raises(ArgumentTypeError):
        delta.restore(True)  # type: ignore[arg-type]
    assert delta.version == 2
    lance = make("lance")
    with pytest.raises(ArgumentTypeError):
        lance.create_tag("t", True)  # type: ignore[arg-type]
    assert lance.tags() == {}


@pytest.mark.parametrize("fmt", FORMATS)
def test_timestamps_outside_years_1_to_9999_get_one_answer(
    tables: dict[str, Table], fmt: str
) -> None:
    """Epoch ms beyond year 9999 (or before year 1): VersionNotFoundError on every format.
    Fixed in 8899a3e; was: Delta and Lance read the latest version, Hudi raised StorageError
    ("[Errno 75] Value too large") although no storage failed."""
    table = tables[fmt]
    for value in (10**20, -(10**20), 253_402_300_800_000):
        with pytest.raises(VersionNotFoundError, match=r"outside the years 1\.\.9999"):
            table.snapshot(timestamp=value)
    latest = table.version
    assert table.snapshot(timestamp=dt.datetime(9999, 12, 31, 23, 59, 59, 999999)).version == latest
    assert table.snapshot(timestamp=253_402_300_799_999).version == latest
    with pytest.raises(VersionNotFoundError):
        table.snapshot(timestamp=dt.datetime(1, 1, 1))


@pytest.mark.parametrize("fmt", FORMATS)
def test_time_travel_with_and_without_time_zone(tables: dict[str, Table], fmt: str) -> None:
    """A naive datetime is UTC; the same instant in another zone, as text with an offset or
    as a date gives the same version; version and timestamp together are refused. Held."""
    table = tables[fmt]
    first = table.history()[-1]
    assert first.timestamp is not None
    at = dt.datetime.fromtimestamp(first.timestamp / 1000, UTC)
    plus5 = at.astimezone(dt.timezone(dt.timedelta(hours=5)))
    versions = {
        table.snapshot(timestamp=at).version,
        table.snapshot(timestamp=at.replace(tzinfo=None)).version,
        table.snapshot(timestamp=plus5).version,
        table.snapshot(timestamp=plus5.isoformat()).version,
        table.snapshot(timestamp=first.timestamp).version,
    }
    assert versions == {first.version}
    with pytest.raises(InvalidArgumentError, match="not both"):
        table.snapshot(first.version, timestamp=at)
    with pytest.raises(InvalidArgumentError, match="not both"):
        table.scan(version=first.version, timestamp=at)
    for garbage in ("yesterday", float("nan"), True, object()):
        with pytest.raises(VersionNotFoundError):
            table.snapshot(timestamp=garbage)


# ------------------------------------------------------------------ locations


def test_empty_location_is_refused_not_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fixed in 1c50914; was: ``open("")`` looked at the working directory and
    ``create("", schema)`` wrote a table into it."""
    monkeypatch.chdir(tmp_path)
    for uri in ("", " ", "\t"):
        with pytest.raises(InvalidArgumentError, match="must not be empty"):
            lakecore.create(uri, SCHEMA)
        with pytest.raises(InvalidArgumentError):
            lakecore.open(uri)
        with pytest.raises(InvalidArgumentError):
            lakecore.is_table(uri)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(
    ("make_uri", "error"),
    [
        (lambda d: d, lakecore.UnknownFormatError),  # an empty folder
        (lambda d: os.path.join(d, "missing"), lakecore.TableNotFoundError),
        (lambda d: os.path.join(d, "file.txt"), lakecore.TableNotFoundError),
        (lambda d: "file://" + d, lakecore.UnknownFormatError),
        (lambda d: "gs://bucket/t", lakecore.UnsupportedFeatureError),
        (lambda d: "nosuchscheme://x/y", lakecore.UnsupportedFeatureError),
        (lambda d: os.path.join(d, "a\x00b"), InvalidArgumentError),
    ],
)
def test_open_of_what_is_no_table(
    tmp_path: Path, make_uri: Callable[[str], str], error: type[LakecoreError]
) -> None:
    """Held: an empty folder, a missing path, a file, a ``file://`` URI of an empty folder,
    schemes without a filesystem and a NUL byte: each a typed error from ``open``."""
    (tmp_path / "file.txt").write_text("x")
    uri = make_uri(str(tmp_path))
    with pytest.raises(error):
        lakecore.open(uri)


@pytest.mark.parametrize("fmt", FORMATS)
def test_paths_with_spaces_unicode_and_percent(tmp_path: Path, fmt: str) -> None:
    """A root named with a space, non-ASCII letters, ``%20``, ``#`` and ``?``: written, read
    back, deleted from, reopened (also as ``file://`` where the name is no URI escape). Held."""
    for name in ("sp ace ünï", "pct%20x%2F", "hash#q?x=1"):
        root = tmp_path / name
        root.mkdir()
        table = make(fmt, str(root))
        table.delete("id = 1")
        assert lakecore.open(str(root)).count() == 4
        assert lakecore.open(str(root)).uri == str(root)
        if name == "sp ace ünï":  # no URI escapes: the same as a file:// URI
            assert lakecore.open("file://" + str(root)).count() == 4
            assert reference_rows(table).num_rows == 4


# ------------------------------------------------------------------ columns, limits, streams


@pytest.mark.parametrize("fmt", FORMATS)
def test_columns_given_as_an_iterator(tables: dict[str, Table], fmt: str) -> None:
    """Fixed in 664c386; was: ``to_arrow(c for c in ["id"])`` read the generator twice and
    raised InvalidArgumentError "Schema at index 0 was different"."""
    table = tables[fmt]
    expected = table.to_arrow(["id", "name"])
    assert table.to_arrow(c for c in ["id", "name"]).equals(expected)
    assert table.snapshot().to_arrow(iter(["id", "name"])).equals(expected)
    assert table.head(3, iter(["name"])).column_names == ["name"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_limit_and_columns_combinations(tables: dict[str, Table], fmt: str) -> None:
    """Held: no columns still counts rows, a duplicate column comes once, limits cap rows
    after the filter, ``count`` of a limited scan is capped, bool/float limits are refused."""
    table = tables[fmt]
    assert table.to_arrow([]).shape == (7, 0)
    assert table.scan("id > 1", columns=[]).to_arrow().shape == (6, 0)
    assert table.scan(columns=["name", "name"], limit=3).to_arrow().shape == (3, 1)
    assert table.scan("id > 1", limit=2).count() == 2
    assert table.scan("x != 1", columns=["id"], limit=10).to_arrow().num_rows == 3
    assert table.head(0).num_rows == 0
    assert table.head(10**20).num_rows == 7
    for bad in (True, 2.0, -1, "3"):
        with pytest.raises(InvalidArgumentError):
            table.head(bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidArgumentError):
            table.scan(limit=bad)  # type: ignore[arg-type]
    with pytest.raises(SchemaError):
        table.to_arrow(["ID"])  # column lists are exact; only SQL ignores case


@pytest.mark.parametrize("fmt", FORMATS)
def test_streams_closed_early_leave_the_table_readable(tables: dict[str, Table], fmt: str) -> None:
    """Held: a batch iterator closed after one batch, an Arrow C stream read partly, and a
    requested schema pyarrow cannot cast to (a typed error) leave nothing behind."""
    table = tables[fmt]
    before = state(table)
    batches = table.to_batches(batch_size=1)
    assert next(batches).num_rows == 1
    batches.close()  # type: ignore[attr-defined]
    del batches
    reader = pa.RecordBatchReader.from_stream(table)
    assert reader.read_next_batch().num_rows > 0
    reader.close()
    gc.collect()
    with pytest.raises(InvalidArgumentError):
        pa.RecordBatchReader.from_stream(table, schema=pa.schema([("id", pa.int32())]))
    assert pa.table(table).num_rows == 7
    assert table.to_pandas(["id", "ts"]).shape == (7, 2)
    assert_intact(table, before)


# ------------------------------------------------------------------ writes that must change nothing


@pytest.mark.parametrize("fmt", FORMATS)
def test_update_with_nothing_to_set_commits_nothing(fmt: str) -> None:
    """``update({}, where)``: no commit, as deltalake's ``update(updates={})``; ``where`` is
    still checked. Fixed in 4535409; was: every format rewrote the matching files and
    committed a new version changing no value."""
    table = make(fmt)
    before = state(table)
    result = table.update({}, "id = 1")
    assert result.committed is False
    assert result.version == before[0]
    assert table.update({}).committed is False
    with pytest.raises(SchemaError):
        table.update({}, "nope = 1")
    assert_intact(table, before)


@pytest.mark.parametrize("fmt", FORMATS)
def test_refused_writes_leave_the_table_intact(fmt: str) -> None:
    """Held: wrong data, unknown columns, bad modes, a merge without clauses or keys: typed
    errors, same version, same rows."""
    table = make(fmt)
    before = state(table)
    calls: list[tuple[Callable[[], object], type[LakecoreError]]] = [
        (lambda: table.delete("nope = 1"), SchemaError),
        (lambda: table.delete("1 = 1; DROP TABLE t"), PredicateError),
        (lambda: table.update({"nope": 1}, "id = 1"), SchemaError),
        (lambda: table.update({"name": 5}, "id = 1"), InvalidArgumentError),
        (lambda: table.update({"name": "'z'"}, "nope = 1"), SchemaError),
        (lambda: table.append(pa.table({"id": [9]})), SchemaError),
        (lambda: table.append(None), SchemaError),
        (lambda: table.append(ROWS, schema_mode="MERGE"), InvalidArgumentError),
        (lambda: table.overwrite(ROWS.slice(0, 1), where="id = 2"), LakecoreError),
        (lambda: table.merge(ROWS, "id").execute(), InvalidArgumentError),
        (lambda: table.merge(ROWS, []).when_matched_update_all().execute(), SchemaError),
    ]
    for call, error in calls:
        with pytest.raises(error):
            call()
    assert_intact(table, before)
    assert len(calls) == 11


DUPLICATE_KEYS = pa.table(
    {
        "id": [1, 1],
        "name": ["p", "q"],
        "x": [0.0, 1.0],
        "d": pa.array([None, None], pa.date32()),
        "ts": pa.array([None, None], pa.timestamp("us", tz="UTC")),
        "dec": pa.array([None, None], pa.decimal128(10, 2)),
        "flag": pa.array([None, None], pa.bool_()),
    },
    schema=SCHEMA,
)


@pytest.mark.parametrize(
    "fmt",
    [
        "delta",
        "hudi",
        "lance",
    ],
)
def test_merge_with_duplicate_source_keys_is_a_merge_conflict(fmt: str) -> None:
    """Two source rows with the key of one target row: ``MergeConflictError`` (documented
    for this case in lakecore/errors.py) and nothing written; the table stays intact on
    every format. Fixed in e961bc0; was: Hudi's merge (``source_keys``) raised the parent
    ``ConstraintViolationError``, so ``except MergeConflictError`` missed it on Hudi only."""
    table = make(fmt)
    before = state(table)
    try:
        with pytest.raises(MergeConflictError):
            table.merge(DUPLICATE_KEYS, "id").when_matched_update_all().execute()
        with pytest.raises(MergeConflictError):
            table.merge(DUPLICATE_KEYS, "id").when_matched_delete().execute()
    finally:
        assert_intact(table, before)


def test_hudi_changes_from_after_the_latest_instant_are_empty_or_refused() -> None:
    """``changes(10**30)`` (after every instant) on Hudi: VersionNotFoundError, as Delta and
    Lance refuse a start after the latest version. Fixed in e961bc0 (a start of more digits
    than any instant is no instant); was: every change, since instants compare as text
    (as in Hudi) and ``'1000...0'`` sorts before ``'2026...'``."""
    table = make("hudi")
    with pytest.raises(VersionNotFoundError):
        table.changes(10**30)


def test_lance_create_with_a_dotted_column_name_is_a_schema_error(tmp_path: Path) -> None:
    """A top-level column ``a.b``: Delta takes it, Hudi refuses it with SchemaError (no Avro
    name), and so does Lance. Fixed in 1f252a3 (plugins/lakecore_lance, by the Lance attack
    review); was: pylance's raw ``RuntimeError`` ("Top level field a.b cannot contain `.`")
    out of ``lakecore.create``. Nothing is created."""
    schema = pa.schema([("id", pa.int64()), ("a.b", pa.int64())])
    root = tmp_path / "t"
    with pytest.raises(SchemaError, match=r"a\.b"):
        lakecore.create(str(root), schema, "lance")
    assert not lakecore.is_table(str(root))


def test_dotted_quoted_and_unicode_column_names_in_sql(tmp_path: Path) -> None:
    """Held on Delta (the format that takes them): backquoted names with dots, quotes,
    spaces and backquotes, an unquoted dotted name meaning the column of that name, unicode,
    case collisions resolved exactly."""
    names = ["a.b", "b", "Name", "name", "ünï", 'q"t', "sp ace", "`bt`"]
    schema = pa.schema([("id", pa.int64())] + [(n, pa.int64()) for n in names])
    rows = pa.table({"id": [1, 2], **{n: [i, i + 10] for i, n in enumerate(names)}}, schema=schema)
    table = lakecore.create(str(tmp_path), schema)
    table.append(rows)
    cases = {
        "`a.b` = 0": [1],
        "a.b = 10": [2],
        "b = 1": [1],
        "`Name` = 2": [1],
        "name = 3": [1],
        "ünï = 14": [2],
        '`q"t` = 5': [1],
        "`sp ace` = 6": [1],
        "```bt``` = 17": [2],
    }
    for where, ids in cases.items():
        assert table.scan(where, columns=["id"]).to_arrow()["id"].to_pylist() == ids, where
    assert table.update({"a.b": "`a.b` + 100"}, "id = 1").committed
    assert sorted(table.to_arrow(["a.b"]).column("a.b").to_pylist()) == [10, 100]
    assert len(cases) == 9


# ------------------------------------------------------------------ the CLI


COMMANDS = [
    "vacuum",
    "clean",
    "optimize",
    "compact",
    "checkpoint",
    "restore",
    "migrate",
    "info",
    "schema",
    "properties",
    "history",
    "files",
    "head",
    "scan",
    "changes",
]


def cli(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def test_every_command_has_help() -> None:
    """Held: ``--help`` of every command exits 0 and names the command."""
    assert len(COMMANDS) == 15
    for command in COMMANDS:
        result = cli(command, "--help")
        assert result.exit_code == 0, command
        assert f" {command} [OPTIONS]" in result.output
        assert "Traceback" not in result.output


def _one_line_error(result: Any) -> str:
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    return str(lines[0])


@pytest.mark.parametrize("fmt", FORMATS)
def test_cli_errors_are_one_line_and_exit_1(tables: dict[str, Table], fmt: str) -> None:
    """Held (but ``--columns ""``): every refused argument is one ``error: <Class>: ...``
    line and exit code 1 (usage errors typer catches exit 2). Fixed in 3c798a2 for
    ``head --columns ""``, which printed nothing (JSON: rows of no columns) and exited 0."""
    uri = tables[fmt].uri
    errors = [
        ("info", uri, "--as-of-version", "abc"),
        ("info", uri, "--as-of-version", "99999999999999999999999"),
        ("info", uri, "--as-of-timestamp", "garbage"),
        ("info", uri, "--as-of-timestamp", "99999999999999999999"),
        ("info", uri, "--as-of-version", "1", "--as-of-timestamp", "2024-01-01"),
        ("head", uri, "--columns", "nope"),
        ("head", uri, "--columns", ""),
        ("head", uri, "--columns", " , "),
        ("scan", uri, "--where", "nope = 1"),
        ("scan", uri, "--where", "id = 1; DROP TABLE x"),
        ("scan", uri, "--where", ""),
        ("scan", uri, "--storage-options", "{bad"),
        ("scan", uri, "--storage-options", "[1]"),
        ("info", uri, "--format", "nope"),
        ("changes", uri, "999999", "0"),
        ("vacuum", uri, "--retention-hours", "nan"),
        ("info", uri + "/missing"),
    ]
    for args in errors:
        line = _one_line_error(cli(*args))
        assert "Error" in line.split(":")[1], args
    for args in (
        ("head", uri, "-n", "-1"),
        ("history", uri, "--limit", "-1"),
        ("info", uri, "--version", "1"),
    ):
        assert cli(*args).exit_code == 2, args
    assert len(errors) == 17


# ------------------------------------------------------------------ transactions


def _files_under(root: str) -> list[str]:
    return sorted(
        os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs
    )


OVERLAPPING: list[tuple[str, Callable[[Any], None]]] = [
    ("update then delete", lambda tx: (tx.update({"name": "'u'"}, "id = 1"), tx.delete("id = 2"))),
    ("delete twice", lambda tx: (tx.delete("id = 1"), tx.delete("id = 1"))),
    ("delete then update", lambda tx: (tx.delete("id = 1"), tx.update({"name": "'u'"}, "id = 1"))),
    ("delete then overwrite", lambda tx: (tx.delete("id = 1"), tx.overwrite(ROWS.slice(0, 2)))),
]


@pytest.mark.parametrize("fmt", FORMATS)
def test_two_operations_on_one_file_in_a_transaction_are_refused(fmt: str) -> None:
    """Each operation of a transaction is planned against the snapshot's version of a file;
    two that change the same file cannot both apply. Every format must refuse the
    transaction (UnsupportedFeatureError), commit nothing and leave no file behind. Fixed in
    ee7367b; was: Delta committed both, duplicating rows (update + delete of one file gave
    ids [1, 1, 2, 3, 3, 4, 4, 5, 5]; delete then a full overwrite kept the deleted file's
    other rows), while Hudi and Lance refused at commit."""
    ran = 0
    for name, stage in OVERLAPPING:
        table = make(fmt)
        before, files = state(table), _files_under(table.uri)
        with pytest.raises(lakecore.UnsupportedFeatureError), table.transaction() as tx:
            stage(tx)
        assert_intact(table, before)
        if fmt == "delta":  # Hudi and Lance keep their rolled-back instants' metadata
            assert _files_under(table.uri) == files, name
        ran += 1
    assert ran == len(OVERLAPPING) == 4


@pytest.mark.parametrize("fmt", FORMATS)
def test_transaction_misuse_is_typed(fmt: str) -> None:
    """Held: a second commit, staging after the block committed, and an exception inside
    the block (nothing committed, the error propagates unchanged)."""
    table = make(fmt)
    with table.transaction() as tx:
        tx.append(ROWS.slice(0, 1))
    committed = state(table)
    with pytest.raises(lakecore.CommitError, match="already committed"):
        tx.commit()
    with pytest.raises(lakecore.CommitError, match="already committed"):
        tx.append(ROWS.slice(0, 1))
    with pytest.raises(ZeroDivisionError), table.transaction() as tx2:
        tx2.append(ROWS)
        _ = 1 / 0
    assert_intact(table, committed)


# ------------------------------------------------------------------ table properties


def test_boolean_properties_are_written_as_delta_spells_them() -> None:
    """``set_properties({"delta.appendOnly": True})`` (and ``create(properties=...)``) must
    write ``"true"``: lakecore read ``"True"`` as append-only, deltalake did not and deleted
    rows from the "append-only" table. Fixed in d23f6c2; was: ``str(True)``."""
    import deltalake

    table = make("delta")
    table.set_properties({"delta.appendOnly": True})
    assert table.snapshot().properties["delta.appendOnly"] == "true"
    with pytest.raises(lakecore.ConstraintViolationError):
        table.delete("id = 1")
    with pytest.raises(Exception, match=r"(?i)append"):
        deltalake.DeltaTable(table.uri).delete("id = 2")
    assert table.count() == 5
    created = lakecore.create(
        tempfile.mkdtemp(), SCHEMA, properties={"delta.appendOnly": False, "lakecore.n": 5}
    )
    assert created.snapshot().properties == {"delta.appendOnly": "false", "lakecore.n": "5"}


@pytest.mark.parametrize(
    ("properties", "error"),
    [
        ({1: "a"}, ArgumentTypeError),
        ({None: "a"}, ArgumentTypeError),
        ({"": "a"}, InvalidArgumentError),
        ({" ": "a"}, InvalidArgumentError),
        ([("lakecore.a", "b")], ArgumentTypeError),
    ],
)
def test_property_names_must_be_text(properties: Any, error: type[LakecoreError]) -> None:
    """Fixed in d23f6c2; was: blank names were written (``{"": "a"}``), and a name that is
    no text failed inside the commit ("AttributeError: 'int' object has no attribute
    'startswith'")."""
    table = make("delta")
    before = state(table)
    with pytest.raises(error, match="propert"):
        table.set_properties(properties)
    assert_intact(table, before)
    with pytest.raises(error, match="propert"):
        lakecore.create(tempfile.mkdtemp(), SCHEMA, properties=properties)


def test_create_refuses_a_none_property_value() -> None:
    """Fixed in d23f6c2; was: ``create(properties={"lakecore.y": None})`` wrote the text
    ``"None"`` (``set_properties`` unsets on None; a new table has nothing to unset)."""
    root = tempfile.mkdtemp()
    with pytest.raises(InvalidArgumentError, match="None"):
        lakecore.create(root, SCHEMA, properties={"lakecore.y": None})
    assert not lakecore.is_table(root)


# ------------------------------------------------------------------ expression evaluation


@pytest.mark.parametrize("fmt", FORMATS)
def test_division_of_integers_beyond_2_to_the_53(fmt: str, tmp_path: Path) -> None:
    """``/`` of integers is a double (Spark's rule): ids above 2**53 are rounded to the
    nearest double, as Spark casts them. Fixed in 211c48c; was: InvalidArgumentError
    ("Integer value 9223372036854775807 not in range") for any such row, e.g. ``id / 2 > 0``
    over 64-bit hashes. Overflow of ``+ - *`` still raises (typed), as documented."""
    schema = pa.schema([("id", pa.int64())])
    table = lakecore.create(str(tmp_path), schema, fmt, [], PROPERTIES[fmt])
    table.append(pa.table({"id": [2**63 - 1, -(2**63), 2**53 + 1, 7]}, schema=schema))
    assert sorted(table.scan("id / -1 > 0", columns=["id"]).to_arrow()["id"].to_pylist()) == [
        -(2**63)
    ]
    assert table.count("id / 2 = 3.5") == 1
    assert table.count("id / 2 >= 4503599627370496") == 2  # (2**53 + 1) rounds to 2**53
    with pytest.raises(InvalidArgumentError, match="overflow"):
        table.count("id + 1 > 0")


def test_integer_literal_casts_must_fit_their_type(tmp_path: Path) -> None:
    """Fixed in e12b60d; was: ``CAST(300 AS TINYINT) = 300`` was TRUE for every row (the
    literal kept 300); Spark's ANSI cast raises CAST_OVERFLOW. Casts that fit are values."""
    schema = pa.schema([("id", pa.int64())])
    table = lakecore.create(str(tmp_path), schema)
    table.append(pa.table({"id": [1, 300]}, schema=schema))
    cases = ["CAST(300 AS TINYINT) = 300", "id = 300Y", "id = CAST('40000' AS SMALLINT)"]
    for where in cases:
        with pytest.raises(PredicateError, match="out of the range"):
            table.count(where)
    assert table.count("id = CAST(127 AS TINYINT)") == 0
    assert table.count("id = 300S") == table.count("id = 1Y") == 1
    assert len(cases) == 3


NOT_NULL = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string(), nullable=False)]
)


@pytest.mark.parametrize(
    "fmt",
    [
        "delta",
        "hudi",
        "lance",
    ],
)
def test_merge_insert_without_a_not_null_column_is_a_constraint_violation(fmt: str) -> None:
    """A merge inserting rows without a NOT NULL column (``when_not_matched_insert`` naming
    only ``id``): ConstraintViolationError on Delta and Hudi, as every other NOT NULL
    violation (update to NULL, append of nulls) is on all three, and on Lance since cb5d968
    (was: SchemaError "the data has no column 'v', which is NOT NULL", so one ``except`` did
    not fit every format). The table stays intact everywhere."""
    table = lakecore.create(tempfile.mkdtemp(), NOT_NULL, fmt, [], PROPERTIES[fmt])
    table.append(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=NOT_NULL))
    version = table.version
    try:
        with pytest.raises(lakecore.ConstraintViolationError, match="NOT NULL"):
            (
                table.merge(pa.table({"id": [9]}), "id")
                .when_not_matched_insert({"id": "source.id"})
                .execute()
            )
    finally:
        assert table.version == version
        assert table.count() == 2


@pytest.mark.parametrize("fmt", ["delta", "lance"])
def test_vacuum_flags_must_be_bools(fmt: str) -> None:
    """``dry_run`` decides whether files are deleted: ``None``, ``0`` or ``"no"`` must not
    be read by truthiness. Fixed in 1a02c35; was: ``vacuum(0, dry_run=None,
    enforce_retention=False)`` deleted the removed files (``None`` is falsy)."""
    table = make(fmt)
    table.delete("id = 1")
    files = _files_under(table.uri)
    ran = 0
    for flags in (
        {"dry_run": None},
        {"dry_run": 0},
        {"dry_run": "no"},
        {"enforce_retention": None},
    ):
        with pytest.raises(ArgumentTypeError, match="True or False"):
            table.vacuum(0, **{"dry_run": True, "enforce_retention": False, **flags})
        ran += 1
    assert _files_under(table.uri) == files
    assert table.count() == 4
    assert ran == 4


@pytest.mark.parametrize(
    "fmt",
    ["delta", "hudi", "lance"],
)
def test_a_delete_or_update_matching_nothing_commits_nothing(fmt: str) -> None:
    """``Table._run`` says an operation that staged nothing commits nothing, and Delta (as
    Delta Spark's ``commitIfNeeded``) returns ``committed=False`` for a delete or update
    whose predicate matches no row. Fixed in 52adf0d; was: Hudi and Lance committed an empty
    version, so the same call moved the version on two formats and not on the third, and a
    no-op DELETE there could conflict with concurrent writers."""
    table = make(fmt)
    version = table.version
    results = [table.delete("id = 99"), table.update({"name": "'z'"}, "id = 99")]
    assert [r.committed for r in results] == [False, False]
    assert table.version == version


@pytest.mark.parametrize("fmt", FORMATS)
def test_batch_sizes_and_limits_over_several_files(fmt: str) -> None:
    """Held: over two files (250 + 7 rows), every ``batch_size`` bounds every batch and the
    batches hold every row once; ``head(n)``, ``scan(where, limit=n)`` and a limited scan's
    batches give exactly ``min(n, rows)`` rows."""
    rows = pa.concat_tables([ROWS] * 50).set_column(0, "id", pa.array(range(250), pa.int64()))
    table = make(fmt)
    table.overwrite(rows)
    table.append(rows.slice(0, 7).set_column(0, "id", pa.array(range(1000, 1007), pa.int64())))
    ran = 0
    for size in (1, 3, 7, 100, 1000):
        sizes = [b.num_rows for b in table.to_batches(batch_size=size)]
        assert sum(sizes) == 257 and max(sizes) <= size, size
        ran += 1
    for n in (0, 1, 6, 7, 8, 256, 257, 300):
        assert table.head(n).num_rows == min(n, 257), n
        assert table.scan("id >= 0", limit=n).to_arrow().num_rows == min(n, 257), n
        assert sum(b.num_rows for b in table.scan(limit=n).to_batches(3)) == min(n, 257), n
        ran += 1
    assert ran == 13


LIKE_NAMES = ["a%b", "a_b", "axb", "a.b", "(x", "[a]z", "^a", "a$", "a\\b", "A_B", "ab\nc", ""]
LIKE_CASES = {
    r"name LIKE 'a\\%b'": ["a%b"],
    r"name LIKE 'a\\_b'": ["a_b"],
    "name LIKE 'a_b'": ["a%b", "a.b", "a\\b", "a_b", "axb"],
    "name LIKE 'a.b'": ["a.b"],
    "name LIKE '(%'": ["(x"],
    "name LIKE '[a]%'": ["[a]z"],
    "name LIKE '^a'": ["^a"],
    "name LIKE 'a$'": ["a$"],
    r"name LIKE 'a\\\\b'": ["a\\b"],
    "name LIKE 'ab%'": ["ab\nc"],
    "name LIKE ''": [""],
    "name NOT LIKE 'a%'": ["", "(x", "A_B", "[a]z", "^a"],
}


@pytest.mark.parametrize("fmt", FORMATS)
def test_like_patterns_with_regex_characters_and_escapes(fmt: str) -> None:
    """Held: LIKE's ``%``/``_`` wildcards, Spark's backslash escapes, regex characters taken
    literally, a pattern over a line break and the empty string, on every format."""
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    table = lakecore.create(tempfile.mkdtemp(), schema, fmt, [], PROPERTIES[fmt])
    table.append(pa.table({"id": range(len(LIKE_NAMES)), "name": LIKE_NAMES}, schema=schema))
    for where, expected in LIKE_CASES.items():
        ids = table.scan(where, columns=["id"]).to_arrow()["id"].to_pylist()
        assert sorted(LIKE_NAMES[i] for i in ids) == sorted(expected), where
    assert len(LIKE_CASES) == 12


@pytest.mark.parametrize("fmt", ["delta", "lance"])
def test_merge_aliases_must_be_two_names(fmt: str) -> None:
    """Fixed in f892069; was: ``source_alias="t", target_alias="t"`` (or ``"S"``/``"s"``:
    SQL ignores case) merged, ``t.name`` silently meaning the source's; an empty source alias
    made ``name`` the target's column and the update a no-op; an alias with a dot was
    taken."""
    table = make(fmt)
    before = state(table)
    source = pa.table({"id": [1], "name": ["S"]})
    ran = 0
    for aliases, error in (
        (("t", "t"), InvalidArgumentError),
        (("S", "s"), InvalidArgumentError),
        (("source", "SOURCE"), InvalidArgumentError),
        (("", "target"), InvalidArgumentError),
        (("s.x", "t"), InvalidArgumentError),
        ((None, "t"), ArgumentTypeError),
    ):
        with pytest.raises(error, match="alias"):
            table.merge(source, "id", source_alias=aliases[0], target_alias=aliases[1])  # type: ignore[arg-type]
        ran += 1
    assert_intact(table, before)
    merged = table.merge(source, "s.id = t.id", source_alias="s", target_alias="t")
    assert merged.when_matched_update({"name": "s.name"}).execute().rows_updated == 1
    assert ran == 6


@pytest.mark.parametrize("fmt", FORMATS)
def test_schema_update_arguments_are_typed_on_every_format(fmt: str) -> None:
    """The builder of ``update_schema()`` is the format's own object, which nothing guarded.
    Fixed in 469dd7f; was: ``s.add_column("q", "int")`` raised a raw AttributeError (Delta)
    or ValueError (Hudi, Lance), and ``s.add_column("", pa.int64())`` committed a column
    with an empty name on Delta and Lance (Hudi refused it as no Avro name)."""
    table = make(fmt)
    before = state(table)
    schema = table.schema
    calls: list[tuple[Callable[[Any], object], type[LakecoreError]]] = [
        (lambda s: s.add_column("q", "int"), ArgumentTypeError),
        (lambda s: s.add_column(5, pa.int64()), ArgumentTypeError),
        (lambda s: s.add_column("", pa.int64()), SchemaError),
        (lambda s: s.add_column(" ", pa.int64()), SchemaError),
        (lambda s: s.widen_type("id", "bigint"), ArgumentTypeError),
        (lambda s: s.drop_column(None), ArgumentTypeError),
        (lambda s: s.add_column("id", pa.int64()), SchemaError),
    ]
    for call, error in calls:
        with pytest.raises(error), table.update_schema() as update:
            call(update)
    assert table.schema == schema
    assert_intact(table, before)
    with table.update_schema() as update:
        update.add_column("added", pa.string())
    assert table.schema.names[-1] == "added"
    assert len(calls) == 7


@pytest.mark.parametrize("fmt", FORMATS)
def test_create_refuses_schemas_no_reader_can_address(fmt: str) -> None:
    """Fixed in fdcdaed; was: Delta and Lance created tables with two columns ``id``, with a
    column named ``""`` and with no column at all; Hudi refused two ``id`` with
    InvalidArgumentError wrapping a raw ``KeyError``. Nothing is created."""
    ran = 0
    for schema, error in (
        (pa.schema([("id", pa.int64()), ("id", pa.int64())]), SchemaError),
        (pa.schema([("id", pa.int64()), ("", pa.int64())]), SchemaError),
        (pa.schema([("id", pa.int64()), ("  ", pa.int64())]), SchemaError),
        (pa.schema([]), SchemaError),
        ("id bigint", ArgumentTypeError),
    ):
        root = tempfile.mkdtemp()
        with pytest.raises(error):
            lakecore.create(root, schema, fmt, [], PROPERTIES[fmt])  # type: ignore[arg-type]
        assert not lakecore.is_table(root)
        ran += 1
    assert ran == 5


@pytest.mark.parametrize("fmt", FORMATS)
def test_data_with_a_repeated_column_is_one_schema_error(fmt: str) -> None:
    """Fixed in f936cf8; was: Delta and Hudi raised SchemaError ("appear more than once in the
    data"), Lance InvalidArgumentError wrapping a raw ``KeyError``; and a Delta append with
    ``schema_mode="merge"`` added a column named ``""`` to the schema. Nothing is written."""
    table = make(fmt)
    before, files = state(table), _files_under(table.uri)
    repeated = ROWS.slice(0, 1).append_column("id", pa.array([7]))
    for data in (
        repeated,
        pa.RecordBatchReader.from_batches(repeated.schema, repeated.to_batches()),
    ):
        with pytest.raises(SchemaError, match="more than once"):
            table.append(data)
        with pytest.raises(SchemaError, match="more than once"):
            table.overwrite(data)
    if fmt == "delta":
        with pytest.raises(SchemaError, match="blank"):
            table.append(ROWS.slice(0, 1).append_column("", pa.array([7])), schema_mode="merge")
    assert_intact(table, before)
    if fmt == "delta":  # Hudi and Lance keep their rolled-back instants' metadata
        assert _files_under(table.uri) == files


def test_a_refused_lance_tag_name_leaves_the_tags_readable() -> None:
    """Fixed in cb5d968 (one name rule for writer and reader, checked before writing); was:
    ``create_tag("ünï")`` on Lance: the writer's name check
    (plugins/lakecore_lance/write/tags.py ``_checked_name``: ``str.isalnum``, any script) takes
    it and writes ``_refs/tags/ünï.json``; the reader's (``history.tag_version``, the ASCII
    ``_TAG_NAME``) refuses it, so the call fails with VersionNotFoundError AFTER the file is
    written, and from then on ``tags()``, every ``create_tag``, ``delete_tag`` and
    ``vacuum`` of the dataset raise VersionNotFoundError (pylance cannot list its tags
    either: it looks for the percent-encoded name). A failed call must leave the table as it
    was. Suggested fix: one name rule for writer and reader (the ASCII one), checked before
    anything is written; a name too long for the file system (300 characters: StorageError
    'File name too long' today) refused the same way as InvalidArgumentError."""
    table = make("lance")
    with pytest.raises(InvalidArgumentError):
        table.create_tag("ünï")
    assert table.tags() == {}
    table.create_tag("v1")
    assert table.tags() == {"v1": table.version}
    assert table.vacuum() == []


@pytest.mark.parametrize("fmt", FORMATS)
def test_cli_prints_control_characters_of_the_data_as_escapes(fmt: str) -> None:
    """A hostile value must not drive the terminal. Fixed in 3eea17a; was: ``lakecore head``
    wrote ESC sequences and carriage returns of string values (and of Delta column names)
    raw; rich markup in data was already inert. JSON output escapes them as JSON does."""
    schema = pa.schema([("id", pa.int64()), ("s", pa.string())])
    table = lakecore.create(tempfile.mkdtemp(), schema, fmt, [], PROPERTIES[fmt])
    values = ["\x1b[31mred\x1b[0m", "a\rb", "\x1b]0;title\x07", "[bold]markup[/]", "\x9b2J"]
    table.append(pa.table({"id": range(len(values)), "s": values}, schema=schema))
    result = cli("head", table.uri, "--columns", "s")
    assert result.exit_code == 0
    for control in ("\x1b", "\r", "\x07", "\x9b"):
        assert control not in result.output
    assert "\\x1b[31mred" in result.output and "a\\x0db" in result.output
    assert "[bold]markup[/]" in result.output
    assert json.loads(cli("head", table.uri, "--json").output)["rows"][0]["s"] == values[0]
    if fmt == "delta":
        named = lakecore.create(tempfile.mkdtemp(), pa.schema([("c\x1b[1m", pa.int64())]))
        assert "\x1b" not in cli("head", named.uri).output
