"""S3-only behaviour: the conditional PUT on the wire, and no stale views of other writers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from lakecore.storage import FsspecStorage, fsspec_storage

pytestmark = pytest.mark.s3

s3fs = pytest.importorskip("s3fs", reason="needs s3fs (pip install 'lakecore[s3]')")


@pytest.fixture
def storage(s3_uri: str, s3_storage_options: dict[str, Any]) -> FsspecStorage:
    return FsspecStorage(s3_uri, storage_options=s3_storage_options)


@pytest.fixture
def boto_client(s3_endpoint: str, s3_storage_options: dict[str, Any]) -> Any:
    """A plain boto3 client: another writer that lakecore's s3fs instance knows nothing of."""
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=s3_endpoint,
        aws_access_key_id=s3_storage_options["key"],
        aws_secret_access_key=s3_storage_options["secret"],
        region_name=s3_storage_options["client_kwargs"]["region_name"],
    )


@pytest.fixture
def requests_sent(storage: FsspecStorage) -> Iterator[list[tuple[str, dict[str, str]]]]:
    """Record (operation, headers) of every request the storage's s3fs client sends."""
    storage.put("warm-up", b"")  # s3fs creates its botocore client lazily
    fs = storage._fs  # white-box: the storage's own s3fs instance, to listen on its client
    assert isinstance(fs, s3fs.S3FileSystem)
    sent: list[tuple[str, dict[str, str]]] = []

    def record(request: Any, event_name: str, **kwargs: Any) -> None:
        headers = {k: v.decode() if isinstance(v, bytes) else v for k, v in request.headers.items()}
        sent.append((event_name.rsplit(".", 1)[-1], headers))

    fs.s3.meta.events.register("before-send.s3", record)
    try:
        yield sent
    finally:
        fs.s3.meta.events.unregister("before-send.s3", record)


def _key(storage: FsspecStorage, path: str) -> tuple[str, str]:
    bucket, _, key = storage.resolve(path).removeprefix("s3://").partition("/")
    return bucket, key


def test_put_if_absent_is_one_conditional_put(
    storage: FsspecStorage, requests_sent: list[tuple[str, dict[str, str]]]
) -> None:
    storage.put_if_absent("log/00.json", b"first")
    with pytest.raises(FileExistsError):
        storage.put_if_absent("log/00.json", b"second")
    # Never "check exists, then write": each call is exactly one PutObject with If-None-Match.
    assert [op for op, _ in requests_sent] == ["PutObject", "PutObject"]
    assert all(headers.get("If-None-Match") == "*" for _, headers in requests_sent)
    assert storage.read("log/00.json") == b"first"


def test_put_if_absent_empty_body_is_conditional(
    storage: FsspecStorage, requests_sent: list[tuple[str, dict[str, str]]]
) -> None:
    # s3fs's open(path, "xb") turns an empty file into an unconditional touch(); ours must not.
    storage.put("log/00.json", b"existing")
    requests_sent.clear()
    with pytest.raises(FileExistsError):
        storage.put_if_absent("log/00.json", b"")
    assert [(op, h.get("If-None-Match")) for op, h in requests_sent] == [("PutObject", "*")]
    assert storage.read("log/00.json") == b"existing"


def test_put_if_absent_loses_to_another_writer(storage: FsspecStorage, boto_client: Any) -> None:
    bucket, key = _key(storage, "log/00.json")
    boto_client.put_object(Bucket=bucket, Key=key, Body=b"theirs", IfNoneMatch="*")
    with pytest.raises(FileExistsError):
        storage.put_if_absent("log/00.json", b"ours")
    assert boto_client.get_object(Bucket=bucket, Key=key)["Body"].read() == b"theirs"


def test_sees_files_written_by_another_writer(storage: FsspecStorage, boto_client: Any) -> None:
    storage.put("log/00.json", b"0")
    assert [f.path for f in storage.list_dir("log")] == ["log/00.json"]
    assert not storage.exists("log/01.json")  # s3fs may now hold a cached listing of "log"

    bucket, key = _key(storage, "log/01.json")
    boto_client.put_object(Bucket=bucket, Key=key, Body=b"one")
    # head/exists first: a listing would refresh s3fs's cache and hide a stale head.
    assert storage.exists("log/01.json")
    assert storage.head("log/01.json").size == 3
    assert storage.read("log/01.json") == b"one"
    with storage.open_input("log/01.json") as f:
        assert f.read() == b"one"
    assert [f.path for f in storage.list_dir("log")] == ["log/00.json", "log/01.json"]
    assert [f.path for f in storage.list_from("log/01")] == ["log/01.json"]

    bucket, key = _key(storage, "log/02.json")
    boto_client.put_object(Bucket=bucket, Key=key, Body=b"two")
    assert [f.path for f in storage.list_from("log/01")] == ["log/01.json", "log/02.json"]


def test_sees_overwrites_and_deletes_by_another_writer(
    storage: FsspecStorage, boto_client: Any
) -> None:
    storage.put("log/00.json", b"old")
    assert storage.read("log/00.json") == b"old"
    assert storage.head("log/00.json").size == 3
    bucket, key = _key(storage, "log/00.json")

    assert [f.size for f in storage.list_dir("log")] == [3]  # s3fs may cache this listing

    boto_client.put_object(Bucket=bucket, Key=key, Body=b"newer")
    with storage.open_input("log/00.json") as f:  # a stale cached size would truncate this
        assert f.read() == b"newer"
    assert storage.read("log/00.json") == b"newer"
    assert storage.head("log/00.json").size == 5

    boto_client.delete_object(Bucket=bucket, Key=key)
    assert not storage.exists("log/00.json")
    assert storage.list_dir("log") == []
    with pytest.raises(FileNotFoundError):
        storage.read("log/00.json")
    storage.put_if_absent("log/00.json", b"again")
    assert storage.read("log/00.json") == b"again"


def test_paths_are_relative_to_the_root(storage: FsspecStorage) -> None:
    storage.put("a/b.parquet", b"x")
    assert storage.resolve("a/b.parquet") == f"{storage.root}/a/b.parquet"
    assert storage.root.startswith("s3://")
    assert [f.path for f in storage.list_dir(storage.resolve("a"))] == ["a/b.parquet"]


def test_whole_file_read_is_one_get(
    storage: FsspecStorage, requests_sent: list[tuple[str, dict[str, str]]]
) -> None:
    storage.put("log/00.json", b"0" * 1000)
    requests_sent.clear()
    assert storage.read("log/00.json") == b"0" * 1000
    assert storage.read("log/00.json", 10, 20) == b"0" * 10
    assert [op for op, _ in requests_sent] == ["GetObject", "GetObject"]
    assert requests_sent[1][1].get("Range") == "bytes=10-19"


class ConflictingS3:
    """A stand-in s3fs: answers the first ``conflicts`` PutObjects with S3's 409, then ``final``."""

    def __init__(self, conflicts: int, final: tuple[int, str] | None = None) -> None:
        from fsspec.asyn import get_loop

        self.loop = get_loop()
        self.conflicts = conflicts
        self.final = final
        self.calls: list[dict[str, Any]] = []

    def split_path(self, path: str) -> tuple[str, str, None]:
        bucket, _, key = path.partition("/")
        return bucket, key, None

    def invalidate_cache(self, path: str) -> None:
        pass

    async def _call_s3(self, method: str, **kwargs: Any) -> dict[str, Any]:
        from botocore.exceptions import ClientError
        from s3fs.errors import translate_boto_error

        self.calls.append({"method": method, **kwargs})
        if len(self.calls) <= self.conflicts:
            status, code = 409, "ConditionalRequestConflict"
        elif self.final is not None:
            status, code = self.final
        else:
            return {}
        response: Any = {
            "Error": {"Code": code, "Message": code},
            "ResponseMetadata": {"HTTPStatusCode": status},
        }
        raise translate_boto_error(ClientError(response, "PutObject"))


def test_conditional_put_retries_a_409_conflict(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fsspec_storage.time, "sleep", lambda seconds: None)
    fs = ConflictingS3(conflicts=2)
    fsspec_storage._put_if_absent_s3(fs, "bucket/log/00.json", b"data")
    assert len(fs.calls) == 3
    assert all(c["method"] == "put_object" and c["IfNoneMatch"] == "*" for c in fs.calls)


def test_conditional_put_409_then_412_is_file_exists(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fsspec_storage.time, "sleep", lambda seconds: None)
    fs = ConflictingS3(conflicts=1, final=(412, "PreconditionFailed"))
    with pytest.raises(FileExistsError):
        fsspec_storage._put_if_absent_s3(fs, "bucket/log/00.json", b"data")
    assert len(fs.calls) == 2


def test_conditional_put_gives_up_on_endless_conflicts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fsspec_storage.time, "sleep", lambda seconds: None)
    fs = ConflictingS3(conflicts=100)
    with pytest.raises(OSError) as info:
        fsspec_storage._put_if_absent_s3(fs, "bucket/log/00.json", b"data")
    assert not isinstance(info.value, FileExistsError)
    assert len(fs.calls) == fsspec_storage.S3_CONFLICT_RETRIES + 1


def test_other_errors_are_not_file_exists() -> None:
    fs = ConflictingS3(conflicts=0, final=(403, "AccessDenied"))
    with pytest.raises(PermissionError):
        fsspec_storage._put_if_absent_s3(fs, "bucket/log/00.json", b"data")
    assert len(fs.calls) == 1
