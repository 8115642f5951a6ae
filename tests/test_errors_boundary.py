"""Every exception that reaches users is a LakecoreError (issue 14, "Errors and packaging").

Found by testing: wrong types and values fed to every public entry point (a table of cases run
on each format, and hypothesis over the read entry points), storage faults of every kind
(``FaultyStorage``: timeouts, resets, access denied), unreachable S3 (a closed port) and moto.
Each translated error keeps the builtin kind it had (``ArgumentTypeError`` is a ``TypeError``)
and chains the original as its ``__cause__``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import inspect
import json
import socket
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lakecore
from lakecore.boundary import public_api, public_function, translated
from lakecore.errors import (
    ArgumentTypeError,
    InvalidArgumentError,
    LakecoreError,
    SchemaError,
    StorageError,
    UnsupportedFeatureError,
)
from lakecore.planning.scan import Scan
from lakecore.storage import open_storage
from lakecore.storage.aws_options import translate_aws_options
from lakecore.table import MergeBuilder, SchemaUpdateContext, Table
from lakecore.testing.faults import FaultyStorage
from lakecore.transaction import Transaction

SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string())])
ROWS = pa.table({"id": [1, 2], "region": ["eu", "us"]})
FORMATS = ("delta", "hudi", "lance")
PROPERTIES = {"delta": {}, "hudi": {"record_key": "id"}, "lance": {}}


def make_table(root: Path, fmt: str) -> Table:
    table = lakecore.create(str(root), SCHEMA, fmt, [], PROPERTIES[fmt])
    table.append(ROWS)
    return table


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Table]:
    root = tmp_path_factory.mktemp("boundary")
    return {fmt: make_table(root / fmt, fmt) for fmt in FORMATS}


def fresh() -> str:
    return tempfile.mkdtemp(prefix="lakecore-boundary-")


# ------------------------------------------------------------------ the table of wrong arguments

Case = tuple[str, Callable[[Table], Any], type[LakecoreError]]

CASES: list[Case] = [
    # lakecore.open / create / is_table / migrate
    ("open uri None", lambda t: lakecore.open(None), ArgumentTypeError),  # type: ignore[arg-type]
    ("open uri int", lambda t: lakecore.open(42), ArgumentTypeError),  # type: ignore[arg-type]
    ("open uri bytes", lambda t: lakecore.open(b"/x"), ArgumentTypeError),  # type: ignore[arg-type]
    ("open format list", lambda t: lakecore.open(t.uri, format=["x"]), ArgumentTypeError),  # type: ignore[arg-type]
    (
        "open storage_options pairs",
        lambda t: lakecore.open(t.uri, storage_options=[("a", 1)]),  # type: ignore[arg-type]
        ArgumentTypeError,
    ),
    ("open options text", lambda t: lakecore.open(t.uri, options="x"), ArgumentTypeError),  # type: ignore[arg-type]
    ("open storage object", lambda t: lakecore.open(t.uri, storage=object()), InvalidArgumentError),  # type: ignore[arg-type]
    ("is_table uri None", lambda t: lakecore.is_table(None), ArgumentTypeError),  # type: ignore[arg-type]
    ("create uri None", lambda t: lakecore.create(None, SCHEMA), ArgumentTypeError),  # type: ignore[arg-type]
    (
        "create schema text",
        lambda t: lakecore.create(fresh(), "id int", t.format),
        ArgumentTypeError,
    ),  # type: ignore[arg-type]
    ("create schema None", lambda t: lakecore.create(fresh(), None, t.format), ArgumentTypeError),  # type: ignore[arg-type]
    (
        "create partition_by None",
        lambda t: lakecore.create(fresh(), SCHEMA, t.format, None),  # type: ignore[arg-type]
        ArgumentTypeError,
    ),
    (
        "create properties pairs",
        lambda t: lakecore.create(fresh(), SCHEMA, t.format, [], ["a"]),  # type: ignore[arg-type]
        LakecoreError,
    ),
    ("create format list", lambda t: lakecore.create(fresh(), SCHEMA, ["x"]), ArgumentTypeError),  # type: ignore[arg-type]
    ("migrate to int", lambda t: lakecore.migrate(t.uri, fresh(), 42), LakecoreError),  # type: ignore[arg-type]
    ("migrate missing to", lambda t: lakecore.migrate(t.uri, fresh()), ArgumentTypeError),  # type: ignore[call-arg]
    # reading
    ("snapshot version list", lambda t: t.snapshot(["x"]), LakecoreError),  # type: ignore[arg-type]
    ("snapshot timestamp object", lambda t: t.snapshot(timestamp=object()), LakecoreError),  # type: ignore[arg-type]
    ("history limit -1", lambda t: t.history(-1), InvalidArgumentError),
    ("to_arrow a version as columns", lambda t: t.to_arrow(1), ArgumentTypeError),  # type: ignore[arg-type]
    ("to_arrow one string", lambda t: t.to_arrow("id"), ArgumentTypeError),
    ("to_arrow names not text", lambda t: t.to_arrow([1]), ArgumentTypeError),  # type: ignore[list-item]
    ("to_arrow unknown column", lambda t: t.to_arrow(["nope"]), SchemaError),
    ("to_batches batch_size 0", lambda t: list(t.to_batches(batch_size=0)), InvalidArgumentError),
    ("to_batches columns int", lambda t: list(t.to_batches(5)), ArgumentTypeError),  # type: ignore[arg-type]
    ("head n -1", lambda t: t.head(-1), InvalidArgumentError),
    ("head n text", lambda t: t.head("3"), InvalidArgumentError),  # type: ignore[arg-type]
    ("count where int", lambda t: t.count(42), LakecoreError),  # type: ignore[arg-type]
    ("scan where object", lambda t: t.scan(object()), LakecoreError),  # type: ignore[arg-type]
    ("scan limit text", lambda t: t.scan(limit="x"), InvalidArgumentError),  # type: ignore[arg-type]
    ("changes start list", lambda t: t.changes([0]), LakecoreError),  # type: ignore[arg-type]
    ("snapshot.to_arrow columns int", lambda t: t.snapshot().to_arrow(5), ArgumentTypeError),  # type: ignore[arg-type]
    ("snapshot.head n text", lambda t: t.snapshot().head("x"), InvalidArgumentError),  # type: ignore[arg-type]
    ("scan.to_batches 0", lambda t: list(t.scan().to_batches(0)), InvalidArgumentError),
    ("scan.with_limit -1", lambda t: t.scan().with_limit(-1), InvalidArgumentError),
    # writing (each refused before anything is committed)
    ("append int", lambda t: t.append(42), LakecoreError),
    ("append text", lambda t: t.append("id,region"), LakecoreError),
    ("overwrite None", lambda t: t.overwrite(None), LakecoreError),
    ("update set None", lambda t: t.update(None), ArgumentTypeError),  # type: ignore[arg-type]
    ("update set list", lambda t: t.update(["id"]), LakecoreError),  # type: ignore[arg-type]
    ("upsert int", lambda t: t.upsert(42), LakecoreError),
    ("merge on None", lambda t: t.merge(ROWS, None), LakecoreError),  # type: ignore[arg-type]
    (
        "merge source int",
        lambda t: t.merge(42, "id").when_matched_update_all().execute(),
        LakecoreError,
    ),
    ("set_properties None", lambda t: t.set_properties(None), LakecoreError),  # type: ignore[arg-type]
    ("transaction app_metadata int", lambda t: t.transaction(app_metadata=5), LakecoreError),  # type: ignore[arg-type]
    ("transaction timestamp_ms text", lambda t: t.transaction(timestamp_ms="x"), LakecoreError),  # type: ignore[arg-type]
    ("vacuum retention text", lambda t: t.vacuum("x"), InvalidArgumentError),  # type: ignore[arg-type]
    ("optimize size 0", lambda t: t.optimize(0), LakecoreError),
    ("clean retain 0", lambda t: t.clean(0), LakecoreError),
    ("restore version list", lambda t: t.restore([1]), LakecoreError),  # type: ignore[arg-type]
    ("create_tag name int", lambda t: t.create_tag(5), LakecoreError),  # type: ignore[arg-type]
    ("delete_tag name int", lambda t: t.delete_tag(5), LakecoreError),  # type: ignore[arg-type]
    ("add_constraint name None", lambda t: t.add_constraint(None, "id > 0"), LakecoreError),  # type: ignore[arg-type]
    ("drop_constraint None", lambda t: t.drop_constraint(None), LakecoreError),  # type: ignore[arg-type]
]


@pytest.mark.parametrize("fmt", FORMATS)
def test_wrong_arguments_raise_lakecore_errors(tables: dict[str, Table], fmt: str) -> None:
    """Each case of CASES, on each format: a LakecoreError of the expected class; the table's
    version does not move (a refused write commits nothing)."""
    table = tables[fmt]
    before = table.version
    ran = 0
    for name, call, expected in CASES:
        with pytest.raises(LakecoreError) as info:
            call(table)
        assert isinstance(info.value, expected), (name, info.value)
        if isinstance(info.value, ArgumentTypeError):
            assert isinstance(info.value, TypeError), name  # `except TypeError` still catches
        ran += 1
    assert table.version == before
    assert ran == len(CASES) == 54


def test_translated_errors_chain_their_cause(tables: dict[str, Table]) -> None:
    table = tables["delta"]
    with pytest.raises(ArgumentTypeError) as info:
        table.update(None)  # type: ignore[arg-type]
    assert isinstance(info.value.__cause__, TypeError | AttributeError)
    assert ".update failed" in str(info.value)  # names the call (the innermost public one)
    with pytest.raises(ArgumentTypeError) as columns:
        table.to_arrow(1)  # type: ignore[arg-type]
    assert "version=1" in str(columns.value)  # says where a version goes


# ------------------------------------------------------------------ hypothesis over the readers

ANYTHING = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=6),
    st.binary(max_size=6),
    st.lists(st.one_of(st.integers(), st.text(max_size=3)), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.datetimes(),
    st.just(object()),
)
# Locations: anything but text, which would name real folders of this machine ("/" is walked).
NOT_TEXT = ANYTHING.filter(lambda v: not isinstance(v, str))

READERS: list[tuple[str, Callable[[Table, Any], Any], st.SearchStrategy[Any]]] = [
    ("open uri", lambda t, v: lakecore.open(v), NOT_TEXT),
    ("open format", lambda t, v: lakecore.open(t.uri, format=v), ANYTHING),
    ("open storage_options", lambda t, v: lakecore.open(t.uri, storage_options=v), ANYTHING),
    ("open options", lambda t, v: lakecore.open(t.uri, options=v), ANYTHING),
    ("is_table format", lambda t, v: lakecore.is_table(t.uri, format=v), ANYTHING),
    ("snapshot version", lambda t, v: t.snapshot(v), ANYTHING),
    ("snapshot timestamp", lambda t, v: t.snapshot(timestamp=v), ANYTHING),
    ("history limit", lambda t, v: t.history(v), ANYTHING),
    ("to_arrow columns", lambda t, v: t.to_arrow(v), ANYTHING),
    ("to_arrow version", lambda t, v: t.to_arrow(version=v), ANYTHING),
    ("to_batches batch_size", lambda t, v: list(t.to_batches(batch_size=v)), ANYTHING),
    ("head n", lambda t, v: t.head(v), ANYTHING),
    ("count where", lambda t, v: t.count(v), ANYTHING),
    ("scan columns", lambda t, v: t.scan(columns=v).to_arrow(), ANYTHING),
    ("scan limit", lambda t, v: t.scan(limit=v).to_arrow(), ANYTHING),
    ("changes start", lambda t, v: t.changes(v), ANYTHING),
    ("snapshot.to_arrow columns", lambda t, v: t.snapshot().to_arrow(v), ANYTHING),
    ("scan.with_limit", lambda t, v: t.scan().with_limit(v).to_arrow(), ANYTHING),
]
HYPOTHESIS_RUNS: list[str] = []


@settings(
    max_examples=150,
    deadline=None,
    derandomize=True,  # the same draws every run: the count below is exact, never flaky
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    fmt=st.sampled_from(FORMATS),
    which=st.integers(0, len(READERS) - 1),
    data=st.data(),
)
def _any_value_to_a_reader(
    tables: dict[str, Table], fmt: str, which: int, data: st.DataObject
) -> None:
    name, call, values = READERS[which]
    value = data.draw(values, label=name)
    HYPOTHESIS_RUNS.append(name)
    with contextlib.suppress(LakecoreError):  # anything else fails with the leaked exception
        call(tables[fmt], value)


def test_any_value_to_a_reader_is_an_answer_or_a_lakecore_error(
    tables: dict[str, Table],
) -> None:
    """Every drawn value to every entry point is an answer or a LakecoreError, and the draws
    reached every entry point (counted in the same test: no reliance on test order)."""
    HYPOTHESIS_RUNS.clear()
    _any_value_to_a_reader(tables)
    assert len(HYPOTHESIS_RUNS) >= 150
    assert {name for name, _, _ in READERS} == set(HYPOTHESIS_RUNS)


# ------------------------------------------------------------------ the boundary itself

PUBLIC_CLASSES = (Table, lakecore.Snapshot, Scan, Transaction, MergeBuilder, SchemaUpdateContext)


def test_every_public_method_and_property_is_guarded() -> None:
    guarded = 0
    for cls in PUBLIC_CLASSES:
        for name, member in vars(cls).items():
            if name.startswith("_") and name not in {"__arrow_c_stream__", "__enter__", "__exit__"}:
                continue
            fn = member.fget if isinstance(member, property) else member
            if not inspect.isfunction(fn):
                continue
            assert getattr(fn, "__lakecore_boundary__", False), f"{cls.__name__}.{name}"
            guarded += 1
    for fn in (lakecore.open, lakecore.create, lakecore.migrate, lakecore.is_table):
        assert getattr(fn, "__lakecore_boundary__", False), fn
        guarded += 1
    assert guarded >= 80


TRANSLATIONS: list[tuple[Exception, type[LakecoreError], type[Exception]]] = [
    (TypeError("x"), ArgumentTypeError, TypeError),
    (AttributeError("x"), ArgumentTypeError, TypeError),
    (ValueError("x"), InvalidArgumentError, ValueError),
    (pa.ArrowInvalid("x"), InvalidArgumentError, ValueError),
    (KeyError("x"), InvalidArgumentError, ValueError),
    (IndexError("x"), InvalidArgumentError, ValueError),
    (OSError("x"), StorageError, OSError),
    (PermissionError("denied"), StorageError, OSError),
    (FileNotFoundError("gone"), StorageError, OSError),
    (TimeoutError("slow"), StorageError, OSError),
    (NotImplementedError("x"), UnsupportedFeatureError, LakecoreError),
]


@pytest.mark.parametrize(("raised", "error", "kind"), TRANSLATIONS)
def test_translation_keeps_the_builtin_kind(
    raised: Exception, error: type[LakecoreError], kind: type[Exception]
) -> None:
    out = translated(raised, "Table.x")
    assert isinstance(out, error) and isinstance(out, kind), out
    assert "Table.x" in str(out)


def test_what_is_not_translated() -> None:
    assert translated(SchemaError("x"), "f") is None  # already typed
    assert translated(KeyboardInterrupt(), "f") is None
    assert translated(AssertionError("bug"), "f") is None
    assert translated(RuntimeError("x"), "f") is None


def test_botocore_errors_are_storage_errors() -> None:
    botocore = pytest.importorskip("botocore.exceptions")
    error = botocore.EndpointConnectionError(endpoint_url="http://127.0.0.1:1")
    assert isinstance(translated(error, "lakecore.open"), StorageError)
    client = botocore.ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, "GetObject")
    assert isinstance(translated(client, "lakecore.open"), StorageError)


def test_generators_are_guarded_where_they_are_iterated() -> None:
    @public_function("f")
    def numbers() -> Iterator[int]:
        yield 1
        raise OSError("connection reset")

    items = numbers()
    assert next(items) == 1
    with pytest.raises(StorageError, match="connection reset") as info:
        next(items)
    assert isinstance(info.value.__cause__, OSError)


def test_public_api_guards_properties_and_leaves_internals() -> None:
    @public_api
    class Thing:
        @property
        def value(self) -> int:
            raise ValueError("bad")

        def _internal(self) -> None:
            raise ValueError("internal")

    with pytest.raises(InvalidArgumentError, match=r"Thing\.value failed"):
        _ = Thing().value
    with pytest.raises(ValueError) as info:
        Thing()._internal()
    assert not isinstance(info.value, LakecoreError)


# ------------------------------------------------------------------ storage faults of every kind

READ_VERBS: list[tuple[str, Callable[[Table], Any]]] = [
    ("version", lambda t: t.version),
    ("schema", lambda t: t.schema),
    ("snapshot", lambda t: t.snapshot()),
    ("history", lambda t: t.history()),
    ("to_arrow", lambda t: t.to_arrow()),
    ("to_batches", lambda t: list(t.to_batches())),
    ("head", lambda t: t.head(1)),
    ("count", lambda t: t.count()),
    ("scan.explain", lambda t: t.scan("id > 1").explain()),
    ("files", lambda t: t.snapshot().files()),
    ("append", lambda t: t.append(ROWS)),
    ("delete", lambda t: t.delete("id = 1")),
]


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_kind_of_storage_fault_is_a_lakecore_error(tmp_path: Path, fmt: str) -> None:
    """The store goes away (timeouts, resets, access denied, I/O errors) at each of the first
    calls of each verb: every verb raises a LakecoreError, never a raw OSError."""
    make_table(tmp_path / "t", fmt)
    faulty = FaultyStorage(open_storage(str(tmp_path / "t")))
    table = lakecore.open(str(tmp_path / "t"), storage=faulty)
    ran = 0
    for name, verb in READ_VERBS:
        for fail_at in range(4):  # the four kinds of fault_for
            faulty.arm(fail_at, persistent=True)
            try:
                verb(table)
            except LakecoreError:
                pass
            except Exception as exc:  # pragma: no cover - the failure message
                pytest.fail(f"{fmt} {name} at call {fail_at}: {type(exc).__name__}: {exc}")
            finally:
                faulty.arm(None)
            ran += 1
    assert ran == len(READ_VERBS) * 4 == 48


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_s3_is_a_storage_error_at_every_entry_point() -> None:
    options = {
        "endpoint_url": f"http://127.0.0.1:{_closed_port()}",
        "key": "k",
        "secret": "s",
        "config_kwargs": {"connect_timeout": 1, "retries": {"max_attempts": 1}},
    }
    uri = "s3://bucket/table"
    calls: list[Callable[[], Any]] = [
        lambda: lakecore.open(uri, storage_options=options),
        lambda: lakecore.is_table(uri, storage_options=options),
        lambda: lakecore.create(uri, SCHEMA, storage_options=options),
        lambda: lakecore.migrate(uri, fresh(), "delta", storage_options=options),
    ]
    for call in calls:
        with pytest.raises(LakecoreError) as info:
            call()
        assert isinstance(info.value, StorageError | lakecore.MigrationError), info.value


# ------------------------------------------------------------------ S3 hints and options


def test_missing_s3fs_names_the_s3_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "s3fs", None)  # import s3fs -> ImportError
    loaded = sys.modules["fsspec.registry"]._registry  # classes fsspec imported already
    for scheme in ("s3", "s3a"):
        monkeypatch.delitem(loaded, scheme, raising=False)
    with pytest.raises(UnsupportedFeatureError) as info:
        lakecore.open("s3://bucket/table")
    assert "pip install 'lakecore[s3]'" in str(info.value)


AWS_CASES: list[tuple[dict[str, Any], dict[str, Any]]] = [
    (
        {
            "AWS_ACCESS_KEY_ID": "k",
            "AWS_SECRET_ACCESS_KEY": "s",
            "AWS_SESSION_TOKEN": "t",
            "AWS_REGION": "eu-west-1",
            "AWS_ENDPOINT_URL": "http://127.0.0.1:9000",
        },
        {
            "key": "k",
            "secret": "s",
            "token": "t",
            "client_kwargs": {"region_name": "eu-west-1"},
            "endpoint_url": "http://127.0.0.1:9000",
        },
    ),
    (
        {"aws_access_key_id": "k", "aws_endpoint": "http://e"},
        {"key": "k", "endpoint_url": "http://e"},
    ),
    ({"AWS_DEFAULT_REGION": "us-east-1"}, {"client_kwargs": {"region_name": "us-east-1"}}),
    (
        {"AWS_REGION": "r", "client_kwargs": {"verify": False}},
        {"client_kwargs": {"verify": False, "region_name": "r"}},
    ),
    ({"AWS_ALLOW_HTTP": "true", "AWS_S3_ALLOW_UNSAFE_RENAME": "true"}, {}),
    ({"AWS_CONDITIONAL_PUT": "etag"}, {}),
    ({"AWS_SKIP_SIGNATURE": "true"}, {"anon": True}),
    ({"AWS_PROFILE": "dev"}, {"profile": "dev"}),
    ({"key": "k", "AWS_ACCESS_KEY_ID": "k"}, {"key": "k"}),  # the same value twice is fine
    ({"key": "k", "endpoint_url": "http://e"}, {"key": "k", "endpoint_url": "http://e"}),
]


@pytest.mark.parametrize(("given", "expected"), AWS_CASES)
def test_deltalake_style_aws_options_are_translated(
    given: dict[str, Any], expected: dict[str, Any]
) -> None:
    assert translate_aws_options(given) == expected


@pytest.mark.parametrize(
    ("given", "match"),
    [
        ({"AWS_S3_LOCKING_PROVIDER": "dynamodb"}, "conditional writes"),
        ({"AWS_CONDITIONAL_PUT": "dynamo:locks"}, "conditional writes"),
        ({"AWS_NO_SUCH_OPTION": "1"}, "unknown S3 storage option AWS_NO_SUCH_OPTION"),
        ({"key": "a", "AWS_ACCESS_KEY_ID": "b"}, "both set"),
    ],
)
def test_aws_options_lakecore_cannot_honour_are_refused(given: dict[str, Any], match: str) -> None:
    with pytest.raises(InvalidArgumentError, match=match):
        translate_aws_options(given)
    with pytest.raises(InvalidArgumentError, match=match):
        lakecore.open("s3://bucket/table", storage_options=given)


@pytest.mark.s3
def test_open_and_write_s3_with_deltalake_style_options(
    s3_uri: str, s3_endpoint: str, s3_storage_options: dict[str, Any]
) -> None:
    from tests.conftest import S3_KEY, S3_REGION, S3_SECRET

    aws = {
        "AWS_ACCESS_KEY_ID": S3_KEY,
        "AWS_SECRET_ACCESS_KEY": S3_SECRET,
        "AWS_REGION": S3_REGION,
        "AWS_ENDPOINT_URL": s3_endpoint,
        "AWS_ALLOW_HTTP": "true",
    }
    table = lakecore.create(s3_uri, SCHEMA, storage_options=aws)
    table.append(ROWS)
    assert lakecore.is_table(s3_uri, storage_options=aws)
    reopened = lakecore.open(s3_uri, storage_options=s3_storage_options)
    assert reopened.to_arrow().num_rows == 2
    assert lakecore.open(s3_uri, storage_options=aws).count() == 2


@pytest.mark.s3
def test_a_missing_bucket_is_a_lakecore_error(
    s3_bucket: str, s3_storage_options: dict[str, Any]
) -> None:
    uri = "s3://no-such-bucket-lakecore/t"
    with pytest.raises(LakecoreError):
        lakecore.open(uri, storage_options=s3_storage_options)
    assert not lakecore.is_table(uri, storage_options=s3_storage_options)
    assert (
        lakecore.is_table(f"s3://{s3_bucket}/nothing-here", storage_options=s3_storage_options)
        is False
    )


# ------------------------------------------------------------------ versions across formats


@pytest.mark.parametrize("fmt", FORMATS)
def test_version_of_an_empty_table_matches_its_snapshot(tmp_path: Path, fmt: str) -> None:
    """``Table.version`` never raises on a table without rows, and equals ``snapshot().version``,
    which ``snapshot(version=...)`` loads back (Hudi: ``""`` before the first commit)."""
    table = lakecore.create(str(tmp_path), SCHEMA, fmt, [], PROPERTIES[fmt])
    version = table.version
    assert version == table.snapshot().version
    assert table.snapshot(version=version).to_arrow().num_rows == 0
    assert table.schema == table.snapshot().schema
    assert table.schema.names == ["id", "region"] or fmt == "hudi"


def test_hudi_empty_version_is_empty_text(tmp_path: Path) -> None:
    table = lakecore.create(str(tmp_path), SCHEMA, "hudi", [], {"record_key": "id"})
    assert table.version == ""
    table.append(ROWS)
    assert table.version != "" and table.version == table.snapshot().version


@pytest.mark.parametrize("fmt", FORMATS)
def test_to_arrow_takes_the_same_arguments_on_table_and_snapshot(
    tables: dict[str, Table], fmt: str
) -> None:
    table = tables[fmt]
    snapshot = table.snapshot()
    assert list(inspect.signature(Table.to_arrow).parameters)[:2] == ["self", "columns"]
    assert list(inspect.signature(lakecore.Snapshot.to_arrow).parameters) == ["self", "columns"]
    assert inspect.signature(Table.to_arrow).parameters["version"].kind is (
        inspect.Parameter.KEYWORD_ONLY
    )
    assert table.to_arrow(["id"]).equals(snapshot.to_arrow(["id"]))
    assert table.to_arrow(columns=["id"], version=snapshot.version).num_rows == 2


def test_timestamps_given_as_dates_are_no_argument_errors(tables: dict[str, Table]) -> None:
    # A datetime is a timestamp, not a wrong type: the boundary must not turn answers into
    # errors (VersionNotFoundError only where the table has no version then).
    with pytest.raises(lakecore.VersionNotFoundError):
        tables["delta"].snapshot(timestamp=dt.datetime(2000, 1, 1))


SECONDS = [1_700_000_000.5, 1_700_000_000.0, 1e9, 86_400.25]


@pytest.mark.parametrize("value", SECONDS)
def test_float_epoch_seconds_are_refused_not_read_as_milliseconds(
    tables: dict[str, Table], value: float
) -> None:
    """deltalake refuses them; read as milliseconds they would name a day of 1970."""
    with pytest.raises(lakecore.VersionNotFoundError, match="looks like epoch seconds") as info:
        tables["delta"].snapshot(timestamp=value)
    assert str(int(value * 1000)) in str(info.value)  # the value meant


def test_float_epoch_milliseconds_are_taken(tables: dict[str, Table]) -> None:
    table = tables["delta"]
    latest = table.snapshot()
    assert latest.timestamp is not None
    assert table.snapshot(timestamp=float(latest.timestamp)).version == latest.version
    assert table.snapshot(timestamp=latest.timestamp + 0.5).version == latest.version


# ------------------------------------------------------------------ what deltalake rejects

UNKNOWN_DELTA_KEYS = ["delta.enableChangDataFeed", "delta.appendonly", "delta.noSuchProperty"]


@pytest.mark.parametrize("key", UNKNOWN_DELTA_KEYS)
def test_unknown_delta_properties_are_refused(tmp_path: Path, key: str) -> None:
    with pytest.raises(InvalidArgumentError, match=f"unknown Delta table property {key}"):
        lakecore.create(str(tmp_path / "t"), SCHEMA, properties={key: "true"})
    assert not lakecore.is_table(str(tmp_path / "t"))
    table = make_table(tmp_path / "u", "delta")
    version = table.version
    with pytest.raises(InvalidArgumentError, match=key):
        table.set_properties({key: "true"})
    assert table.version == version


def test_delta_property_families_and_other_namespaces_pass(tmp_path: Path) -> None:
    properties = {
        "delta.constraints.positive": "id > 0",
        "delta.feature.deletionVectors": "supported",
        "delta.universalFormat.enabledFormats": "iceberg",
        "delta.dataSkippingStatsColumns": "id",
        "delta.dataSkippingStringPrefixLength": "16",  # lakecore's own stats writer reads it
        "myapp.owner": "team",
    }
    table = lakecore.create(str(tmp_path / "t"), SCHEMA, properties=properties)
    assert table.snapshot().properties == properties


def corpus_delta_properties() -> dict[str, set[str]]:
    """Every ``delta.*`` table property set by a commit of a corpus Delta table (written by
    Spark and delta-rs), with the tables that set it."""
    from tests.corpus import CORPUS

    found: dict[str, set[str]] = {}
    for log in sorted((CORPUS / "delta").glob("*/_delta_log")):
        for commit in log.glob("*.json"):
            for line in commit.read_text(errors="replace").splitlines():
                if '"metaData"' not in line:
                    continue
                try:
                    configuration = json.loads(line)["metaData"].get("configuration") or {}
                except (ValueError, KeyError, AttributeError):
                    continue  # the corpus has malformed logs on purpose
                for key in configuration:
                    if key.startswith("delta."):
                        found.setdefault(key, set()).add(log.parent.name)
    return found


def test_every_delta_property_of_the_corpus_is_known() -> None:
    """The refusal of unknown keys must not refuse a key real writers set."""
    from lakecore_delta.write.properties import validate_properties

    found = corpus_delta_properties()
    if not found:
        pytest.skip("the corpus is not there (LAKECORE_CORPUS)")
    for key, tables in sorted(found.items()):
        value = {"delta.feature.catalogOwned": "supported"}.get(key)
        try:
            validate_properties({key: value or _valid_value(key)})
        except InvalidArgumentError as exc:
            if "unknown Delta table property" in str(exc):
                pytest.fail(f"{key} (set in {sorted(tables)[:3]}) is refused as unknown")
    assert len(found) >= 15


def _valid_value(key: str) -> str:
    from lakecore_delta.write import properties as p

    if key in p.BOOLEAN_KEYS:
        return "true"
    if key in p.INTEGER_KEYS:
        return str(p.INTEGER_KEYS[key][0])
    if key in p.INTERVAL_KEYS:
        return "interval 7 days"
    if key in p.SIZE_KEYS:
        return "128mb"
    if key in p.CHOICES:
        return sorted(p.CHOICES[key])[0]
    return "supported" if key.startswith(p.FEATURE_PREFIX) else "x"
