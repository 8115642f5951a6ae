"""Every fenced code block of README.md and docs/**/*.md runs, so the docs cannot rot (issue 14).

What a block's language tag decides:

- ``python``: executed. The blocks of one page run in order in one namespace, in a fresh working
  directory holding copies of corpus tables where the examples expect them (``TABLES``:
  ``data/events`` a partitioned Delta table, ``data/trips`` a Hudi merge-on-read table that
  lakecore can write (no metadata table), ``data/items`` a Lance dataset). Pages in
  ``S3_PAGES`` also get a moto S3 server, reached through the ``AWS_*`` environment (endpoint,
  credentials, region), holding the tables listed. A statement whose comment ends in
  ``-> VALUE``, VALUE a Python literal (``table.count()  # from the file index -> 72``),
  must evaluate to VALUE: what the docs say a call returns is checked, not only that it runs.
- ``sh``: one command per line (``\\`` continues a line, ``#`` starts a comment). A ``lakecore
  ...`` command runs through the CLI (typer's runner, in the page's working directory, after
  the page's Python blocks above it) and must exit 0, as must a quick repository script
  (``QUICK_SCRIPTS``: ``run_all.py --list``); any other command (``pip install``, ``make``, a
  benchmark run) is listed as not run, with the reason.
- ``toml``: parsed.
- ``text``: not code (diagrams, command synopses, sample output): listed, not run.

A block without a language tag, or with another one, fails the test: nothing is left out
silently. A block opts out only with a visible marker on the line before its fence, and the
test lists and counts those blocks:

- ``<!-- doctest: skip (reason) -->``: never run here;
- ``<!-- doctest: slow (reason) -->``: run only under ``-m slow`` (e.g. it starts Spark); the
  default run executes the page without it, so later blocks must not depend on it.
"""

from __future__ import annotations

import ast
import contextlib
import io
import re
import shlex
import shutil
import subprocess
import sys
import tokenize
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from lakecore.cli import app
from tests.corpus import CORPUS

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, as a package
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

# Where the examples expect tables (relative to the page's working directory) -> corpus table.
TABLES = {
    "data/events": "delta/gen__partitioned_special_chars",
    "data/trips": "hudi/mor_avro_v6_trips_8i1u",
    "data/items": "lance/gen__deletions_v2_manifest",
}
# Pages whose examples read S3: bucket/key -> corpus table, served by moto.
S3_PAGES = {"docs/user-guide.md": {"bucket/events": "delta/deltars__delta-0.8.0"}}

LANGUAGES = {"python", "sh", "toml", "text"}
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")
MARKER = re.compile(r"^\s*<!--\s*doctest:\s*(skip|slow)\s*\((.+)\)\s*-->\s*$")
# Commands of ``sh`` blocks that are shown, not run here, and why.
NOT_RUN = {
    "pip": "installs packages",
    "make": "builds its own .venv, then runs the demo or the whole suite",
    ".venv/bin/python": "runs a script of the repository (benchmarks: minutes)",
}
# Repository scripts quick enough to run (from the repository root, with this interpreter).
QUICK_SCRIPTS = {("benchmarks/run_all.py", "--list")}


@dataclass(frozen=True)
class Block:
    """One fenced code block: where it is, its language, its text and its marker if any."""

    page: str
    line: int  # the line of the opening fence, 1-based
    language: str
    text: str
    marker: str | None  # "skip" / "slow"
    reason: str | None

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def extract(page: str, text: str) -> list[Block]:
    """Every fenced block of ``text`` (the page ``page``) in order; the marker is the nearest
    non-blank line above the fence (an unterminated fence fails)."""
    lines = text.splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        indent, fence, language = match.groups()
        end = i + 1
        while end < len(lines) and lines[end].strip() != fence:
            end += 1
        assert end < len(lines), f"{page}:{i + 1}: unterminated code block"
        body = [
            line[len(indent) :] if line.startswith(indent) else line for line in lines[i + 1 : end]
        ]
        above = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        marker = MARKER.match(above)
        blocks.append(
            Block(
                page=page,
                line=i + 1,
                language=language.lower(),
                text="\n".join(body) + "\n",
                marker=marker.group(1) if marker else None,
                reason=marker.group(2) if marker else None,
            )
        )
        i = end + 1
    return blocks


PAGE_NAMES = {p.relative_to(ROOT).as_posix(): p for p in PAGES}
BLOCKS = {name: extract(name, path.read_text()) for name, path in PAGE_NAMES.items()}


def commands(block: Block) -> list[list[str]]:
    """The commands of a ``sh`` block, each split as a shell would (comments dropped)."""
    joined = block.text.replace("\\\n", " ")
    split = [shlex.split(line, comments=True) for line in joined.splitlines()]
    return [argv for argv in split if argv]


def not_run_reason(argv: list[str]) -> str | None:
    """Why a shell command is not run here, or None for one that runs (``lakecore ...``, a
    script in ``QUICK_SCRIPTS``)."""
    if argv[0] == "lakecore" or (
        argv[0] == ".venv/bin/python" and tuple(argv[1:]) in QUICK_SCRIPTS
    ):
        return None
    return NOT_RUN.get(argv[0], "")


def runs_here(block: Block, slow: bool) -> bool:
    """Whether this run executes ``block`` (python, or a sh block with a lakecore command)."""
    if block.marker == "skip" or (block.marker == "slow" and not slow):
        return False
    if block.language == "python" or block.language == "toml":
        return True
    if block.language == "sh":
        return any(not_run_reason(argv) is None for argv in commands(block))
    return False


# ------------------------------------------------------------------ extraction


def test_every_block_has_a_known_language_and_the_listing_adds_up() -> None:
    """Every block is python, sh, toml or text; the not-run and opted-out blocks are listed."""
    blocks = [b for page in BLOCKS.values() for b in page]
    untagged = [
        f"{b.where} ({b.language or 'no language'})" for b in blocks if b.language not in LANGUAGES
    ]
    assert not untagged, f"code blocks need a language tag out of {sorted(LANGUAGES)}: {untagged}"
    unknown = [
        f"{b.where}: {argv[0]}"
        for b in blocks
        if b.language == "sh"
        for argv in commands(b)
        if not_run_reason(argv) == ""
    ]
    assert not unknown, f"shell commands neither run here nor listed in NOT_RUN: {unknown}"

    listing = []
    for b in blocks:
        if b.marker:
            listing.append(f"{b.marker:9} {b.where}: {b.reason}")
        elif b.language == "text":
            synopsis = any(line.startswith("lakecore ") for line in b.text.splitlines())
            what = "command synopsis, checked against --help" if synopsis else "not code"
            listing.append(f"text      {b.where}: {what}")
        elif b.language == "sh":
            for argv in commands(b):
                reason = not_run_reason(argv)
                if reason:
                    listing.append(f"not run   {b.where}: {shlex.join(argv)}: {reason}")
    print("\n".join(listing))

    by_kind = {
        "python": sum(b.language == "python" and b.marker is None for b in blocks),
        "commands": sum(
            not_run_reason(argv) is None
            for b in blocks
            if b.language == "sh" and b.marker is None
            for argv in commands(b)
        ),
        "skip": sum(b.marker == "skip" for b in blocks),
        "slow": sum(b.marker == "slow" for b in blocks),
        "stated values": sum(len(stated_values(b.text)) for b in blocks if b.language == "python"),
    }
    print(by_kind)
    # Floors, not exact counts (pages grow): extraction that finds nothing fails here.
    assert len(blocks) >= 28, len(blocks)
    assert by_kind["python"] >= 15, by_kind
    assert by_kind["commands"] >= 15, by_kind
    assert by_kind["stated values"] >= 5, by_kind
    # Opting out is the exception: each one is listed above with its reason.
    assert by_kind["skip"] <= 3, by_kind


SAMPLE = """
Text.

<!-- doctest: skip (needs a cluster) -->
```python
a = 1  # -> 1
```

  ```sh
  lakecore info data/events   # a comment
  pip install lakecore
  # only a comment
  lakecore scan data/events \\
    --where "region = 'a # b'"
  ```

<!-- doctest: slow (starts Spark) -->

~~~text
diagram
~~~

```
untagged
```
"""


def test_extract_reads_languages_markers_and_commands() -> None:
    """The extraction itself, on a page made for it: indented fences, ~~~ fences, markers a
    blank line above, continued lines, '#' inside quotes, a block without a language."""
    blocks = extract("sample.md", SAMPLE)
    assert [(b.line, b.language, b.marker, b.reason) for b in blocks] == [
        (5, "python", "skip", "needs a cluster"),
        (9, "sh", None, None),
        (19, "text", "slow", "starts Spark"),
        (23, "", None, None),
    ]
    assert blocks[0].text == "a = 1  # -> 1\n"
    assert commands(blocks[1]) == [
        ["lakecore", "info", "data/events"],
        ["pip", "install", "lakecore"],
        ["lakecore", "scan", "data/events", "--where", "region = 'a # b'"],
    ]
    assert [not_run_reason(argv) for argv in commands(blocks[1])] == [
        None,
        "installs packages",
        None,
    ]
    assert not runs_here(blocks[0], slow=True) and runs_here(blocks[1], slow=False)
    assert stated_values(blocks[0].text) == {1: 1}
    with pytest.raises(AssertionError, match="unterminated"):
        extract("bad.md", "```python\nx = 1\n")


def test_markers_are_only_on_fences() -> None:
    """A marker that is not directly above a block would silently mark nothing."""
    for page in PAGES:
        lines = page.read_text().splitlines()
        for i, line in enumerate(lines):
            if "doctest:" in line:
                assert MARKER.match(line), f"{page.name}:{i + 1}: malformed marker {line!r}"
                following = next((x for x in lines[i + 1 :] if x.strip()), "")
                assert FENCE.match(following), f"{page.name}:{i + 1}: marker not above a block"


ABSOLUTE_PATH = re.compile(r"(?<![\w:/.~-])/[A-Za-z]\w*/")


def test_runnable_examples_use_relative_paths() -> None:
    """Examples name tables relative to the working directory (``data/events``): an absolute
    ``/data/events`` would be created outside the test's directory, on the machine running it."""
    found = [
        f"{b.where}: {m.group(0)}"
        for page in BLOCKS.values()
        for b in page
        if b.language in ("python", "sh") and b.marker != "skip"
        for m in ABSOLUTE_PATH.finditer(b.text)
    ]
    assert not found, found


SYNOPSIS_OPTION = re.compile(r"(?<![\w-])(--?[a-z][\w-]*)")


def test_command_synopses_name_real_commands_and_options() -> None:
    """``text`` blocks are not run, but a ``lakecore ...`` synopsis line in one (README's
    command list) must name a command and options that ``lakecore <command> --help`` shows."""
    checked = 0
    for page in BLOCKS.values():
        for b in page:
            if b.language != "text":
                continue
            for line in b.text.splitlines():
                if not line.startswith("lakecore "):
                    continue
                synopsis = line.split(" # ", 1)[0]
                words = synopsis.split()
                command = [] if words[1].startswith("-") else [words[1]]
                result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
                assert result.exit_code == 0, f"{b.where}: {line}\n{result.output}"
                for option in SYNOPSIS_OPTION.findall(synopsis):
                    assert option in result.output, f"{b.where}: {option} of {line!r}"
                checked += 1
    assert checked >= 15, checked


# ------------------------------------------------------------------ running the pages


@pytest.fixture
def page_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh working directory holding copies of the corpus tables the examples use."""
    for target, source in TABLES.items():
        src = CORPUS / source
        if not src.is_dir():
            pytest.fail(f"corpus table missing: {src} (set LAKECORE_CORPUS)")
        shutil.copytree(src, tmp_path / target)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def serve_s3(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, page: str) -> None:
    """Put the page's S3 tables on the session's moto server and point the AWS_* environment
    at it (what a user's environment or ~/.aws would hold)."""
    import boto3
    import s3fs

    endpoint = request.getfixturevalue("s3_endpoint")
    for name, value in {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    client = boto3.client("s3")
    fs = s3fs.S3FileSystem()
    for key, source in S3_PAGES[page].items():
        bucket = key.split("/", 1)[0]
        with contextlib.suppress(client.exceptions.BucketAlreadyOwnedByYou):
            client.create_bucket(Bucket=bucket)
        if fs.exists(key):
            fs.rm(key, recursive=True)
        fs.put(f"{CORPUS / source}/", f"{key}/", recursive=True)
    fs.invalidate_cache()


NO_VALUE = object()


def stated_values(text: str) -> dict[int, Any]:
    """Line -> the value a ``# ... -> VALUE`` comment on it states (VALUE a Python literal;
    a comment whose text after its last ``->`` is no literal, "rows outside -> error", states
    nothing)."""
    stated: dict[int, Any] = {}
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT and "->" in token.string:
            tail = token.string.rsplit("->", 1)[1].strip()
            try:
                stated[token.start[0]] = ast.literal_eval(tail)
            except (ValueError, SyntaxError):
                continue
    return stated


def run_python(block: Block, namespace: dict[str, Any]) -> int:
    """Execute ``block`` statement by statement in ``namespace``; a statement with a stated
    value must be an expression equal to it. Return how many stated values were checked."""
    stated = stated_values(block.text)
    tree = ast.parse(block.text, filename=block.where)
    statements = tree.body
    last_on_line = {stmt.end_lineno: i for i, stmt in enumerate(statements)}
    checked = 0
    for i, stmt in enumerate(statements):
        expected = (
            stated.get(stmt.end_lineno, NO_VALUE)
            if last_on_line[stmt.end_lineno] == i
            else NO_VALUE
        )
        try:
            if expected is NO_VALUE:
                exec(compile(ast.Module([stmt], []), block.where, "exec"), namespace)
                continue
            assert isinstance(stmt, ast.Expr), (
                f"line {stmt.lineno}: a stated value needs an expression"
            )
            value = eval(compile(ast.Expression(stmt.value), block.where, "eval"), namespace)
        except Exception:
            pytest.fail(f"{block.where} failed:\n{block.text}\n{traceback.format_exc()}")
        line = block.text.splitlines()[stmt.end_lineno - 1].strip()
        assert value == expected, f"{block.where}: {line!r} gives {value!r}"
        checked += 1
    return checked


def run_sh(block: Block) -> int:
    ran = 0
    for argv in commands(block):
        if not_run_reason(argv) is not None:
            continue
        if argv[0] == "lakecore":
            result = CliRunner().invoke(app, argv[1:])
            code, output = result.exit_code, result.output
        else:
            done = subprocess.run(
                [sys.executable, *argv[1:]], cwd=ROOT, capture_output=True, text=True, timeout=60
            )
            code, output = done.returncode, done.stdout + done.stderr
        assert code == 0, f"{block.where}: {shlex.join(argv)} exited {code}\n{output}"
        ran += 1
    return ran


def run_page(
    page: str, slow: bool, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> tuple[int, int]:
    """Run the page's blocks in order; return (blocks run, stated values checked)."""
    if page in S3_PAGES:
        serve_s3(request, monkeypatch, page)
    namespace: dict[str, Any] = {"__name__": f"doc:{page}"}
    blocks = checked = 0
    for block in BLOCKS[page]:
        if not runs_here(block, slow):
            continue
        if block.language == "python":
            checked += run_python(block, namespace)
        elif block.language == "toml":
            tomllib.loads(block.text)
        else:
            assert run_sh(block) > 0
        blocks += 1
    return blocks, checked


def stated_in(page: str, slow: bool) -> int:
    """How many ``-> VALUE`` comments the page's Python blocks run here hold."""
    return sum(
        len(stated_values(b.text))
        for b in BLOCKS[page]
        if b.language == "python" and runs_here(b, slow)
    )


def pages_with(slow: bool) -> list[str]:
    return [page for page, blocks in BLOCKS.items() if any(runs_here(b, slow) for b in blocks)]


def params(pages: list[str]) -> list[Any]:
    """The pages as test parameters, those that serve S3 marked ``s3``."""
    return [pytest.param(p, marks=[pytest.mark.s3] if p in S3_PAGES else []) for p in pages]


@pytest.mark.parametrize("page", params(pages_with(slow=False)))
def test_page_examples_run(
    page: str, page_dir: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page's blocks run in order without error (slow-marked blocks left out)."""
    blocks, checked = run_page(page, False, request, monkeypatch)
    assert blocks == sum(runs_here(b, False) for b in BLOCKS[page]) > 0
    assert checked == stated_in(page, False)  # a stated value off a statement's end is missed


@pytest.mark.slow
@pytest.mark.parametrize(
    "page", params([p for p in pages_with(slow=True) if any(b.marker == "slow" for b in BLOCKS[p])])
)
def test_page_examples_run_with_slow_blocks(
    page: str, page_dir: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole page, its slow-marked blocks (Spark) included."""
    blocks, checked = run_page(page, True, request, monkeypatch)
    assert blocks == sum(runs_here(b, True) for b in BLOCKS[page]) > 0
    assert checked == stated_in(page, True)


def test_pages_with_runnable_examples() -> None:
    """Every page that holds code runs some of it by default (a page whose every block is
    marked would hide here)."""
    expected = {
        "README.md",
        "docs/user-guide.md",
        "docs/planning.md",
        "docs/migration.md",
        "docs/plugins.md",
        "docs/formats/hudi.md",
        "docs/performance.md",
    }
    assert expected <= set(pages_with(slow=False)), sorted(pages_with(slow=False))


def test_explain_sample_has_the_lines_of_real_output() -> None:
    """docs/planning.md shows a sample ``explain()`` (a text block, numbers made up): its lines
    must be the labels, in the order, that ``Scan.explain()`` prints, and the ``ScanExplain``
    fields the text after it names must exist."""
    import dataclasses

    import lakecore
    from lakecore.planning.explain import ScanExplain

    page = "docs/planning.md"
    [sample] = [b for b in BLOCKS[page] if b.language == "text" and b.text.startswith("Scan of")]
    table = lakecore.open(str(CORPUS / TABLES["data/events"]))
    real = str(table.scan("region = 'eu' AND id > 5", columns=["id", "day"]).explain())

    def labels(text: str) -> list[str]:
        return [
            re.split(r":|\s(?=\S+ table )", line.strip(), maxsplit=1)[0]
            for line in text.splitlines()
        ]

    assert labels(sample.text) == labels(real), (sample.text, real)
    prose = (ROOT / page).read_text().split(sample.text, 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`(\w+)`", prose)) - {"ScanExplain", "None"}
    fields = {f.name for f in dataclasses.fields(ScanExplain)} | {
        n for n in dir(ScanExplain) if not n.startswith("_")
    }
    assert named and named <= fields, sorted(named - fields)
