"""The lakecore command line over a corpus table."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lakecore.cli import app

CORPUS = Path(os.environ.get("LAKECORE_CORPUS", Path(__file__).parents[2] / "shared" / "corpus"))
TABLE = str(CORPUS / "delta" / "golden__dv-partitioned-with-checkpoint")


@pytest.fixture(autouse=True)
def _corpus() -> None:
    if not Path(TABLE).is_dir():
        pytest.fail(f"corpus table missing: {TABLE}")


def test_info() -> None:
    result = CliRunner().invoke(app, ["info", TABLE])
    assert result.exit_code == 0, result.output
    assert "format=delta" in result.output and "version=15" in result.output


def test_info_time_travel() -> None:
    result = CliRunner().invoke(app, ["info", TABLE, "--version", "0"])
    assert result.exit_code == 0, result.output
    assert "version=0" in result.output


def test_files_history_head() -> None:
    runner = CliRunner()
    assert "15 files" in runner.invoke(app, ["files", TABLE]).output
    assert "DELETE" in runner.invoke(app, ["history", TABLE, "--limit", "3"]).output
    assert runner.invoke(app, ["head", TABLE, "--rows", "3"]).exit_code == 0


def test_errors_are_reported(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["info", str(tmp_path / "missing")])
    assert result.exit_code != 0


def test_migrate_then_sync_again(tmp_path: Path) -> None:
    import lance

    import lakecore

    target = str(tmp_path / "lance")
    runner = CliRunner()
    result = runner.invoke(app, ["migrate", TABLE, target, "--to", "lance", "--history"])
    assert result.exit_code == 0, result.output
    assert "delta -> lance" in result.output and "deletes carried" in result.output
    expected = lakecore.open(TABLE).to_arrow()
    got = lance.dataset(target).to_table()
    key = [(c, "ascending") for c in expected.column_names]
    assert got.select(expected.column_names).sort_by(key).to_pylist() == (
        expected.sort_by(key).to_pylist()
    )
    again = runner.invoke(app, ["migrate", TABLE, target, "--to", "lance", "--history"])
    assert again.exit_code == 0, again.output
    assert "0 source version(s) in 0 commit(s)" in again.output


def test_migrate_error_is_one_line(tmp_path: Path) -> None:
    from lakecore.cli import main

    argv = ["lakecore", "migrate", TABLE, str(tmp_path / "t"), "--to", "hudi", "--mode", "metadata"]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("sys.argv", argv)
        with pytest.raises(SystemExit) as exit_info:
            main()
    assert exit_info.value.code == 1
