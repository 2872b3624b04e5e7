"""patchmgr's temporary folders name the process that made them, and a killed patchmgr's folders are removed by
the next one (``patchmgr/io/scratch.py``): only this user's real folders, of a process that no longer runs,
untouched for a while. Real folders, real processes, and a real smoke run killed with SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from support.processes import ended
from support.smoke_scene import CPU_ONLY, Scene, hangs

from patchmgr.io import scratch

ROOT = Path(__file__).resolve().parent.parent
OLD = time.time() - 2 * scratch.STALE_AFTER


def dead_pid() -> int:
    done = subprocess.Popen(["true"])
    done.wait()
    return done.pid


def left(where: Path, name: str, age: float | None = OLD, content: bool = True) -> Path:
    folder = where / name
    folder.mkdir()
    if content:
        (folder / "junit.xml").write_text("<testsuite/>")
    if age is not None:
        os.utime(folder, (age, age))
    return folder


@pytest.fixture
def tmpdir_of_processes(tmp_path, monkeypatch) -> Path:
    where = tmp_path / "tmp"
    where.mkdir()
    monkeypatch.setenv("TMPDIR", str(where))
    monkeypatch.setattr(tempfile, "tempdir", None)
    return where


def test_only_the_folders_of_processes_that_are_gone_and_left_a_while_go(tmpdir_of_processes):
    where, gone = tmpdir_of_processes, dead_pid()
    stale = left(where, f"patchmgr-smoke-{gone}-ab12cd34")
    stale_view = left(where, f"patchmgr-smoke-at-ref-{gone}-zz_9x8y7")
    kept = [
        left(where, f"patchmgr-merge-{os.getpid()}-ab12cd34"),  # its process runs
        left(where, f"patchmgr-smoke-{gone}-ef56gh78", age=None),  # changed just now
        left(where, f"patchmgr-merge-{gone}-toolongname"),  # not a name patchmgr gives
        left(where, f"other-smoke-{gone}-ab12cd34"),
    ]
    (where / f"patchmgr-stat-{gone}-linkxxxx").symlink_to(stale / "junit.xml")
    (where / f"patchmgr-stat-{gone}-filexxxx").write_text("a file, not a folder")
    assert sorted(scratch.sweep()) == sorted([stale.name, stale_view.name])
    assert not stale.exists() and not stale_view.exists()
    assert all(folder.is_dir() for folder in kept)
    assert (where / f"patchmgr-stat-{gone}-linkxxxx").is_symlink()
    assert (where / f"patchmgr-stat-{gone}-filexxxx").is_file()


def test_a_folder_names_its_process_and_the_first_one_sweeps(tmpdir_of_processes, monkeypatch):
    stale = left(tmpdir_of_processes, f"patchmgr-unpatched-{dead_pid()}-ab12cd34")
    monkeypatch.setattr(scratch, "_swept_by", set())
    with scratch.folder("unpatched") as made:
        assert Path(made).name.startswith(f"patchmgr-unpatched-{os.getpid()}-")
        assert scratch._NAME.match(Path(made).name)
        assert not stale.exists()


def test_a_smoke_run_killed_outright_leaves_its_folder_to_the_next_run(tmp_path, project, cli, monkeypatch):
    import patchmgr.smoke.runner

    monkeypatch.setattr(patchmgr.smoke.runner, "available_devices", lambda python: dict(CPU_ONLY))
    where = tmp_path / "tmp"
    where.mkdir()
    pids = tmp_path / "pids"
    scene = Scene(tmp_path, project, cli).one_patch_applied(hangs(pids))
    command = [sys.executable, "-m", "patchmgr", "smoke", "--target", "t", "--into", str(scene.into), "--device"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(where)}
    killed = subprocess.Popen([*command, "cpu", "--root", str(project.root)], env=env, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not (pids.exists() and pids.read_text()) and time.monotonic() < deadline:
        time.sleep(0.1)
    killed.send_signal(signal.SIGKILL)  # no cleanup runs: its folder, and its pytest, stay
    killed.wait()
    for pid in map(int, pids.read_text().split()):
        os.kill(pid, signal.SIGKILL)
        assert ended(pid)
    (stale,) = where.iterdir()
    assert stale.name.startswith(f"patchmgr-smoke-{killed.pid}-")
    os.utime(stale, (OLD, OLD))
    scene.smoke_test("def test_add():\n    pass\n")  # the next run, on a test that ends
    again = subprocess.run([*command, "cpu", "--root", str(project.root)], env=env, capture_output=True, text=True)
    assert again.returncode in (0, 1), again.stderr
    assert list(where.iterdir()) == [], "the killed run's folder is still there"
