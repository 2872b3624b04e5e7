"""The kill-point scenarios (tests/test_kill_*.py but test_kill_edit.py, which keeps its own table) each assert
their own minimum; here, read from the files and the table alone (no test's outcome): every scenario has a
minimum, and together the minimums are at least MIN_TOTAL, so a scenario removed or a floor lowered fails."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from support.kill_points import MIN_TOTAL, MINIMUM

SUITES = [
    "test_kill_apply_into.py",
    "test_kill_apply_python.py",
    "test_kill_revert.py",
    "test_kill_bump_refresh.py",
    "test_kill_export.py",
]


def scenarios() -> list[str]:
    """The tests of the suites that kill a command at every step."""
    found = []
    for name in SUITES:
        tree = ast.parse((Path(__file__).parent / name).read_text())
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                calls = {c.func.id for c in ast.walk(node) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)}
                if calls & {"kill_every_step", "kill_project_command"}:
                    found.append(node.name)
    return sorted(found)


@pytest.mark.fast
def test_every_kill_scenario_has_its_own_minimum_and_they_add_up_to_at_least_200():
    assert scenarios() == sorted(MINIMUM), (scenarios(), sorted(MINIMUM))
    assert sum(MINIMUM.values()) >= MIN_TOTAL, MINIMUM
