"""A batched smoke process ends as soon as its junit file is written (``-p patchmgr.smoke.exit``): the file is
whole, the exit status is pytest's own (0 passed, 1 failed, a collection error 1 too), the interpreter's own end
(atexit, module teardown) and the terminal summary are skipped; any other end (no test collected) takes pytest's
way, summary included. The way before batches (PATCHMGR_SMOKE_PER_PATCH=1) does without, and probes the devices
with torch; ``--device cpu`` asks the cpu lane alone. Real pytest processes."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from patchmgr.smoke.bounded import EXIT_PLUGIN
from patchmgr.smoke.exit import ends_clean, junit_whole

CONFTEST = """
import atexit, os

def _left():
    with open(os.environ["EXIT_MARK"], "a") as out:
        out.write("atexit ran\\n")

atexit.register(_left)
"""


def run_pytest(tmp_path: Path, tests: dict[str, str], *more: str, early: bool = True) -> tuple[int, str, Path, Path]:
    """pytest on ``tests`` (file name: text) with the junit file, as patchmgr calls it: its exit status, output,
    junit file and the file the conftest's atexit handler writes to."""
    folder = tmp_path / "t"
    folder.mkdir()
    (folder / "conftest.py").write_text(CONFTEST)
    for name, text in tests.items():
        (folder / name).write_text(text)
    junit, mark = tmp_path / "junit.xml", tmp_path / "mark"
    plugin = ["-p", EXIT_PLUGIN] if early else []
    root = str(Path(__file__).resolve().parents[1])
    env = {
        **os.environ,
        "EXIT_MARK": str(mark),
        "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin, f"--junitxml={junit}", *more],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.returncode, done.stdout + done.stderr, junit, mark


def cases(junit: Path) -> dict[str, str]:
    """Each junit case's name and outcome (a parse error fails the test: the file must be whole)."""
    found = {}
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        tags = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        found[case.get("name") or ""] = tags[0] if tags else "passed"
    return found


PASSING = "def test_one():\n    assert 1 + 1 == 2\n\n\ndef test_two():\n    assert True\n"
FAILING = "def test_bad():\n    assert 1 + 1 == 3\n\n\ndef test_good():\n    assert True\n"


def test_passing_tests_end_at_once_with_a_whole_junit_file_and_exit_0(tmp_path):
    code, output, junit, mark = run_pytest(tmp_path, {"test_a.py": PASSING})
    assert code == 0, output
    assert junit_whole(junit)
    assert cases(junit) == {"test_one": "passed", "test_two": "passed"}
    assert not mark.exists(), "the interpreter's own end ran: the process did not end early"
    assert "passed in" not in output  # the terminal summary is skipped too


def test_a_failing_test_still_exits_1_with_its_failure_in_the_junit_file(tmp_path):
    code, output, junit, mark = run_pytest(tmp_path, {"test_a.py": FAILING})
    assert code == 1, output
    assert cases(junit) == {"test_bad": "failure", "test_good": "passed"}
    assert not mark.exists()


def test_a_collection_error_in_a_batch_exits_1_with_the_error_in_the_junit_file(tmp_path):
    tests = {"test_a.py": PASSING, "test_broken.py": "import no_such_module_here\n"}
    code, output, junit, mark = run_pytest(tmp_path, tests, "--continue-on-collection-errors")
    assert code == 1, output
    found = cases(junit)
    assert found["test_one"] == found["test_two"] == "passed"
    assert "error" in found.values()
    assert not mark.exists()


def test_no_test_collected_takes_pytests_own_way_with_its_summary(tmp_path):
    code, output, junit, mark = run_pytest(tmp_path, {"test_a.py": "X = 1\n"})
    assert code == 5, output
    assert "no tests ran" in output  # the words a reason quotes
    assert mark.exists()


def test_without_the_plugin_the_interpreter_ends_as_usual(tmp_path):
    code, output, _, mark = run_pytest(tmp_path, {"test_a.py": PASSING}, early=False)
    assert code == 0, output
    assert mark.read_text() == "atexit ran\n"  # the check above can tell an early end from pytest's own


@pytest.mark.fast
def test_only_a_clean_end_with_a_whole_file_ends_early(tmp_path):
    assert ends_clean(0, 3, 0) and ends_clean(1, 3, 1) and ends_clean(1, 0, 1)  # a collection error counts
    assert not ends_clean(0, 0, 0)  # nothing collected
    assert not ends_clean(1, 3, 0)  # failed, yet nothing counted: pytest's own words are the reason
    assert not any(ends_clean(code, 3, 1) for code in (2, 3, 4, 5))
    cut = tmp_path / "cut.xml"
    cut.write_text('<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">')
    assert not junit_whole(cut) and not junit_whole(tmp_path / "absent.xml")


@pytest.mark.fast
def test_the_way_before_batches_keeps_pytests_own_end_and_the_torch_probe(monkeypatch, tmp_path):
    from patchmgr.smoke.pytest_run import PER_PATCH_ENV, pytest_command

    class Project:
        root = tmp_path

    monkeypatch.delenv(PER_PATCH_ENV, raising=False)
    assert EXIT_PLUGIN in pytest_command(Project(), "python", tmp_path / "j.xml", ["t.py"])  # type: ignore[arg-type]
    monkeypatch.setenv(PER_PATCH_ENV, "1")
    assert EXIT_PLUGIN not in pytest_command(Project(), "python", tmp_path / "j.xml", ["t.py"])  # type: ignore[arg-type]


def test_the_cpu_lane_is_probed_without_torch():
    from patchmgr.smoke.runner import cpu_devices

    probed = cpu_devices(sys.executable)
    assert probed["cpu"] is None
    assert probed["cuda"] == probed["npu"] == "not probed (--device cpu)"
