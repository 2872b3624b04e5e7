"""Every process patchmgr starts ends with the call that started it, with everything it started in turn
(``patchmgr/io/children.py``): on a time-out, on an interruption, and when patchmgr is told to stop while worker
threads wait on children (``matrix`` lists two upstreams' remotes side by side). Real processes: a shell that
starts a ``sleep`` of its own, and ``git ls-remote`` against a server that accepts and never answers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from support.gitrepos import UpstreamRepo
from support.processes import ended, gone, processes_naming, silent_server

from patchmgr.io import children, proc_tree

ROOT = Path(__file__).resolve().parent.parent


def grandchild_script(pids: Path) -> list[str]:
    """A shell that starts ``sleep 1000`` in the background, writes the sleep's pid, and waits for it."""
    return ["sh", "-c", f'sleep 1000 & echo $! > "{pids}"; wait']


def written_pid(path: Path) -> int:
    deadline = time.monotonic() + 30
    while not (path.exists() and path.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.02)
    return int(path.read_text())


def test_a_child_past_its_timeout_is_ended_with_what_it_started(tmp_path):
    pids = tmp_path / "pid"
    with pytest.raises(subprocess.TimeoutExpired):
        children.run(grandchild_script(pids), timeout=1)
    sleep = written_pid(pids)
    try:
        assert ended(sleep), "the child's own child outlived the time-out"
    finally:
        if not gone(sleep):
            os.kill(sleep, signal.SIGKILL)


@pytest.fixture(autouse=True)
def own_children(monkeypatch):
    """Each test sees only the children it starts: another module's test in this worker may have left a reader
    (a killed `git cat-file`) known to io/children, which end_all would end and these tests would count."""
    monkeypatch.setattr(children, "_LIVE", {})


@pytest.fixture
def reopened(monkeypatch):
    """end_all closes the module to new children for the rest of the process: opened again after the test."""
    monkeypatch.setattr(children, "_closed", False)


def test_end_all_ends_the_children_other_threads_wait_on(tmp_path, reopened):
    pids = tmp_path / "pid"
    finished: list[int] = []
    waiting = threading.Thread(target=lambda: finished.append(children.run(grandchild_script(pids)).returncode))
    waiting.start()
    sleep = written_pid(pids)
    while not children._LIVE:  # the shell can write before its thread has made it known (on a busy machine)
        time.sleep(0.01)
    try:
        children.end_all()
        waiting.join(10)
        assert not waiting.is_alive() and finished == [-signal.SIGKILL]
        assert ended(sleep), "the child's own child outlived end_all"
    finally:
        if not gone(sleep):
            os.kill(sleep, signal.SIGKILL)


def test_a_child_forgotten_while_its_tree_is_ended_is_still_ended_through_its_own_handle(tmp_path, monkeypatch):
    """The thread waiting on a child can reap and forget it (closing its pidfd) while end_all ends its tree: the
    kill that follows goes through a handle of its own, never a closed number (it was EBADF under load, in CI)."""
    pids = tmp_path / "pid"
    process = children.popen(grandchild_script(pids))
    sleep = written_pid(pids)
    real = children._end_unreaped

    def forgotten_meanwhile(handle, pid, session, stopped=None):
        real(handle, pid, session, stopped)
        children.forget(process)  # as the waiting thread does once the child is reaped

    monkeypatch.setattr(children, "_end_unreaped", forgotten_meanwhile)
    try:
        children.end_tree(process)
        assert process.returncode == -signal.SIGKILL
        assert ended(sleep), "the child's own child outlived end_tree"
    finally:
        children.forget(process)
        if not gone(sleep):
            os.kill(sleep, signal.SIGKILL)


def test_after_end_all_no_child_starts(reopened):
    children.end_all()
    with pytest.raises(children.Closed, match="patchmgr is stopping"):
        children.run(["true"])
    assert children._LIVE == {}


def test_an_interruption_while_the_tree_is_found_leaves_no_process_stopped(tmp_path, monkeypatch):
    """The tree is stopped from the top down as it is found; interrupted then, what was stopped is killed."""
    pids = tmp_path / "pid"
    process = children.popen(grandchild_script(pids))
    sleep = written_pid(pids)

    def interrupted() -> dict[int, tuple[int, int]]:
        raise KeyboardInterrupt

    monkeypatch.setattr(proc_tree, "processes", interrupted)
    try:
        with pytest.raises(KeyboardInterrupt):
            children.end_tree(process)
        assert process.returncode == -signal.SIGKILL  # the shell: stopped first, then killed, not left stopped
    finally:
        children.forget(process)
        process.kill()
        process.wait()
        os.kill(sleep, signal.SIGKILL)


def test_a_tree_past_its_programs_bound_is_ended_and_its_call_says_so(tmp_path, monkeypatch):
    """The bound git's trees get (a lazy fetch that starts fetch after fetch), here on a shell that starts ten."""
    monkeypatch.setitem(children.TREE_LIMITS, "sh", 5)
    pids = tmp_path / "pids"
    started = time.monotonic()
    with pytest.raises(children.Overgrown) as raised:
        children.run(["sh", "-c", f'for i in 1 2 3 4 5 6 7 8 9 10; do sleep 1000 & echo $! >> "{pids}"; done; wait'])
    assert time.monotonic() - started < 10
    assert raised.value.limit == 5 and raised.value.count > 5
    sleeps = [int(pid) for pid in pids.read_text().split()]
    try:
        assert ended(*sleeps), "a process of the tree outlived its end"
    finally:
        for pid in sleeps:
            if not gone(pid):
                os.kill(pid, signal.SIGKILL)
    assert children._LIVE == {}


def test_a_completed_child_is_as_subprocess_run_gives_it():
    done = children.run(["sh", "-c", "cat; echo err >&2; exit 3"], input=b"in", capture_output=True)
    assert (done.returncode, done.stdout, done.stderr) == (3, b"in", b"err\n")
    with pytest.raises(subprocess.CalledProcessError):
        children.run(["false"], check=True)
    assert children._LIVE == {}


@pytest.mark.parametrize("ending", [signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_matrix_told_to_stop_while_two_remotes_stall_ends_at_once(ending, tmp_path, project):
    """Before, matrix said it stopped and then waited for ever: its worker threads waited on git ls-remote."""
    upstream = UpstreamRepo(tmp_path / "lib")
    pin = upstream.commit({"lib/calc.py": "x = 1\n"}, "initial")
    patch = upstream.make_patch(pin, {"lib/calc.py": "x = 2\n"}, "Fix x")
    with silent_server() as address:
        spec = {  # a mirror too: the next URL is tried when the first one's git is killed, and must not start
            name: {"git": f"{address}/{name}.git", "mirrors": [f"{address}/{name}-mirror.git"], "commit": pin}
            for name in ("lib", "lib2")
        }
        for entry in spec.values():
            entry["patches"] = ["fix"]
        for name in spec:
            project.add_patch(name, "fix", patch)
        project.manifest("t", spec)
        matrix = subprocess.Popen(
            [sys.executable, "-m", "patchmgr", "matrix", "--target", "t", "--root", str(project.root)],
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while len(processes_naming(address)) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert processes_naming(address), "git never reached the server"
        time.sleep(0.5)
        matrix.send_signal(ending)
        try:
            out, err = matrix.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            matrix.kill()
            out, err = matrix.communicate()
            pytest.fail(f"matrix still ran 15 s after {ending.name}: {err[-2000:]}")
        left = processes_naming(address)
        for pid in left:
            os.kill(pid, signal.SIGKILL)
    assert matrix.returncode == 128 + ending, (matrix.returncode, out, err)
    assert err.splitlines()[-1] == f"patchmgr: stopped by {ending.name}" and "Traceback" not in err, err
    assert left == [], "a git process outlived matrix"
