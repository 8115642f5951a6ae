"""The API boundary: every exception that leaves a public call of lakecore is a LakecoreError.

Code inside lakecore raises its own typed errors where it knows what went wrong (a missing
column, a corrupt log, a storage fault during a commit). What it did not foresee - a wrong
type passed where no check looked (``'int' object is not iterable``), a pyarrow ``ArrowInvalid``,
an ``OSError`` or botocore error outside any ``storage_faults`` block - is translated here, once,
where the call enters lakecore: ``public_function`` wraps ``lakecore.open``/``create``/
``migrate``/``is_table``, ``public_api`` every public method and property of ``Table``,
``Snapshot``, ``Scan``, ``Transaction`` and the builders. The original exception is the
``__cause__``. Translation keeps the builtin kind, so ``except TypeError``/``ValueError``/
``OSError`` around a lakecore call still catches what it caught before:

- ``TypeError``/``AttributeError`` -> ``ArgumentTypeError`` (also a ``TypeError``)
- ``ValueError``/``LookupError`` -> ``InvalidArgumentError`` (also a ``ValueError``)
- ``OSError`` and botocore's errors -> ``StorageError`` (also an ``OSError``)
- ``NotImplementedError`` -> ``UnsupportedFeatureError``

Everything else (``KeyboardInterrupt``, ``MemoryError``, ``RecursionError``, an
``AssertionError`` from a broken invariant) passes unchanged: those are not the caller's doing
and not a condition a caller can act on. Iterators returned by a wrapped call (``to_batches``)
are wrapped too, since their faults surface where the caller iterates.
"""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Callable, Generator, Iterator
from typing import Any, TypeVar, cast

from lakecore.errors import (
    ArgumentTypeError,
    InvalidArgumentError,
    LakecoreError,
    StorageError,
    UnsupportedFeatureError,
)

F = TypeVar("F", bound=Callable[..., Any])
C = TypeVar("C", bound=type)

WRAPPED_DUNDERS = frozenset({"__arrow_c_stream__", "__enter__", "__exit__"})
"""Special methods users reach through syntax or protocols (``with``, Arrow consumers)."""


def translated(exc: BaseException, what: str) -> LakecoreError | None:
    """The LakecoreError ``exc`` (raised by ``what``, e.g. ``"Table.append"``) reaches users
    as, or None when ``exc`` must pass unchanged (it is one already, or not translatable)."""
    if isinstance(exc, LakecoreError) or not isinstance(exc, Exception):
        return None
    detail = f"{what} failed: {type(exc).__name__}: {exc}"
    if isinstance(exc, OSError) or _is_backend_error(exc):
        return StorageError(f"{what} failed: the storage raised {type(exc).__name__}: {exc}")
    if isinstance(exc, TypeError | AttributeError):
        return ArgumentTypeError(detail)
    if isinstance(exc, ValueError | LookupError):
        return InvalidArgumentError(detail)
    if isinstance(exc, NotImplementedError):
        return UnsupportedFeatureError(what, f"{detail} (not implemented)")
    return None


def _is_backend_error(exc: BaseException) -> bool:
    """Whether ``exc`` is one of botocore's exceptions (an S3 request that failed)."""
    module = type(exc).__module__
    return module == "botocore" or module.startswith(("botocore.", "aiobotocore"))


def public_function(what: str) -> Callable[[F], F]:
    """Decorate a public function so that it raises only LakecoreErrors (see the module)."""

    def decorate(fn: F) -> F:
        return cast(F, _guarded(fn, what))

    return decorate


def public_api(cls: C) -> C:
    """Class decorator: guard every public method and property ``cls`` itself defines.

    Names starting with ``_`` are internal (callers inside lakecore), except the special
    methods of ``WRAPPED_DUNDERS``. Apply it outermost (above ``@dataclass``), so it sees the
    final class.
    """
    for name, member in list(vars(cls).items()):
        if name.startswith("_") and name not in WRAPPED_DUNDERS:
            continue
        what = f"{cls.__name__}.{name}"
        if isinstance(member, property) and member.fget is not None:
            setattr(cls, name, property(_guarded(member.fget, what), member.fset, member.fdel))
        elif isinstance(member, types.FunctionType):
            setattr(cls, name, _guarded(member, what))
    return cls


def _guarded(fn: Callable[..., Any], what: str) -> Callable[..., Any]:
    if getattr(fn, "__lakecore_boundary__", False):
        return fn

    @functools.wraps(fn)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        try:
            result = fn(*args, **kwargs)
        except Exception as exc:
            error = translated(exc, what)
            if error is None:
                raise
            raise error from exc
        if inspect.isgenerator(result):
            return _guarded_iteration(result, what)
        return result

    guarded.__lakecore_boundary__ = True  # type: ignore[attr-defined]
    return guarded


def _guarded_iteration(items: Generator[Any, Any, Any], what: str) -> Iterator[Any]:
    """Yield from ``items``, translating what it raises as ``_guarded`` does."""
    try:
        yield from items
    except Exception as exc:
        error = translated(exc, what)
        if error is None:
            raise
        raise error from exc
