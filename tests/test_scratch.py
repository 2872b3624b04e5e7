"""patchmgr marks each temporary folder it makes as its own, and the next patchmgr removes those a killed one left
(``patchmgr/io/scratch.py``): only a folder patchmgr marked, a real folder of this user's, whose maker is gone (by
its number and its start time), and in which nothing has changed for a while. Real folders made by real processes
killed with SIGKILL, and a real smoke run killed so."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.processes import ended
from support.smoke_scene import CPU_ONLY, Scene, hangs

from patchmgr.io import scratch

ROOT = Path(__file__).resolve().parent.parent
OLD = time.time() - 2 * scratch.STALE_AFTER
MARK = ".patchmgr-scratch"  # the file patchmgr writes into each folder it makes, naming the process that made it
MAKES = "import sys, time\nfrom patchmgr.io import scratch\nkept = scratch.folder(sys.argv[1])\nprint(kept.name)"


def dead_pid() -> int:
    done = subprocess.Popen(["true"])
    done.wait()
    return done.pid


def made(where: Path, what: str = "smoke", killed: bool = True) -> tuple[Path, subprocess.Popen]:
    """The folder ``scratch.folder`` makes in ``where`` for a process of its own, with a file in it; the process is
    then killed outright (no cleanup runs), or left running when not ``killed``."""
    maker = subprocess.Popen(
        [sys.executable, "-u", "-c", f"{MAKES}\ntime.sleep(1000)\n", what],
        env={**os.environ, "TMPDIR": str(where), "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        text=True,
    )
    assert maker.stdout is not None
    folder = Path(maker.stdout.readline().strip())
    (folder / "junit.xml").write_text("<testsuite/>")
    if killed:
        maker.kill()
        maker.wait()
    return folder, maker


def aged(folder: Path, age: float = OLD) -> Path:
    """``folder`` and everything in it last modified at ``age`` (a link itself, not what it names)."""
    for root, folders, files in os.walk(folder, topdown=False):
        for name in folders + files:
            os.utime(os.path.join(root, name), (age, age), follow_symlinks=False)
    os.utime(folder, (age, age))
    return folder


def walked(folder: Path) -> Iterator[Path]:
    for root, folders, files in os.walk(folder):
        yield from (Path(root, name) for name in folders + files)


@pytest.fixture
def tmpdir_of_processes(tmp_path, monkeypatch) -> Path:
    where = tmp_path / "tmp"
    where.mkdir()
    monkeypatch.setenv("TMPDIR", str(where))
    monkeypatch.setattr(tempfile, "tempdir", None)
    return where


def test_a_folder_patchmgr_did_not_mark_is_never_removed(tmpdir_of_processes, tmp_path):
    """Before, the sweep removed any folder named like patchmgr's, of a process that no longer runs, left a while:
    a user's own patchmgr-backup-… folder with it."""
    where, gone = tmpdir_of_processes, dead_pid()
    backup = where / f"patchmgr-backup-{gone}-abcdefgh"
    backup.mkdir()
    (backup / "notes.txt").write_text("mine")
    forged, _ = made(where)
    other, _ = made(where)
    (forged / MARK).unlink(missing_ok=True)
    (forged / MARK).symlink_to(other / MARK)  # a mark patchmgr wrote, but through a link
    unreadable, _ = made(where)
    (unreadable / MARK).write_text("hello\n")  # a file of that name that is no mark
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    linked_to, _ = made(outside)
    (where / f"patchmgr-smoke-{gone}-linkxxxx").symlink_to(linked_to)
    kept = [backup, forged, unreadable, linked_to]
    if os.getuid() == 0:  # as root: a folder marked by a process of another user, whose it is
        strangers, _ = made(where)
        for path in [strangers, *walked(strangers)]:
            os.chown(path, 65534, 65534, follow_symlinks=False)
        kept.append(strangers)
    (other / MARK).unlink(missing_ok=True)  # the one folder with a real mark of a gone process: kept, once unmarked
    for folder in [*kept, other]:
        aged(folder)
    assert scratch.sweep() == []
    assert all(folder.is_dir() for folder in kept)
    assert (backup / "notes.txt").read_text() == "mine"
    assert (where / f"patchmgr-smoke-{gone}-linkxxxx").is_symlink()


def test_a_folder_still_written_in_is_kept_however_old_the_folder_itself(tmpdir_of_processes):
    """Before, the sweep looked at the folder's own time, which a write into a file inside does not change."""
    folder, _ = made(tmpdir_of_processes)
    aged(folder)
    with open(folder / "junit.xml", "a") as written:  # written into just now: the folder's own time stays old
        written.write("<testcase/>")
    assert folder.stat().st_mtime < OLD + 1
    assert scratch.sweep() == []
    assert (folder / "junit.xml").is_file()
    aged(folder)  # left alone since: it goes
    assert scratch.sweep() == [folder.name]


def test_a_folder_goes_once_its_maker_is_gone_by_number_and_start_time(tmpdir_of_processes, tmp_path):
    """A process that now has the number of a folder's maker is another process (it started at another time): the
    folder goes. Before, the sweep asked only whether some process had that number."""
    where = tmpdir_of_processes
    stale, _ = made(where)
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "data").write_text("kept")
    (stale / "out").symlink_to(precious)  # removed as a link, never followed
    reused, killed = made(where)
    renamed = where / reused.name.replace(f"-{killed.pid}-", f"-{os.getpid()}-")
    reused.rename(renamed)
    mark = renamed / MARK
    if mark.is_file():  # its mark names a number in use again (a patchmgr without marks read the name alone)
        mark.write_text(re.sub(r"(?m)^pid \d+$", f"pid {os.getpid()}", mark.read_text()))
    running, maker = made(where, killed=False)
    try:
        for folder in (stale, renamed, running):
            aged(folder)
        assert sorted(scratch.sweep()) == sorted([stale.name, renamed.name])
        assert running.is_dir(), "the folder of a process that runs was removed"
        assert (precious / "data").read_text() == "kept"
    finally:
        maker.kill()
        maker.wait()
    assert scratch.sweep() == [running.name]  # its maker is gone now


def test_a_folder_is_marked_with_its_process_and_the_first_one_sweeps(tmpdir_of_processes, monkeypatch):
    stale, _ = made(tmpdir_of_processes, "unpatched")
    aged(stale)
    monkeypatch.setattr(scratch, "_swept_by", set())
    with scratch.folder("unpatched") as folder:
        assert Path(folder).name.startswith(f"patchmgr-unpatched-{os.getpid()}-")
        assert scratch._NAME.match(Path(folder).name)
        mark = (Path(folder) / MARK).read_text()
        assert scratch.MARK == MARK
        maker = scratch.Maker.read(mark)
        assert maker == scratch.Maker.this_process() and maker is not None and not maker.gone()
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
    aged(stale)
    scene.smoke_test("def test_add():\n    pass\n")  # the next run, on a test that ends
    again = subprocess.run([*command, "cpu", "--root", str(project.root)], env=env, capture_output=True, text=True)
    assert again.returncode in (0, 1), again.stderr
    assert list(where.iterdir()) == [], "the killed run's folder is still there"
