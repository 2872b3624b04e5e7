"""smoke is bounded and speaks to logs: a test past its time limit is not proven and its whole process tree ends;
off a terminal each run says when it starts and ends on stderr, and the results are lines neither padded nor cut;
a patch's own reason (no Smoke-Test) is not hidden behind an interpreter's. Real git repositories, the real CLI."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
from support.processes import ended, gone
from support.smoke_scene import CPU_ONLY, DETECTS, Scene, hangs, verdicts

PYPROJECT = '[project]\nname = "lib"\nversion = "1.0"\nrequires-python = ">=3.99"\n'


@pytest.fixture
def scene(tmp_path, project, cli, monkeypatch) -> Scene:
    import patchmgr.smoke.runner

    monkeypatch.setattr(patchmgr.smoke.runner, "available_devices", lambda python: dict(CPU_ONLY))
    return Scene(tmp_path, project, cli)


def ready(scene: Scene, test: str, **patch) -> None:
    scene.patch()
    if patch:
        scene.patch(**patch)
    scene.manifest(("fix-add", *([patch["patch_id"]] if patch else [])))
    scene.smoke_test(test)
    scene.apply()


def test_a_test_past_the_time_limit_is_not_proven_and_its_process_tree_is_ended(scene, tmp_path):
    pids = tmp_path / "pids"
    ready(scene, hangs(pids))
    started = time.monotonic()
    code, doc = scene.smoke_json("--timeout", "2")
    assert time.monotonic() - started < 60
    assert code == 1
    verdict, reason = verdicts(doc)["fix-add"]
    assert verdict == "not-proven" and "test_add on cpu timed out after 2 s" in reason, reason
    assert doc["summary"] == {"proven": 0, "failed": 0, "not-proven": 1}
    (result,) = doc["results"]
    assert result["result"] == "timed-out" and result["test"].endswith("test_add.py::test_add")
    pytest_pid, child = (int(pid) for pid in pids.read_text().split())
    assert ended(pytest_pid, child), "a process of the timed-out test outlived the run"

    unpatched = scene.smoke("--timeout", "2", "--unpatched")  # without the patch it is never a proof either
    assert unpatched.code == 1
    assert "not proven: lib/fix-add: test_add on cpu timed out after 2 s" in unpatched.out


def test_tests_that_ended_before_the_limit_keep_their_outcomes(scene):
    ready(scene, "import time\n\n\ndef test_always():\n    pass\n\n\ndef test_hang():\n    time.sleep(1000)\n")
    code, doc = scene.smoke_json("--timeout", "2")
    assert code == 1
    assert [(r["test"].rsplit("::", 1)[-1], r["result"]) for r in doc["results"]] == [
        ("test_always", "passed"),
        ("test_hang", "timed-out"),
    ]
    assert verdicts(doc)["fix-add"][1].startswith("test_hang on cpu timed out after 2 s")
    # without the patch, a test that passes is still the failure it always was: it does not detect the bug
    code, doc = scene.smoke_json("--timeout", "2", "--unpatched")
    verdict, reason = verdicts(doc)["fix-add"]
    assert code == 1 and verdict == "failed" and reason.startswith("test_always on cpu passes without the patch")


def test_a_module_that_hangs_on_import_is_bounded_too(scene):
    ready(scene, "import time\n\ntime.sleep(1000)\n\n\ndef test_add():\n    pass\n")
    code, doc = scene.smoke_json("--timeout", "2")
    assert code == 1
    verdict, reason = verdicts(doc)["fix-add"]
    assert verdict == "not-proven" and "timed out after 2 s" in reason and "before any test started" in reason


def test_a_time_limit_must_be_positive(scene):
    ready(scene, DETECTS)
    result = scene.smoke("--timeout", "0")
    assert result.code == 2 and "error: --timeout 0: a time limit must be more than 0 seconds" in result.err


def test_a_patch_without_smoke_test_on_a_foreign_python_says_so_not_the_range(scene):
    scene.pin = scene.upstream.commit({"pyproject.toml": PYPROJECT}, "declare python")
    ready(scene, DETECTS.replace("== 5", "== 6"), smoke_tests=None, patch_id="untested", files={"README": "lib!\n"})
    code, doc = scene.smoke_json()
    assert code == 1
    tested, untested = verdicts(doc)["fix-add"], verdicts(doc)["untested"]
    assert untested == ("not-proven", "the patch names no Smoke-Test")
    assert tested[0] == "not-proven" and tested[1].startswith("needs Python >=3.99")  # an outcome there still is

    scene.manifest(("untested",))  # alone: nothing ran on this Python, so nothing passed there either
    scene.apply()  # (smoke tests only the series apply wrote)
    code, doc = scene.smoke_json()
    assert code == 1 and verdicts(doc)["untested"] == ("not-proven", "the patch names no Smoke-Test")
    assert not any("they passed there" in note for note in doc["notes"]), doc["notes"]


LONG = "why " * 60  # under the 300 characters a reason keeps of pytest's message


def test_off_a_terminal_progress_goes_to_stderr_and_results_are_lines_for_a_log(scene):
    failing = DETECTS + f"\n\ndef test_long():\n    assert False, {LONG!r}\n"
    ready(scene, failing, smoke_tests=None, patch_id="untested", files={"README": "lib!\n"})
    result = scene.smoke()
    assert result.code == 1
    progress = [line for line in result.err.splitlines() if line.startswith("smoke: ")]
    assert progress[0] == "smoke: lib: started"
    assert progress[1] == "smoke: lib/fix-add cpu: started"
    assert progress[2].startswith("smoke: lib/fix-add cpu: 1 passed, 1 failed in ") and progress[2].endswith("s")
    assert progress[3].startswith("smoke: lib: done in ")
    lines = result.out.splitlines()
    assert "smoke t:" in lines
    passed = next(line for line in lines if " test_add cpu: passed" in line)
    assert len(passed) < 60, passed  # not padded to the longest row
    long = next(line for line in lines if " test_long cpu: failed" in line)
    assert LONG.strip() in long  # nothing cut
    assert max(len(line) for line in lines) < len(LONG) + 120

    as_json = scene.smoke("--json")
    assert json.loads(as_json.out)["ok"] is False  # nothing but the JSON document on stdout
    assert "smoke: lib/fix-add cpu: started" in as_json.err


def test_a_normal_run_leaves_no_child_behind(scene, tmp_path):
    pids = tmp_path / "pids"
    test = f"""import subprocess


def test_add():
    child = subprocess.Popen(["sleep", "1000"])
    open({str(pids)!r}, "w").write(str(child.pid))
"""
    ready(scene, test)
    assert scene.smoke().code == 0
    assert ended(int(pids.read_text())), "a child the test left running outlived the run"


def own_group_children(pids: Path, hang: bool) -> str:
    """A smoke test with two children that each make a process group of their own (``os.setpgid(0, 0)``, in the
    session pytest leads): one its own, the other left by a process that ends at once, so that init adopts it. It
    writes both pids once both groups are made, then hangs or passes."""
    return f"""import os
import subprocess
import sys
import time

OWN_GROUP = "import os, time; os.setpgid(0, 0); time.sleep(1000)"
LEAVES = (  # the orphan does not hold the pipes its pid is read from
    "import subprocess, sys; print(subprocess.Popen([sys.executable, '-c', OWN_GROUP], "
    "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).pid)"
).replace("OWN_GROUP", repr(OWN_GROUP))


def test_add():
    child = subprocess.Popen([sys.executable, "-c", OWN_GROUP])
    orphan = int(subprocess.run([sys.executable, "-c", LEAVES], capture_output=True, text=True, check=True).stdout)
    while any(os.getpgid(pid) != pid for pid in (child.pid, orphan)):
        time.sleep(0.01)
    with open({str(pids)!r}, "w") as out:
        out.write(f"{{child.pid}} {{orphan}}")
    if {hang!r}:
        time.sleep(1000)
"""


@pytest.mark.parametrize("hang", [False, True], ids=["normal-end", "timed-out"])
def test_a_child_in_a_process_group_of_its_own_ends_with_the_run(scene, tmp_path, hang):
    """Before, smoke killed pytest's process group: a test's child that made a group of its own lived on."""
    pids = tmp_path / "pids"
    ready(scene, own_group_children(pids, hang))
    result = scene.smoke("--timeout", "5")
    assert result.code == (1 if hang else 0), result.out + result.err
    left = [int(pid) for pid in pids.read_text().split()]
    try:
        assert ended(*left), "a child in a process group of its own outlived the run"
    finally:
        for pid in left:
            if not gone(pid):
                os.kill(pid, signal.SIGKILL)
