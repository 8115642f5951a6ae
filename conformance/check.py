"""Run one case: pick the check for its kind of table and turn every outcome into a Result."""

from __future__ import annotations

import time
import traceback
from dataclasses import replace

import lakecore
from conformance.cases import Case, Corpus
from conformance.hudi_checks import check_hudi_latest
from conformance.lenient import check_bad, check_oracle_failed
from conformance.outcome import Findings, Result, describe_error, error_kind, make_result
from conformance.overrides import override_for
from conformance.versions import check_unloadable, check_version
from lakecore.table import Table


def run_case(corpus: Corpus, case: Case) -> Result:
    """Check one table; never raises (a crash of the checker itself is a failed Result)."""
    start = time.perf_counter()
    try:
        result = _dispatch(corpus, case)
    except Exception as exc:
        tb = traceback.format_exc(limit=-3).strip().splitlines()
        result = Result(
            case_id=case.id,
            category="checker-crash",
            passed=False,
            summary=f"the conformance checker crashed: {describe_error(exc)}",
            failures=tuple(tb),
            context=case.context,
        )
    return replace(result, seconds=time.perf_counter() - start)


def _dispatch(corpus: Corpus, case: Case) -> Result:
    if not case.path.is_dir():
        found = Findings()
        found.fail(f"table directory {case.path} is missing from the corpus")
        return make_result(case.id, "missing", found.failures[0], found, case.context)
    if case.is_bad:
        return check_bad(case)
    if case.oracle_error or override_for(case.id).must_refuse:
        return check_oracle_failed(case)
    return check_expected(corpus, case)


def check_expected(corpus: Corpus, case: Case) -> Result:
    """A table the oracle read: latest version, then every version's files/schema/rows/digest."""
    found = Findings()
    try:
        table = lakecore.open(str(case.path))
    except Exception as exc:
        found.fail(f"open raises {describe_error(exc)}")
        return make_result(case.id, "expected", found.failures[0], found, case.context)
    _check_latest(case, table, found)
    versions = case.expected.get("versions") or {}
    for key, entry in versions.items():
        check_version(corpus, case, table, case.version_key(key), entry, found)
    for key, error in (case.expected.get("unloadable_versions") or {}).items():
        check_unloadable(table, case.version_key(key), str(error), found)
    empty = case.expected.get("empty_snapshot")
    if empty:
        check_version(corpus, case, table, None, empty, found)
    if case.format == "hudi":
        check_hudi_latest(corpus, case, found)
    return make_result(case.id, "expected", _summary(case, found), found, case.context)


def _check_latest(case: Case, table: Table, found: Findings) -> None:
    try:
        fmt, latest = table.format, table.version
    except Exception as exc:
        oracle_error = case.expected.get("latest_version_error")
        if oracle_error and error_kind(exc) == "typed":  # e.g. a Hudi table with no commit
            found.note(f"latest version raises {describe_error(exc)} (oracle: {oracle_error})")
        else:
            found.fail(f"latest version raises {describe_error(exc)}")
        return
    if fmt != case.format:
        found.fail(f"detected as {fmt!r}, expected {case.format!r}")
    want = case.expected.get("latest_version")
    if want is not None and latest != case.version_key(str(want)):
        found.fail(f"latest version {latest!r}, expected {want!r}")


def _summary(case: Case, found: Findings) -> str:
    if found.failures:
        more = len(found.failures) - 1
        return found.failures[0] + (f" (+{more} more)" if more else "")
    versions = case.expected.get("versions") or {}
    if not versions and case.expected.get("empty_snapshot"):
        return "empty table (no completed commit) matches"
    digests = sum(1 for e in versions.values() if e.get("digest"))
    return (
        f"{len(versions)} versions match (latest v{case.expected.get('latest_version')}, "
        f"{digests} digests)"
    )
