"""pyspark stays optional: ``import lakecore`` never imports it; ``lakecore.spark`` says how
to install it when it is missing."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.spark


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )


def test_import_lakecore_does_not_import_pyspark() -> None:
    result = _run(
        "import sys, lakecore\n"
        "t = lakecore.Table\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j')))"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_lakecore_spark_without_pyspark_names_the_install_command() -> None:
    result = _run(
        "import sys\n"
        "sys.modules['pyspark'] = None  # as if it were not installed\n"
        "from lakecore.errors import PluginNotInstalledError\n"
        "try:\n"
        "    import lakecore.spark\n"
        "except PluginNotInstalledError as e:\n"
        "    print(type(e).__name__, e.format_name, e)\n"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("PluginNotInstalledError spark ")
    assert "pip install 'lakecore[spark]'" in result.stdout
