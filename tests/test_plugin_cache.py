"""Entry points of group ``lakecore`` are looked up once per ``sys.path``, not per open
(the lookup reads every installed distribution's metadata: most of a small table's open)."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from lakecore import plugins


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []

    def entry_points(*, group: str) -> list[Any]:
        calls.append(group)
        return []

    monkeypatch.setattr(plugins, "entry_points", entry_points)
    return calls


def test_entry_points_are_looked_up_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _counting(monkeypatch)
    for _ in range(3):
        assert "delta" in plugins.load_registry(disabled=[]).names()
    assert calls == ["lakecore"]


def test_forgetting_or_a_new_sys_path_looks_them_up_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _counting(monkeypatch)
    plugins.load_registry(disabled=[])
    plugins.forget_entry_points()
    plugins.load_registry(disabled=[])
    monkeypatch.setattr(sys, "path", [*sys.path, "/nonexistent-lakecore-plugins"])
    plugins.load_registry(disabled=[])
    plugins.load_registry(disabled=[])
    assert len(calls) == 3
