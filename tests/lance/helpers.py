"""Helpers of the Lance tests: pylance as the reference engine, comparisons, manifest surgery."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pyarrow as pa

import lakecore
from lakecore.model.schema import strip_metadata

lance = __import__("pytest").importorskip("lance", reason="needs pylance (the lance extra)")


def sort_rows(table: pa.Table, key: str = "id") -> pa.Table:
    """``table`` sorted by ``key``, without schema or field metadata."""
    table = table.cast(strip_metadata(table.schema)).replace_schema_metadata(None)
    return table.sort_by(key) if key in table.column_names else table


def reference(path: Path, version: int | str | None = None) -> pa.Table:
    """The rows pylance's dataset reader returns for ``version``."""
    return lance.dataset(str(path), version=version).to_table()


def assert_same_as_pylance(path: Path, key: str = "id") -> int:
    """Every version of the dataset at ``path`` reads equal in lakecore and pylance.

    Returns how many versions were compared.
    """
    versions = [v["version"] for v in lance.dataset(str(path)).versions()]
    table = lakecore.open(str(path))
    for v in versions:
        want = sort_rows(reference(path, v), key)
        got = sort_rows(table.snapshot(version=v).to_arrow(), key)
        assert got.schema == want.schema, f"v{v}: {got.schema} != {want.schema}"
        assert got.equals(want), f"v{v}: rows differ"
    return len(versions)


def rewrite_manifest(path: Path, edit: Any) -> None:
    """Decode the manifest file ``path``, apply ``edit(manifest)``, write it back framed."""
    from lakecore_lance.proto import table_pb2

    data = path.read_bytes()
    position, major, minor = struct.unpack("<qHH", data[-16:-4])
    (length,) = struct.unpack("<I", data[position : position + 4])
    manifest = table_pb2.Manifest()
    manifest.ParseFromString(data[position + 4 : position + 4 + length])
    edit(manifest)
    body = manifest.SerializeToString()
    framed = struct.pack("<I", len(body)) + body
    path.write_bytes(framed + struct.pack("<qHH", 0, major, minor) + b"LANC")
