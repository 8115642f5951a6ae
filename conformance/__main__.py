"""``python -m conformance``: run the corpus tables through lakecore and report each one."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from conformance.cases import FORMATS, Corpus, CorpusError, default_corpus
from conformance.check import run_case
from conformance.outcome import Result
from conformance.report import result_lines, summary_line


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse the command line."""
    parser = argparse.ArgumentParser(
        prog="python -m conformance",
        description="Check lakecore against the real tables of the conformance corpus.",
    )
    parser.add_argument(
        "--corpus",
        type=Path,
        default=None,
        help="corpus root (default: $LAKECORE_CORPUS or ../shared/corpus next to the repo)",
    )
    parser.add_argument("--format", choices=FORMATS, help="only this format (delta: + delta-bad)")
    parser.add_argument("--table", help="only tables whose <dir>/<table> contains this text")
    parser.add_argument(
        "--verbose", "-v", action="store_true", help="details, notes and timing per table"
    )
    return parser.parse_args(argv)


def run(corpus: Corpus, formats: Sequence[str], table: str | None, verbose: bool) -> int:
    """Run the selected cases, print the report, return the exit status."""
    cases = corpus.cases(formats, table)
    results: list[Result] = []
    for case in cases:
        result = run_case(corpus, case)
        results.append(result)
        print("\n".join(result_lines(result, verbose)), flush=True)
    if not cases:
        print(
            f"no table of {', '.join(formats)} matches {table!r} in {corpus.root}", file=sys.stderr
        )
    print(summary_line(results), flush=True)
    return 0 if cases and all(r.passed for r in results) else 1


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns 0 when every selected table passed, 1 otherwise, 2 on setup errors."""
    args = parse_args(argv)
    try:
        corpus = Corpus(args.corpus or default_corpus())
    except CorpusError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    formats = (args.format,) if args.format else FORMATS
    return run(corpus, formats, args.table, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
