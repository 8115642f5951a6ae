"""The core is format-neutral: no module under ``lakecore/`` names a plugin package.

The one exception is the built-in plugin list in ``lakecore/plugins.py`` (``BUILTIN_PLUGINS``),
which loads the plugins by name. This is ``grep -rn "lakecore_delta\\|lakecore_hudi" lakecore/``
as a test, so a new import (or a string naming a plugin module) fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

CORE = Path(__file__).resolve().parents[1] / "lakecore"
PLUGIN = re.compile(r"lakecore_(delta|hudi|lance)")
ALLOWED = {
    ("plugins.py", '"delta": "lakecore_delta.plugin",'),
    ("plugins.py", '"hudi": "lakecore_hudi.plugin",'),
    ("plugins.py", '"lance": "lakecore_lance.plugin",'),
}


def _mentions() -> list[tuple[str, str]]:
    found = []
    for path in sorted(CORE.rglob("*.py")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if PLUGIN.search(line):
                found.append((str(path.relative_to(CORE)), line.strip()))
    return found


def test_only_the_builtin_plugin_list_names_plugins() -> None:
    mentions = _mentions()
    assert set(mentions) <= ALLOWED, [m for m in mentions if m not in ALLOWED]
    assert len(list(CORE.rglob("*.py"))) > 50  # the walk did see the core


def test_the_check_finds_a_plugin_import() -> None:
    # The pattern the test relies on matches the ways a module names a plugin.
    for line in (
        "from lakecore_delta.write import x",
        "import lakecore_hudi",
        "'lakecore_lance.io'",
    ):
        assert PLUGIN.search(line)
    assert not PLUGIN.search("from lakecore.format import FormatWriter")
