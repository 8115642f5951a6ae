"""docs/plugins.md names every hook and every member of the format protocols.

The protocols are found by introspection (every ``typing.Protocol`` defined in a module of
``lakecore.format``), so a member or protocol added later fails here until it is documented.
Each protocol must have a ``##`` section naming it, and each member the protocol itself
declares must appear in that section as a code span (`` `name` `` or `` `name(...)` ``).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import lakecore.format
from lakecore import hookspecs
from lakecore.format import Capability

DOC = Path(__file__).resolve().parents[1] / "docs" / "plugins.md"
PROTOCOL_BASES = {"Protocol", "Generic", "object"}


def protocols() -> dict[str, type]:
    """Every Protocol class defined in a module of ``lakecore.format``, by name."""
    found: dict[str, type] = {}
    package = lakecore.format
    names = [package.__name__] + [
        f"{package.__name__}.{m.name}" for m in pkgutil.iter_modules(package.__path__)
    ]
    for module_name in names:
        module = importlib.import_module(module_name)
        for name, obj in vars(module).items():
            if (
                inspect.isclass(obj)
                and obj.__module__ == module_name
                and getattr(obj, "_is_protocol", False)
            ):
                found[name] = obj
    return found


def own_members(protocol: type) -> list[str]:
    """The public members ``protocol`` itself declares (methods, properties, attributes)."""
    names = set(vars(protocol).get("__annotations__", {}))
    names |= {n for n, v in vars(protocol).items() if callable(v) or isinstance(v, property)}
    return sorted(n for n in names if not n.startswith("_"))


def hooks() -> list[str]:
    """The hookspecs of ``lakecore.hookspecs``."""
    marker = f"{hookspecs.PROJECT}_spec"
    return sorted(n for n, f in vars(hookspecs).items() if hasattr(f, marker))


def sections(text: str) -> list[tuple[str, str]]:
    """(heading, body) of every ``##`` section of ``text``."""
    parts = re.split(r"^## (.*)$", text, flags=re.MULTILINE)
    return list(zip(parts[1::2], parts[2::2], strict=True))


def named(name: str, text: str) -> bool:
    """Whether ``text`` names ``name`` in a code span: `name`, `name(...)` or `x.name`."""
    return re.search(rf"`(?:[\w.]*\.)?{re.escape(name)}[`(\[ ]", text) is not None


def section_of(protocol: str, text: str) -> str | None:
    """The body of the ``##`` section whose heading names ``protocol`` in a code span."""
    for heading, body in sections(text):
        if re.search(rf"`{re.escape(protocol)}`", heading):
            return body
    return None


def test_the_protocols_are_found() -> None:
    found = protocols()
    expected = {
        "TableFormat",
        "SnapshotSource",
        "WritableFormat",
        "FormatWriter",
        "SchemaUpdate",
        "MaintainableFormat",
        "MergeOnReadFormat",
        "TaggableFormat",
    }
    assert expected <= set(found), sorted(found)
    assert sum(len(own_members(p)) for p in found.values()) >= 30
    assert hooks() == sorted(hooks()) and "lakecore_register_formats" in hooks()


def test_every_protocol_member_is_documented() -> None:
    text = DOC.read_text()
    missing: list[str] = []
    for name, protocol in sorted(protocols().items()):
        body = section_of(name, text)
        if body is None:
            missing.append(f"{name} (no '## ... `{name}` ...' section)")
            continue
        missing += [f"{name}.{m}" for m in own_members(protocol) if not named(m, body)]
    assert not missing, f"docs/plugins.md does not document: {', '.join(missing)}"


def test_every_hook_is_documented() -> None:
    text = DOC.read_text()
    body = dict(sections(text)).get("Hooks", "")
    missing = [h for h in hooks() if not named(h, body)]
    assert not missing, f"the Hooks section of docs/plugins.md lacks: {', '.join(missing)}"


def test_every_capability_is_documented() -> None:
    text = DOC.read_text()
    body = section_of("Capability", text) or ""
    missing = [c.value for c in Capability if not named(c.value, body)]
    assert not missing, f"docs/plugins.md does not list capabilities: {', '.join(missing)}"


def test_the_check_sees_a_missing_member() -> None:
    # The check itself: a section that leaves a member out is reported.
    text = "## The `SchemaUpdate` protocol\n| `add_column(name, type)` | adds |\n"
    body = section_of("SchemaUpdate", text)
    assert body is not None and named("add_column", body)
    assert not named("drop_column", body)
    assert section_of("FormatWriter", text) is None
