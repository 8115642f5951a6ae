"""benchmarks/run_all.py: the registry, the adapters over the committed results, and how a run
ends when benchmarks fail, time out, are skipped or write nothing (with stand-in scripts: no
real benchmark runs here)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("run_all", BENCH / "run_all.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["run_all"] = module  # dataclasses look their module up while decorating
    spec.loader.exec_module(module)
    return module


run_all = _load()

# Rows each committed results file gives: a change of layout or of the adapters shows here.
EXPECTED_ROWS = {
    "delta_dml.json": 4,
    "delta_snapshot.arena_reserve0.json": 8,
    "delta_snapshot.json": 8,
    "delta_snapshot.quick.json": 8,
    "delta_snapshot.struct.json": 4,
    "delta_write.json": 2,
    "delta_write.quick.json": 2,
    "hudi.json": 2,
    "hudi.quick.json": 2,
    "hudi_dml.json": 5,
    "hudi_dml.nopruning.json": 5,
    "hudi_dml.quick.json": 5,
    "lance.json": 7,
    "lance.quick.json": 7,
    "migration.json": 5,
    "migration.quick.json": 5,
    "migration_zero_copy.json": 2,
    "migration_zero_copy.quick.json": 2,
    "planning.json": 10,
    "planning.quick.json": 5,
    "spark_handoff.crossover.json": 8,
    "spark_handoff.json": 8,
    "spark_handoff.large.json": 10,
    "spark_handoff.quick.json": 2,
    "spark_handoff.quiet.json": 4,
    "streaming_memory.b0d42f6.json": 2,
    "streaming_memory.json": 2,
    "streaming_memory.quick.json": 2,
}


def test_every_benchmark_script_is_registered() -> None:
    scripts = {p.stem for p in BENCH.glob("*.py")} - run_all.NOT_BENCHMARKS
    registered = [b.name for b in run_all.BENCHMARKS]
    assert sorted(registered) == sorted(scripts)
    assert len(registered) == len(set(registered)) == 11


def test_list_names_every_benchmark() -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCH / "run_all.py"), "--list"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    names = [line.split()[0] for line in proc.stdout.splitlines()]
    assert names == [b.name for b in run_all.BENCHMARKS]


def test_only_selects_and_refuses_unknown_names() -> None:
    assert [b.name for b in run_all.select("lance, hudi")] == ["hudi", "lance"]
    with pytest.raises(SystemExit, match="nope"):
        run_all.select("lance,nope")


def test_adapters_read_every_committed_results_file() -> None:
    by_name = {b.name: b for b in run_all.BENCHMARKS}
    parsed: dict[str, int] = {}
    for path in sorted((BENCH / "results").glob("*.json")):
        if path.name.split(".")[0] in run_all.NOT_BENCHMARKS:
            continue  # a before/after tool's results: no reference engine, no ratio
        bench = by_name[path.name.split(".")[0]]
        rows = bench.adapter(json.loads(path.read_text()))
        for row in rows:
            assert row.lakecore > 0, (path.name, row)
            assert row.reference is None or row.reference > 0, (path.name, row)
            assert (row.reference is None) == (row.engine == ""), (path.name, row)
        parsed[path.name] = len(rows)
    assert parsed == EXPECTED_ROWS
    assert sum(parsed.values()) == 136


def test_an_adapter_refuses_a_layout_it_does_not_know() -> None:
    # run_one reports such an error as the benchmark's failure.
    for bench in run_all.BENCHMARKS:
        with pytest.raises(KeyError):
            bench.adapter({"unknown": 1})
    assert len(run_all.BENCHMARKS) == 11


def test_ratio_and_table() -> None:
    rows = (
        run_all.Row("read", "s", 2.0, 1.0, "ref"),
        run_all.Row("alone", "s", 0.5, None, ""),
    )
    assert rows[0].ratio == 2.0 and rows[1].ratio is None
    text = run_all.table([run_all.Outcome("b", "ok", 1.0, rows)])
    assert "| b | read | 2.00 s | 1.00 s (ref) | 2.00x |" in text
    assert "| b | alone | 500.0 ms | - | - |" in text


# --- A run with stand-in scripts ------------------------------------------------------------

WRITES = """
import json, sys
out = sys.argv[sys.argv.index("--output") + 1]
json.dump({"v": 3.0, "quick": "--quick" in sys.argv}, open(out, "w"))
"""
SCRIPTS = {
    "good": WRITES,
    "crashes": "raise SystemExit('boom: no table')",
    "hangs": "import time; time.sleep(60)",
    "writes_nothing": "print('forgot the results')",
    "bad_layout": WRITES.replace('"v"', '"w"'),
    "needs_engine": WRITES,
}


def _stand_ins(tmp_path: Path) -> list[Any]:
    def adapter(r: dict[str, Any]) -> list[Any]:
        return [run_all.Row("m", "s", r["v"], 1.5, "ref")]

    benches = []
    for name, code in SCRIPTS.items():
        script = tmp_path / f"{name}.py"
        script.write_text(textwrap.dedent(code))
        modules = ("no_such_engine_module_xyz",) if name == "needs_engine" else ()
        benches.append(run_all.Benchmark(name, adapter, modules, script=script))
    return benches


def test_failures_do_not_stop_the_others_and_set_the_exit_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results"
    results.mkdir()
    # A stale results file must not pass for this run's.
    (results / "writes_nothing.quick.json").write_text('{"v": 1.0}')
    monkeypatch.setattr(run_all, "BENCHMARKS", tuple(_stand_ins(tmp_path)))
    argv = ["--quick", "--timeout", "3", "--results-dir", str(results)]
    code = run_all.main(argv)
    out = capsys.readouterr().out
    assert code == 1
    assert "| good | m | 3.00 s | 1.50 s (ref) | 2.00x |" in out
    assert json.loads((results / "good.quick.json").read_text()) == {"v": 3.0, "quick": True}
    status = {line.split(":")[0]: line for line in out.splitlines() if ": " in line}
    assert "good: ok" in status["good"]
    assert "crashes: failed" in status["crashes"]
    assert "(exit 1: boom: no table)" in status["crashes"]
    assert "hangs: failed" in status["hangs"] and "timed out after 3 s" in status["hangs"]
    assert "writes_nothing: failed" in status["writes_nothing"]
    assert (
        "(wrote no new writes_nothing.quick.json: forgot the results)" in status["writes_nothing"]
    )
    assert "bad_layout: failed" in status["bad_layout"] and "KeyError" in status["bad_layout"]
    assert "needs_engine: skipped" in status["needs_engine"]
    assert "no_such_engine_module_xyz" in status["needs_engine"]
    assert len(SCRIPTS) == 6


def test_a_run_without_failures_exits_zero_and_skips_do_not_fail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(run_all, "BENCHMARKS", tuple(_stand_ins(tmp_path)))
    argv = ["--only", "good,needs_engine", "--results-dir", str(tmp_path)]
    assert run_all.main(argv) == 0
    out = capsys.readouterr().out
    assert "failed: none" in out
    # Without --quick: the full run's file name, no --quick passed.
    assert json.loads((tmp_path / "good.json").read_text()) == {"v": 3.0, "quick": False}
