"""Instant file payloads: the two encodings of an instant's details, and field coercion.

Hudi stores an instant's details in its timeline file in one of two encodings:

* JSON (Jackson) for commit / deltacommit / replacecommit metadata of table versions <= 7
  (completed and inflight files);
* an Avro object container file (``Obj\\x01`` magic, one record, writer schema embedded) for
  every other kind, and for commit metadata of table version 8+.

``decode_payload`` looks at the bytes, not the version, so it reads either; requested and
inflight files are often empty, and empty content decodes to None. The typed decoders of each
action (``commit_metadata``, ``clean_metadata``, ``rollback_metadata``, ``rewrite_plans``)
build on it and coerce fields with the helpers here, which map a missing (None) field to an
empty value and raise ``TypeError`` / ``ValueError`` on a malformed one (the decoders turn
those into ``CorruptTableError`` naming the file).
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from typing import Any

import fastavro

from lakecore.errors import CorruptTableError

AVRO_MAGIC = b"Obj\x01"


def decode_payload(data: bytes, path: str) -> dict[str, Any] | None:
    """Decode an instant file's bytes (Avro container or JSON) into a dict; None when empty.

    Raises:
        CorruptTableError: the bytes are neither a readable Avro container nor a JSON object.
    """
    if not data.strip():
        return None
    if data.startswith(AVRO_MAGIC):
        try:
            records = list(fastavro.reader(io.BytesIO(data)))
        except Exception as exc:  # fastavro raises many types on damaged input
            raise CorruptTableError(f"{path}: unreadable Avro instant metadata: {exc}") from None
        if not records or not isinstance(records[0], dict):
            raise CorruptTableError(f"{path}: Avro instant metadata holds no record")
        return records[0]
    try:
        decoded = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorruptTableError(
            f"{path}: instant metadata is neither Avro nor JSON: {exc}"
        ) from None
    if not isinstance(decoded, dict):
        raise CorruptTableError(f"{path}: instant metadata JSON is not an object")
    return decoded


def encode_avro(schema: Mapping[str, Any], record: Mapping[str, Any]) -> bytes:
    """One-record Avro container, uncompressed, as Hudi's timeline serializer writes."""
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(dict(schema)), [dict(record)], codec="null")
    return out.getvalue()


def opt_str(value: Any) -> str | None:
    """``value`` as a string; None stays None."""
    return None if value is None else str(value)


def as_int(value: Any, default: int = 0) -> int:
    """``value`` as an int; None gives ``default``."""
    return default if value is None else int(value)


def opt_int(value: Any) -> int | None:
    """``value`` as an int; None stays None."""
    return None if value is None else int(value)


def str_tuple(value: Any) -> tuple[str, ...]:
    """A list field as a tuple of strings; None or empty gives ()."""
    return tuple(str(v) for v in value) if value else ()


def str_map(value: Any) -> dict[str, str]:
    """A map field as str -> str, dropping null values; None or empty gives {}."""
    return {str(k): str(v) for k, v in value.items() if v is not None} if value else {}


def int_map(value: Any) -> dict[str, int]:
    """A map field as str -> int; None or empty gives {}."""
    return {str(k): int(v) for k, v in value.items()} if value else {}
