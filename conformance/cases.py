"""The corpus and its cases: one case per ``expected/<format dir>/<table>.json``."""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pyarrow as pa

FORMATS = ("delta", "hudi", "lance")
BAD_GROUP = "delta-bad"
CORPUS_ENV = "LAKECORE_CORPUS"
REPO_ROOT = Path(__file__).resolve().parents[1]

DigestFn = Callable[..., str]


class CorpusError(Exception):
    """Raised when the corpus directory is missing or malformed (a setup error, not a case)."""


def default_corpus() -> Path:
    """Return ``$LAKECORE_CORPUS`` or ``../shared/corpus`` relative to the repository root."""
    env = os.environ.get(CORPUS_ENV)
    return Path(env) if env else (REPO_ROOT.parent / "shared" / "corpus").resolve()


@dataclass(frozen=True, slots=True)
class Case:
    """One table of the corpus and its expected answers."""

    group: str  # directory under the corpus root: delta, delta-bad, hudi, lance
    name: str  # table directory name
    path: Path  # table root
    expected_dir: Path  # where the JSON and its rows files live
    expected: dict[str, Any] = field(repr=False, compare=False)

    @property
    def id(self) -> str:
        """``<group>/<table>``, e.g. ``delta/golden__checkpoint``."""
        return f"{self.group}/{self.name}"

    @property
    def format(self) -> str:
        """The table format (``delta-bad`` tables are ``delta``)."""
        return str(self.expected.get("format") or self.group.split("-")[0])

    @property
    def is_bad(self) -> bool:
        """Whether the table comes from ``delta-bad/`` (has an ``expect`` field)."""
        return self.group == BAD_GROUP

    @property
    def oracle_error(self) -> str | None:
        """The reference reader's error on the latest snapshot, if any."""
        value = self.expected.get("oracle_error")
        return str(value) if value else None

    @property
    def context(self) -> str | None:
        """The fixture's documented intent: ``notes`` and, for bad tables, ``expect_detail``."""
        parts = [self.expected.get(k) for k in ("notes", "expect_detail")]
        text = " | ".join(str(p) for p in parts if p)
        return text or None

    def version_key(self, key: str) -> int | str:
        """Convert a ``versions`` key to the version lakecore takes (Hudi keeps instant strings)."""
        return key if self.format == "hudi" else int(key)


class Corpus:
    """The corpus root, its cases and its ``digest.py`` (imported by path)."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        if not (self.root / "expected").is_dir() or not (self.root / "digest.py").is_file():
            raise CorpusError(
                f"no conformance corpus at {self.root} (expected expected/ and digest.py); "
                f"pass --corpus PATH or set {CORPUS_ENV}"
            )
        self.table_digest: DigestFn = _load_digest(self.root / "digest.py")

    def groups(self, formats: Sequence[str] = FORMATS) -> list[str]:
        """Return the format directories under ``expected/`` whose format is in ``formats``."""
        found = sorted(p.name for p in (self.root / "expected").iterdir() if p.is_dir())
        return [g for g in found if g.split("-")[0] in formats]

    def expected_files(self, formats: Sequence[str] = FORMATS) -> list[Path]:
        """Return every ``expected/<group>/*.json`` of ``formats`` (the cases that must run)."""
        return [
            p
            for g in self.groups(formats)
            for p in sorted((self.root / "expected" / g).glob("*.json"))
        ]

    def cases(self, formats: Sequence[str] = FORMATS, table: str | None = None) -> list[Case]:
        """Return the cases of ``formats`` whose ``<group>/<table>`` id contains ``table``."""
        cases = [self._case(p) for p in self.expected_files(formats)]
        return [c for c in cases if table is None or table in c.id]

    def _case(self, json_path: Path) -> Case:
        group, name = json_path.parent.name, json_path.stem
        try:
            expected = json.loads(json_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise CorpusError(f"cannot read {json_path}: {exc}") from exc
        return Case(group, name, self.root / group / name, json_path.parent, expected)

    def digest(self, table: pa.Table, drop_prefixes: Sequence[str] = ()) -> str:
        """Return the corpus digest of ``table`` (optionally without some column prefixes)."""
        return self.table_digest(table, drop_prefixes=tuple(drop_prefixes))


def _load_digest(path: Path) -> DigestFn:
    """Import the corpus's standalone ``digest.py`` by path and return its ``table_digest``."""
    spec = importlib.util.spec_from_file_location("lakecore_corpus_digest", path)
    if spec is None or spec.loader is None:
        raise CorpusError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return cast(DigestFn, module.table_digest)
