"""The kill-point scenarios (tests/test_kill_*.py) each assert their own minimum; here, read from the files and
the tables alone (no test's outcome, no count carried between tests): every scenario has a minimum, and
together the minimums are at least their suite's total, so a scenario removed or a floor lowered fails."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from support import edit_kill, kill_points

pytestmark = pytest.mark.fast

SUITES = {  # the files of each table's scenarios, and the calls that kill a command at every step there
    "kill_points": (
        ["test_kill_apply_into.py", "test_kill_apply_python.py", "test_kill_revert.py"]
        + ["test_kill_bump_refresh.py", "test_kill_export.py"],
        {"kill_every_step", "kill_project_command", "kill_apply_into", "kill_apply_python"},
    ),
    "edit_kill": (["test_kill_edit_onto.py", "test_kill_edit_resume.py"], {"kill_edit", "kill_onto_the_conflict"}),
}


def scenarios(files: list[str], kills: set[str]) -> list[str]:
    """The tests in ``files`` that call one of ``kills``."""
    found = []
    for name in files:
        tree = ast.parse((Path(__file__).parent / name).read_text())
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                calls = {c.func.id for c in ast.walk(node) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)}
                if calls & kills:
                    found.append(node.name)
    return sorted(found)


def test_every_kill_scenario_has_its_own_minimum_and_they_add_up_to_at_least_200():
    assert scenarios(*SUITES["kill_points"]) == sorted(kill_points.MINIMUM)
    assert sum(kill_points.MINIMUM.values()) >= kill_points.MIN_TOTAL == 200, kill_points.MINIMUM


def test_every_edit_kill_scenario_has_its_own_minimum_and_they_add_up_to_at_least_40():
    assert scenarios(*SUITES["edit_kill"]) == sorted(edit_kill.MINIMUM)
    assert sum(edit_kill.MINIMUM.values()) >= edit_kill.MIN_TOTAL == 40, edit_kill.MINIMUM
