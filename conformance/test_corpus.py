"""pytest entry: one test per corpus table, plus a count test so an empty loop cannot pass.

Formats: ``$LAKECORE_CONFORMANCE_FORMATS`` (comma separated, default ``delta,hudi,lance``; delta
includes ``delta-bad/``). The corpus: ``$LAKECORE_CORPUS`` or ``../shared/corpus``; when it is
missing every test here fails (never skips).
"""

from __future__ import annotations

import os

import pytest

from conformance.cases import FORMATS, Case, Corpus, CorpusError, default_corpus
from conformance.check import run_case
from conformance.report import failure_message

FORMATS_ENV = "LAKECORE_CONFORMANCE_FORMATS"
MIN_DELTA_CASES = 100
MIN_HUDI_CASES = 20
LANCE_CASES = 19
DEFAULT_FORMATS = "delta,hudi,lance"


def selected_formats() -> tuple[str, ...]:
    """Return the formats named in ``$LAKECORE_CONFORMANCE_FORMATS`` (default: all three)."""
    raw = os.environ.get(FORMATS_ENV, DEFAULT_FORMATS)
    names = [n.strip() for n in raw.split(",") if n.strip()]
    unknown = sorted(set(names) - set(FORMATS))
    if unknown:
        raise ValueError(f"{FORMATS_ENV} names unknown formats {unknown}; known: {FORMATS}")
    return tuple(names)


def _load() -> tuple[Corpus | None, list[Case], str]:
    try:
        corpus = Corpus(default_corpus())
        return corpus, corpus.cases(selected_formats()), ""
    except (CorpusError, ValueError) as exc:
        return None, [], str(exc)


CORPUS, CASES, SETUP_ERROR = _load()
PARAMS = [pytest.param(c, id=c.id) for c in CASES] or [pytest.param(None, id="no-cases")]


@pytest.mark.parametrize("case", PARAMS)
def test_table(case: Case | None) -> None:
    """The table conforms (see ``conformance.check``)."""
    if CORPUS is None or case is None:
        pytest.fail(f"no corpus cases to run: {SETUP_ERROR or 'no expected/*.json found'}")
    result = run_case(CORPUS, case)
    assert result.passed, failure_message(result)


def test_every_expected_file_is_a_case() -> None:
    """Discovery found one case per expected JSON of the selected formats (delta: > 100)."""
    if CORPUS is None:
        pytest.fail(f"conformance corpus unavailable: {SETUP_ERROR}")
    formats = selected_formats()
    for fmt in formats:
        dirs = (fmt, "delta-bad") if fmt == "delta" else (fmt,)
        json_files = [p for d in dirs for p in (CORPUS.root / "expected" / d).glob("*.json")]
        cases = [c for c in CASES if c.format == fmt]
        assert len(cases) == len(json_files), f"{fmt}: {len(cases)} cases, {len(json_files)} JSON"
        assert json_files, f"{fmt}: no expected JSON under {CORPUS.root / 'expected'}"
    if "delta" in formats:
        groups = {c.group for c in CASES if c.format == "delta"}
        assert groups == {"delta", "delta-bad"}, f"delta groups found: {sorted(groups)}"
        delta_cases = sum(1 for c in CASES if c.format == "delta")
        assert delta_cases > MIN_DELTA_CASES, f"only {delta_cases} delta cases discovered"
    if "hudi" in formats:
        hudi_cases = sum(1 for c in CASES if c.format == "hudi")
        assert hudi_cases >= MIN_HUDI_CASES, f"only {hudi_cases} hudi cases discovered"
    if "lance" in formats:
        lance_cases = sum(1 for c in CASES if c.format == "lance")
        assert lance_cases == LANCE_CASES, f"{lance_cases} lance cases discovered"
