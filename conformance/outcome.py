"""Findings while checking one case, the case's Result, and how errors are classified."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from lakecore.errors import FormatDetectionError, LakecoreError, PluginNotInstalledError

ErrorKind = Literal["typed", "detection", "untyped"]


def error_kind(exc: BaseException) -> ErrorKind:
    """Classify an exception lakecore raised.

    ``typed``: a LakecoreError that is a real answer about the table. ``detection``: format
    detection or a missing plugin, which is never a valid refusal of a table whose format is
    known. ``untyped``: anything else (KeyError, ArrowInvalid, ...), always a failure.
    """
    if isinstance(exc, FormatDetectionError | PluginNotInstalledError):
        return "detection"
    if isinstance(exc, LakecoreError):
        return "typed"
    return "untyped"


def describe_error(exc: BaseException, limit: int = 160) -> str:
    """Return ``Class: first line of the message`` (module-qualified unless builtin/lakecore)."""
    cls = type(exc)
    module = cls.__module__
    name = cls.__qualname__
    if module not in ("builtins", "lakecore.errors"):
        name = f"{module}.{name}"
    lines = str(exc).strip().splitlines()
    text = lines[0] if lines else ""
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return f"{name}: {text}" if text else name


@dataclass
class Findings:
    """What checking one case found: failures (the case fails) and informational notes."""

    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def fail(self, message: str) -> None:
        """Record a failure."""
        self.failures.append(message)

    def note(self, message: str) -> None:
        """Record an informational note."""
        self.notes.append(message)

    def extend(self, failures: list[str], notes: list[str], prefix: str = "") -> None:
        """Record several failures and notes, each prefixed (e.g. with ``"v3: "``)."""
        self.failures.extend(prefix + m for m in failures)
        self.notes.extend(prefix + m for m in notes)


@dataclass(frozen=True, slots=True)
class Result:
    """The outcome of one case."""

    case_id: str
    category: str  # "expected", "oracle-failed", "expect=error", "expect=ok", ...
    passed: bool
    summary: str
    failures: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    context: str | None = None  # the table's notes / expect_detail
    seconds: float = 0.0


def make_result(
    case_id: str, category: str, summary: str, findings: Findings, context: str | None
) -> Result:
    """Build a Result: it passes iff ``findings`` holds no failure."""
    return Result(
        case_id=case_id,
        category=category,
        passed=not findings.failures,
        summary=summary,
        failures=tuple(findings.failures),
        notes=tuple(findings.notes),
        context=context,
    )
