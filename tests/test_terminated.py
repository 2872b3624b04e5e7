"""SIGTERM and SIGHUP (``timeout``, ``docker stop``, a cancelled CI job, a closed terminal) end a command as
Ctrl-C does: its own cleanup runs, no process it started outlives it, no temporary folder is left, and it exits
128 + the signal's number with one line that says why. Before, SIGTERM ended patchmgr on the spot: a smoke
run's pytest (in a session of its own) ran on with nobody enforcing its time limit.

Smoke is run through the console script in a real process; apply is sent SIGTERM at every durable step
(``PATCHMGR_FAULT_TERM_AT``, in a forked process that runs the console script's entry), and the next command
must find the build exactly as before the run or as an uninterrupted run leaves it."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.kill_points import into_a_new_folder, venv_args
from support.processes import ended, gone, processes_naming, silent_server
from support.reliability import TERM, kill_every_step, replace_tree
from support.smoke_scene import CPU_ONLY, Scene, hangs
from support.snapshot import snapshot

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def private_tmp(tmp_path, monkeypatch) -> Path:
    """The TMPDIR of every patchmgr process the test starts, to find what one leaves there."""
    folder = tmp_path / "tmpdir"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    return folder


@pytest.mark.parametrize("ending", [signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_a_smoke_run_told_to_end_ends_its_tests_and_cleans_up(ending, tmp_path, project, cli, monkeypatch, private_tmp):
    import patchmgr.smoke.runner

    monkeypatch.setattr(patchmgr.smoke.runner, "available_devices", lambda python: dict(CPU_ONLY))
    scene = Scene(tmp_path, project, cli)
    pids = tmp_path / "pids"
    scene.one_patch_applied(hangs(pids))
    command = [sys.executable, "-m", "patchmgr", "smoke", "--target", "t", "--into", str(scene.into), "--device"]
    smoke = subprocess.Popen(
        [*command, "cpu", "--root", str(project.root)],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while not (pids.exists() and pids.read_text()) and time.monotonic() < deadline:
        time.sleep(0.1)
    pytest_pid, child = (int(pid) for pid in pids.read_text().split())
    smoke.send_signal(ending)
    out, err = smoke.communicate(timeout=60)
    try:
        assert smoke.returncode == 128 + ending, (smoke.returncode, out, err)
        assert err.splitlines()[-1] == f"patchmgr: stopped by {ending.name}", err
        assert "Traceback" not in err
        assert ended(pytest_pid, child), "a process of the smoke run outlived it"
        assert list(private_tmp.iterdir()) == []
    finally:
        for pid in (pytest_pid, child):
            if not gone(pid):
                os.kill(pid, signal.SIGKILL)


def test_apply_into_a_new_folder_terminated_at_every_step(tmp_path, cli, project, upstreams, private_tmp):
    into, after, observe = into_a_new_folder(tmp_path, cli, upstreams)

    def restore():
        shutil.rmtree(into, ignore_errors=True)

    args = ["apply", "--target", "t", "--into", str(into), *upstreams.sources, "--root", str(project.root)]
    kill_every_step("apply --into, SIGTERM", args, restore, {}, after, observe, minimum=10, fault=TERM)
    assert list(private_tmp.iterdir()) == [], "a terminated apply left a temporary folder"


def test_apply_python_terminated_at_every_third_step(cli, project, upstreams, venv, pristine_venv, private_tmp):
    before = snapshot(venv)
    assert cli("apply", *venv_args(venv), *upstreams.sources).code == 0
    after = snapshot(venv)

    def observe():
        result = cli("verify", *venv_args(venv, "--json"))
        state = snapshot(venv)
        assert result.code == (0 if state == after else 1), result.out
        return state, result.json["notes"]

    args = ["apply", *venv_args(venv), *upstreams.sources, "--root", str(project.root)]
    restore = lambda: replace_tree(pristine_venv, venv)  # noqa: E731
    kill_every_step("apply --python, SIGTERM", args, restore, before, after, observe, stride=3, minimum=15, fault=TERM)
    assert list(private_tmp.iterdir()) == [], "a terminated apply left a temporary folder"


def test_smoke_told_to_end_while_pip_builds_its_environment_leaves_no_pip_and_no_files(
    tmp_path, project, cli, monkeypatch, private_tmp
):
    """pip starts itself again under the new environment's interpreter; that second pip ended too, and its
    temporary files (kept inside the environment being built) went with the half-built environment."""
    import patchmgr.smoke.runner

    monkeypatch.setattr(patchmgr.smoke.runner, "available_devices", lambda python: dict(CPU_ONLY))
    scene = Scene(tmp_path, project, cli)
    scene.patch()
    scene.smoke_test("def test_add():\n    pass\n")
    scene.manifest(smoke_requirements=["slowpkg"])
    scene.apply()
    cache = Path(os.environ["PATCHMGR_CACHE"])
    with silent_server() as index:
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "PIP_CONFIG_FILE": os.devnull,
            "PIP_INDEX_URL": f"{index}/simple/",
        }
        command = [sys.executable, "-m", "patchmgr", "smoke", "--target", "t", "--into", str(scene.into), "--device"]
        smoke = subprocess.Popen(
            [*command, "cpu", "--root", str(project.root)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while len(processes_naming(str(cache))) < 2 and time.monotonic() < deadline:  # both pips name the folder
            time.sleep(0.1)
        assert processes_naming(str(cache)), "pip never started"
        time.sleep(1)
        smoke.send_signal(signal.SIGTERM)
        out, err = smoke.communicate(timeout=30)
        left = processes_naming(str(cache))
        for pid in left:
            os.kill(pid, signal.SIGKILL)
    assert smoke.returncode == 143 and err.splitlines()[-1] == "patchmgr: stopped by SIGTERM", (out, err)
    assert left == [], "a pip outlived smoke"
    assert list(private_tmp.iterdir()) == [], "pip's temporary files were left behind"
    assert not list(cache.rglob("*.building-*")), "the half-built environment was left"


def test_a_stop_said_to_a_closed_stderr_still_ends_with_the_signals_status(monkeypatch):
    """SIGHUP comes when the terminal is gone: saying so cannot fail the exit status (was 1, OSError)."""
    from patchmgr.cli import termination
    from patchmgr.io import children

    monkeypatch.setattr(children, "_closed", False)  # leaving ends (and closes) children for this process
    closed = open(os.devnull, "w")  # noqa: SIM115
    closed.close()
    monkeypatch.setattr(sys, "stderr", closed)
    handlers = {number: signal.getsignal(number) for number in termination.ENDING}
    ending = termination.EndingAsInterrupts()
    try:
        with pytest.raises(termination.Terminated), ending:
            ending._interrupt(signal.SIGHUP, None)
    finally:
        for number, handler in handlers.items():
            signal.signal(number, handler)
    assert ending.exit_code == 129
