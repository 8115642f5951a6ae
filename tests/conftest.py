"""Shared fixtures: a moto S3 server on 127.0.0.1 for tests marked ``s3``."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

S3_BUCKET = "lakecore-test"
S3_REGION = "us-east-1"
S3_KEY = S3_SECRET = "testing"


def _serial_moto_server(moto_server: Any) -> Any:
    """A moto server that handles one request at a time.

    moto checks ``If-None-Match: *`` and then stores the object as two steps; on a threaded
    server two racing conditional PUTs can both pass the check (seen: two writers both got
    version 26 of 8x20 concurrent appends). Real S3 decides atomically; serving requests one
    at a time gives moto the same atomicity.
    """
    from werkzeug.serving import make_server

    class SerialMotoServer(moto_server.ThreadedMotoServer):  # type: ignore[misc]
        def _server_entry(self) -> None:
            app = moto_server.DomainDispatcherApplication(moto_server.create_backend_app)
            self._server = make_server(
                self._ip_address,
                self._port,
                app,
                threaded=False,
                request_handler=moto_server.MotoRequestHandler,
            )
            self._server_ready_event.set()
            self._server.serve_forever()

    return SerialMotoServer(ip_address="127.0.0.1", port=0, verbose=False)


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """Start one moto S3 server for the session, bound to 127.0.0.1 on a free port."""
    moto_server = pytest.importorskip(
        "moto.server", reason="needs moto[server] (pip install moto[server])"
    )
    server = _serial_moto_server(moto_server)
    server.start()
    try:
        host, port = server.get_host_and_port()
        assert host == "127.0.0.1", host
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture(scope="session")
def s3_bucket(s3_endpoint: str) -> str:
    """Create the session's bucket on the moto server and return its name."""
    import boto3

    client = boto3.client(
        "s3",
        endpoint_url=s3_endpoint,
        aws_access_key_id=S3_KEY,
        aws_secret_access_key=S3_SECRET,
        region_name=S3_REGION,
    )
    client.create_bucket(Bucket=S3_BUCKET)
    return S3_BUCKET


@pytest.fixture(scope="session")
def s3_storage_options(s3_endpoint: str) -> dict[str, Any]:
    """The ``storage_options`` that point s3fs at the moto server."""
    return {
        "endpoint_url": s3_endpoint,
        "key": S3_KEY,
        "secret": S3_SECRET,
        "client_kwargs": {"region_name": S3_REGION},
    }


@pytest.fixture
def s3_uri(s3_bucket: str) -> str:
    """A fresh, empty location in the session's bucket."""
    return f"s3://{s3_bucket}/{uuid.uuid4().hex}"
