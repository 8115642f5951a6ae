"""Packaging (issue 14): license, typing marker, real extras, README install section, and the
wheel itself - built from a copy of the sources, installed into a clean venv, every plugin
imported from it and found through its entry points.

The wheel is built with the setuptools of the test environment (``--no-build-isolation``, no
index): no network. The clean venv has no pip and none of lakecore's dependencies; it reaches
them through a ``.pth`` line naming this environment's site-packages, which - a plain path, not
a site directory - does not run the editable install's finder, so ``lakecore`` can only come
from the wheel.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path
from typing import Any

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, as a package
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {
    "lakecore": ROOT / "lakecore",
    "lakecore_delta": ROOT / "plugins" / "lakecore_delta",
    "lakecore_hudi": ROOT / "plugins" / "lakecore_hudi",
    "lakecore_lance": ROOT / "plugins" / "lakecore_lance",
}
PLUGINS = {
    "delta": "lakecore_delta.plugin",
    "hudi": "lakecore_hudi.plugin",
    "lance": "lakecore_lance.plugin",
}
PROTOS = ("file", "table", "transaction")
PIP = (sys.executable, "-m", "pip")


def pyproject() -> dict[str, Any]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)


def requirement_name(requirement: str) -> str:
    return re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


# ------------------------------------------------------------------ metadata in the sources


def test_license_is_an_spdx_expression_with_its_file() -> None:
    project = pyproject()["project"]
    assert project["license"] == "Apache-2.0"
    assert project["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert text.lstrip().startswith("Apache License")
    assert "Version 2.0, January 2004" in text
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text
    assert "Typing :: Typed" in project["classifiers"]


def test_every_package_is_marked_typed() -> None:
    data = pyproject()["tool"]["setuptools"]["package-data"]
    for name, path in PACKAGES.items():
        assert (path / "py.typed").is_file(), name
        assert "py.typed" in data[name], name


def test_no_extra_is_empty() -> None:
    """Each extra installs something the core does not (``[hudi]`` used to repeat fastavro)."""
    project = pyproject()["project"]
    core = {requirement_name(r) for r in project["dependencies"]}
    extras = project["optional-dependencies"]
    for extra, requirements in extras.items():
        added = {requirement_name(r) for r in requirements} - core
        assert added, f"extra [{extra}] adds nothing to the core dependencies"
    assert sorted(extras) == ["lance", "pandas", "s3", "spark", "test"]


HINTED_EXTRA = re.compile(r"lakecore\[([a-z0-9_,\- ]+)\]")


def test_every_extra_a_message_or_doc_names_exists() -> None:
    """Install hints in code and docs name only extras that exist (issue 14: no hint for an
    extra that does not)."""
    extras = set(pyproject()["project"]["optional-dependencies"])
    sources = [
        *(p for pkg in PACKAGES.values() for p in pkg.rglob("*.py")),
        ROOT / "README.md",
        *(ROOT / "docs").rglob("*.md"),
    ]
    named = 0
    for path in sources:
        for match in HINTED_EXTRA.finditer(path.read_text()):
            for extra in match.group(1).split(","):
                assert extra.strip() in extras, f"{path.relative_to(ROOT)} names [{extra}]"
                named += 1
    assert named >= 8


def test_readme_has_an_install_section() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Install", 1)[1].split("\n## ", 1)[0]
    assert "pip install lakecore" in section
    assert "pip install 'lakecore[spark,s3]'" in section
    for extra in pyproject()["project"]["optional-dependencies"]:
        if extra != "test":
            assert f"`{extra}`" in section, extra  # every user-facing extra is explained


def test_project_urls_name_files_of_the_source_tree() -> None:
    """lakecore has no public URL yet: ``[project.urls]`` names its docs in the source tree
    (paths relative to the project root), which must exist; an http(s) URL is taken as is."""
    urls = pyproject()["project"]["urls"]
    assert {"Homepage", "Documentation", "Changelog"} <= set(urls), urls
    for label, url in urls.items():
        if not url.startswith(("https://", "http://")):
            assert (ROOT / url).is_file(), (label, url)


# ------------------------------------------------------------------ the wheel


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from a copy of the sources (the work tree gets no build/ or egg-info)."""
    pytest.importorskip("setuptools", minversion="77", reason="needs setuptools>=77 (PEP 639)")
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "lakecore", src / "lakecore", ignore=ignore)
    shutil.copytree(ROOT / "plugins", src / "plugins", ignore=ignore)
    out = tmp_path_factory.mktemp("dist")
    command = [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps"]
    subprocess.run(
        [*command, "--no-index", "--quiet", "--wheel-dir", str(out), str(src)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    [built] = out.glob("lakecore-*.whl")
    return built


def test_wheel_holds_typing_markers_plugins_protos_and_entry_points(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        metadata = z.read(f"{info}/METADATA").decode()
        entry_points = z.read(f"{info}/entry_points.txt").decode()
    for package in PACKAGES:
        assert f"{package}/py.typed" in names, package
        assert f"{package}/__init__.py" in names, package
    for module in PLUGINS.values():
        assert module.replace(".", "/") + ".py" in names, module
    for proto in PROTOS:
        for suffix in (".proto", "_pb2.py", "_pb2.pyi"):
            assert f"lakecore_lance/proto/{proto}{suffix}" in names, (proto, suffix)
    assert f"{info}/licenses/LICENSE" in names
    assert "License-Expression: Apache-2.0" in metadata
    assert "Provides-Extra: hudi" not in metadata
    for label, url in pyproject()["project"]["urls"].items():
        assert f"Project-URL: {label}, {url}" in metadata, label
    assert not any(n.startswith(("tests/", "conformance/", "benchmarks/")) for n in names)
    assert "lakecore = lakecore.cli:main" in entry_points
    for name, module in PLUGINS.items():
        assert f"{name} = {module}" in entry_points


CHECK = """
import importlib, importlib.metadata as md, importlib.resources, json, sys
import lakecore
from lakecore.plugins import load_registry
prefix = sys.argv[1]
modules = [lakecore, *(importlib.import_module(m) for m in json.loads(sys.argv[2]))]
protos = [importlib.import_module(f"lakecore_lance.proto.{p}_pb2") for p in json.loads(sys.argv[3])]
print(json.dumps({
    "outside": [m.__name__ for m in modules + protos if not m.__file__.startswith(prefix)],
    "entry_points": sorted(ep.name for ep in md.entry_points(group="lakecore")),
    "formats": load_registry(disabled=[]).names(),
    "typed": importlib.resources.files("lakecore").joinpath("py.typed").is_file(),
    "version": md.version("lakecore") == lakecore.__version__,
}))
"""


def test_wheel_installs_into_a_clean_venv_and_loads_every_plugin(
    wheel: Path, tmp_path: Path
) -> None:
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    purelib = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    # lakecore's dependencies from this environment, without its editable lakecore.
    (purelib / "_lakecore_test_deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    subprocess.run(
        [
            *PIP,
            "--python",
            str(python),
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            str(wheel),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    clean_env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    result = subprocess.run(
        [
            str(python),
            "-c",
            CHECK,
            str(purelib),
            json.dumps(list(PLUGINS.values())),
            json.dumps(PROTOS),
        ],
        check=True,
        capture_output=True,
        text=True,
        env=clean_env,
        cwd=tmp_path,  # not the repository: its lakecore/ must not be importable
        timeout=120,
    )
    found = json.loads(result.stdout)
    assert found == {
        "outside": [],
        "entry_points": ["delta", "hudi", "lance"],
        "formats": ["delta", "hudi", "lance"],
        "typed": True,
        "version": True,
    }
    cli = subprocess.run(
        [str(env_dir / "bin" / "lakecore"), "--version"],
        capture_output=True,
        text=True,
        env=clean_env,
        cwd=tmp_path,
        timeout=120,
    )
    assert cli.returncode == 0, cli.stderr
    assert "0.1.0" in cli.stdout
