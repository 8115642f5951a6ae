"""Tables without a full expected answer: oracle failures and ``delta-bad/`` fixtures.

Such a table passes when lakecore reads it, or refuses it with a typed ``LakecoreError``; what
the oracle *did* load (latest version, file counts) must still agree. Raw exceptions fail.
"""

from __future__ import annotations

from conformance.cases import Case
from conformance.outcome import Findings, Result, describe_error, error_kind, make_result
from conformance.overrides import Override, override_for
from conformance.probe import Probe, probe_table

METADATA_STAGES = ("open", "format", "version", "snapshot", "files")


def check_oracle_failed(case: Case) -> Result:
    """The oracle failed on this table: report what lakecore does; fail only on raw errors."""
    ov = override_for(case.id)
    found = Findings()
    p = probe_table(case.path)
    _judge_error(case, p, ov, found)
    if ov.must_refuse and p.error_stage not in METADATA_STAGES:
        found.fail(f"{p.describe()}, but must refuse the table ({ov.source})")
    _check_metadata(case, p, ov, found, strict=True)
    if p.loaded:
        _check_versions(case, found)
    return make_result(case.id, "oracle-failed", _summary(p, found), found, case.context)


def check_bad(case: Case) -> Result:
    """A ``delta-bad/`` table: follow its ``expect`` field (error / ok / unspecified)."""
    expect = str(case.expected.get("expect") or "unspecified")
    ov = override_for(case.id)
    found = Findings()
    p = probe_table(case.path)
    _judge_error(case, p, ov, found)
    if expect == "error" and p.error_stage not in METADATA_STAGES:
        found.fail(f"{p.describe()}, but must refuse the table")
    if expect == "ok" and p.error_stage in METADATA_STAGES:
        found.fail(f"must load the table, but {p.describe()}")
    _check_metadata(case, p, ov, found, strict=expect == "ok")
    if p.loaded and expect == "ok":
        _check_versions(case, found)
    return make_result(case.id, f"expect={expect}", _summary(p, found), found, case.context)


def _judge_error(case: Case, p: Probe, ov: Override, found: Findings) -> None:
    """Fail on untyped errors, on detection errors, and on a refusal of the wrong class."""
    if p.error is None:
        return
    where, what = f"{p.error_stage} raises", describe_error(p.error)
    kind = error_kind(p.error)
    if kind == "untyped":
        found.fail(f"{where} untyped {what}")
    elif kind == "detection" and not ov.detection_refusal_ok:
        found.fail(f"{where} {what} (no valid refusal: the table is {case.format})")
    elif ov.refusal_classes and not isinstance(p.error, ov.refusal_classes):
        names = ", ".join(c.__name__ for c in ov.refusal_classes)
        found.fail(f"{where} {what}; expected {names} ({ov.source})")


def _check_metadata(case: Case, p: Probe, ov: Override, found: Findings, strict: bool) -> None:
    """What lakecore loaded must agree with what the oracle (or the notes) say was there."""
    record = found.fail if strict else found.note
    if p.format is not None and p.format != case.format:
        found.fail(f"detected as {p.format!r}, expected {case.format!r}")
    want_version = _want_latest(case, ov)
    if p.latest is not None and want_version is not None and p.latest != want_version:
        record(f"latest version {p.latest!r}, expected {want_version!r}")
    want_files = _want_files(case, ov)
    if p.loaded and want_files is not None and p.num_files != want_files:
        record(f"latest snapshot has {p.num_files} files, expected {want_files}")


def _want_latest(case: Case, ov: Override) -> int | str | None:
    if ov.latest_version is not None:
        return ov.latest_version
    latest = case.expected.get("latest_version")
    return None if latest is None else case.version_key(str(latest))


def _want_files(case: Case, ov: Override) -> int | None:
    if ov.num_files is not None:
        return ov.num_files
    latest = case.expected.get("latest_version")
    entry = (case.expected.get("versions") or {}).get(str(latest)) or {}
    value = entry.get("num_files")
    return None if value is None else int(value)


def _check_versions(case: Case, found: Findings) -> None:
    """Every version the oracle loaded: lakecore loads it with the same files, or refuses typed."""
    for key, entry in (case.expected.get("versions") or {}).items():
        version = case.version_key(key)
        p = probe_table(case.path, version=version, read_rows=False)
        if p.error is not None:
            (found.fail if error_kind(p.error) == "untyped" else found.note)(
                f"v{key}: {p.error_stage} raises {describe_error(p.error)}"
            )
        elif p.version != version:
            found.fail(f"v{key}: snapshot.version is {p.version!r}")
        elif entry.get("num_files") is not None and p.num_files != entry["num_files"]:
            found.fail(f"v{key}: {p.num_files} files, expected {entry['num_files']}")


def _summary(p: Probe, found: Findings) -> str:
    if found.failures:
        more = len(found.failures) - 1
        return found.failures[0] + (f" (+{more} more)" if more else "")
    return f"lakecore {p.describe()}"
