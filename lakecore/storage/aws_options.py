"""deltalake-style S3 ``storage_options`` (``AWS_ACCESS_KEY_ID`` ...) translated to s3fs's.

Users coming from deltalake (object_store) pass ``{"AWS_ACCESS_KEY_ID": ..., "AWS_REGION": ...,
"AWS_ENDPOINT_URL": ...}``; s3fs takes ``key``, ``secret``, ``client_kwargs={"region_name": ...}``,
``endpoint_url``. Keys are matched without regard to case, with or without the ``aws_`` prefix,
as object_store does. A key that would change how lakecore commits, or that lakecore does not
know, is refused by name rather than passed to s3fs (which would fail on it with a message
about an unexpected keyword, or worse ignore it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lakecore.errors import InvalidArgumentError

TOP_LEVEL = {
    "access_key_id": "key",
    "secret_access_key": "secret",
    "session_token": "token",
    "token": "token",
    "endpoint_url": "endpoint_url",
    "endpoint": "endpoint_url",
    "profile": "profile",
}
"""object_store key (lower case, no ``aws_`` prefix) -> s3fs argument."""

REGION_KEYS = frozenset({"region", "default_region"})
"""Keys naming the bucket's region (s3fs: ``client_kwargs["region_name"]``)."""

ANONYMOUS_KEYS = frozenset({"skip_signature", "no_sign_request"})
"""Keys asking for unsigned requests (s3fs: ``anon=True``)."""

NO_EFFECT = frozenset({"allow_http", "s3_allow_unsafe_rename", "conditional_put"})
"""Accepted and not needed: s3fs speaks HTTP to an ``http://`` endpoint, and lakecore always
commits with S3 conditional writes (``If-None-Match``), which is safe without a lock."""

REFUSED = {
    "s3_locking_provider": (
        "lakecore commits to S3 with conditional writes, not a DynamoDB lock; writers that "
        "use the lock (delta-rs with AWS_S3_LOCKING_PROVIDER) do not coordinate with it"
    ),
}
"""Keys lakecore cannot honour, with why."""

TRUE = frozenset({"true", "1", "yes"})


def is_aws_key(key: object) -> bool:
    """Whether ``key`` is an object_store-style key (``AWS_*`` in any case)."""
    return isinstance(key, str) and key.lower().startswith("aws_")


def translate_aws_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``options`` with every ``AWS_*`` key replaced by its s3fs argument.

    Other keys pass unchanged. Raises ``InvalidArgumentError`` naming the key for an ``AWS_*``
    key lakecore does not know or cannot honour, and when an ``AWS_*`` key and an s3fs key
    give the same setting.
    """
    out = {k: v for k, v in options.items() if not is_aws_key(k)}
    client_kwargs = dict(out.get("client_kwargs") or {})
    for key, value in options.items():
        if not is_aws_key(key):
            continue
        name = key.lower()[len("aws_") :]
        if name in REFUSED or (name == "conditional_put" and _is_dynamo(value)):
            reason = REFUSED.get(name, REFUSED["s3_locking_provider"])
            raise InvalidArgumentError(f"storage option {key}={value!r}: {reason}")
        if name in NO_EFFECT:
            continue
        if name in TOP_LEVEL:
            _set(out, TOP_LEVEL[name], value, key)
        elif name in REGION_KEYS:
            _set(client_kwargs, "region_name", value, key)
        elif name in ANONYMOUS_KEYS:
            _set(out, "anon", str(value).lower() in TRUE, key)
        else:
            known = sorted(
                f"AWS_{k.upper()}" for k in (*TOP_LEVEL, *REGION_KEYS, *ANONYMOUS_KEYS, *NO_EFFECT)
            )
            raise InvalidArgumentError(
                f"unknown S3 storage option {key}; lakecore takes {', '.join(known)}, or s3fs's "
                "own options (key, secret, token, endpoint_url, client_kwargs, ...)"
            )
    if client_kwargs:
        out["client_kwargs"] = client_kwargs
    return out


def _is_dynamo(value: object) -> bool:
    """Whether an ``AWS_CONDITIONAL_PUT`` value asks for a DynamoDB lock (``dynamo:<table>``),
    which the writers using it hold and lakecore would not take part in (``etag`` is fine)."""
    return str(value).strip().lower().startswith("dynamo")


def _set(target: dict[str, Any], name: str, value: Any, key: str) -> None:
    if name in target and target[name] != value:
        raise InvalidArgumentError(
            f"storage options {key} and {name} both set the same thing, to different values"
        )
    target[name] = value
