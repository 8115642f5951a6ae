"""Text report: one line per table, details in verbose mode, and the final count line."""

from __future__ import annotations

from collections.abc import Sequence

from conformance.outcome import Result

TAGS = {
    "expected": "",
    "oracle-failed": "[ORACLE-FAILED] ",
    "expect=error": "[BAD expect=error] ",
    "expect=ok": "[BAD expect=ok] ",
    "expect=unspecified": "[BAD expect=unspecified] ",
}


def result_lines(result: Result, verbose: bool = False) -> list[str]:
    """Return the report of one table: one line, plus indented details when ``verbose``."""
    status = "PASS" if result.passed else "FAIL"
    tag = TAGS.get(result.category, f"[{result.category.upper()}] ")
    timing = f" [{result.seconds:.2f}s]" if verbose else ""
    lines = [f"{status}  {tag}{result.case_id}: {result.summary}{timing}"]
    if verbose:
        lines += [f"      FAIL  {m}" for m in result.failures]
        lines += [f"      note  {m}" for m in result.notes]
        if result.context:
            lines.append(f"      about {result.context}")
    return lines


def summary_line(results: Sequence[Result]) -> str:
    """Return exactly ``N passed, M failed``."""
    passed = sum(1 for r in results if r.passed)
    return f"{passed} passed, {len(results) - passed} failed"


def failure_message(result: Result) -> str:
    """Return the full text of a failed result (for pytest assertion messages)."""
    return "\n".join(result_lines(result, verbose=True))
