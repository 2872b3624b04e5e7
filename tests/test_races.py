"""Two patchmgr runs at once on one --into folder, one environment, or one cache.

Each race runs two real processes at the same moment (forked, so neither pays start-up and they
really overlap). A second apply waits for the first (a file lock) and then finds the work done;
with a short PATCHMGR_LOCK_TIMEOUT it fails with one clear line instead. Nothing is ever half
written: afterwards verify passes and the tree is exactly what one uninterrupted run leaves.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest
from support.reliability import Upstreams, pristine_environment, record, replace_tree, start
from support.snapshot import snapshot

pytestmark = pytest.mark.slow


@pytest.fixture
def upstreams(tmp_path, project) -> Upstreams:
    made = Upstreams.make(tmp_path / "upstreams")
    made.write_series(project, 1)
    return made


def race(args: list[str], env_first: dict | None = None) -> list[tuple[int, str]]:
    first, second = start(args, env_first), start(args)
    return [first.wait(), second.wait()]


def paused_first(args: list[str], tmp_path, step: int, env_second: dict | None = None) -> list[tuple[int, str]]:
    """The first run stops at ``step`` while holding the lock; the second starts then."""
    marker = tmp_path / "paused"
    first = start(args, {"PATCHMGR_FAULT_PAUSE_AT": f"{step}:60", "PATCHMGR_FAULT_PAUSED": str(marker)})
    while not marker.exists():
        assert not first.finished(), first.wait()
        time.sleep(0.005)
    second = start(args, env_second)
    reached_the_lock(first.pid, second.pid, 60)
    time.sleep(0.5)  # past its first try to take the lock (and past a short PATCHMGR_LOCK_TIMEOUT)
    waited = not second.finished()
    marker.unlink()
    results = [first.wait(), second.wait()]
    if not env_second:
        assert waited and "note: waited" in results[1][1], f"the second run did not wait for the first: {results}"
    return results


def reached_the_lock(holder: int, waiter: int, seconds: float) -> None:
    """Wait until ``waiter`` has opened the state folder's lock that ``holder`` holds open (it is then trying to
    take it), or ``seconds`` passed: on a crowded machine a fixed pause can end before the second run even
    reaches the lock, and then it never waits."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        held = {path for path in open_files(holder) if os.path.basename(path) == "lock"}
        if held & set(open_files(waiter)):
            return
        time.sleep(0.01)


def open_files(pid: int) -> list[str]:
    try:
        folder = f"/proc/{pid}/fd"
        return [os.readlink(os.path.join(folder, name)) for name in os.listdir(folder)]
    except OSError:  # it ended, or a descriptor closed while it was read
        return []


def one_applied(results, applied: str) -> None:
    outputs = [output for _code, output in results]
    assert [code for code, _ in results] == [0, 0], outputs
    assert sum(applied in output for output in outputs) >= 1, outputs
    assert all(applied in output or "nothing to do" in output for output in outputs), outputs
    assert not any("Traceback" in output for output in outputs), outputs


def test_two_applies_into_one_folder(tmp_path, cli, project, upstreams):
    into, reference, older = tmp_path / "build", tmp_path / "reference", tmp_path / "older"
    assert cli("apply", "--target", "t", "--into", str(older), *upstreams.sources).code == 0
    upstreams.write_series(project, 2)
    assert cli("apply", "--target", "t", "--into", str(reference), *upstreams.sources).code == 0
    after = snapshot(reference, git_internals=False)
    args = ["apply", "--target", "t", "--into", str(into), *upstreams.sources, "--root", str(project.root)]
    races = corrupted = 0

    def settled():
        """Count a race whose end state is not exactly one uninterrupted run's; RELIABILITY.md says none is."""
        nonlocal corrupted
        corrupted += not (
            snapshot(into, git_internals=False) == after
            and cli("verify", "--target", "t", "--into", str(into)).code == 0
        )

    # the first holds the lock mid-build; the second waits, then finds it applied
    for start_from in (None, older):
        shutil.rmtree(into, ignore_errors=True)
        if start_from:
            replace_tree(start_from, into)
        one_applied(paused_first(args, tmp_path, 3), "applied target t")
        settled()
        races += 1
    # both at the same moment, into a new folder and over an older checkout
    for start_from in (None, older):
        shutil.rmtree(into, ignore_errors=True)
        if start_from:
            replace_tree(start_from, into)
        one_applied(race(args), "applied target t")
        settled()
        races += 1
    # a second run that may not wait long says so, and changes nothing
    replace_tree(older, into)
    (first_code, first_out), (code, out) = paused_first(args, tmp_path, 3, {"PATCHMGR_LOCK_TIMEOUT": "0.2"})
    assert first_code == 0 and code == 1, (first_out, out)
    assert "error: another patchmgr run holds" in out and "gave up after 0.2s" in out and "Traceback" not in out
    settled()
    record("apply --into, two at once", races=races + 1, corrupted=corrupted)
    assert corrupted == 0


@pytest.fixture
def env(tmp_path, tmp_path_factory):
    venv = tmp_path / "venv"
    replace_tree(pristine_environment(tmp_path_factory), venv)
    return venv


def test_two_applies_into_one_environment(tmp_path, cli, project, upstreams, env):
    pristine = tmp_path / "pristine"
    replace_tree(env, pristine)
    python = ["--target", "t", "--python", str(env / "bin" / "python")]
    assert cli("apply", *python, *upstreams.sources).code == 0
    after = snapshot(env)
    args = ["apply", *python, *upstreams.sources, "--root", str(project.root)]
    applied = "applied target t into"
    assert cli("revert", *python).code == 0
    reverted = snapshot(env)  # apply then revert, one after the other: what a revert that went last leaves
    races = corrupted = 0

    def settled(*allowed):
        """Count a race whose end state is not exactly one of the states uninterrupted runs leave."""
        nonlocal corrupted
        now = snapshot(env)
        exact = now in (allowed or (after,))
        corrupted += not (exact and (now != after or cli("verify", *python).code == 0))

    replace_tree(pristine, env)
    one_applied(paused_first(args, tmp_path, 5), applied)
    settled()
    races += 1
    for _ in range(3):
        replace_tree(pristine, env)
        one_applied(race(args), applied)
        settled()
        races += 1
    replace_tree(pristine, env)
    (first_code, first_out), (code, out) = paused_first(args, tmp_path, 5, {"PATCHMGR_LOCK_TIMEOUT": "0.2"})
    assert first_code == 0 and code == 1, (first_out, out)
    assert "error: another patchmgr run holds" in out and "Traceback" not in out
    settled()
    # apply and revert at once: whichever goes second sees the first's result, never half of it
    for _ in range(2):
        results = [start(["revert", *python, "--root", str(project.root)]), start(args)]
        codes = [child.wait()[0] for child in results]
        assert codes == [0, 0]
        settled(after, reverted)  # whichever went last decides; never a mix of the two
        assert cli("apply", *python, *upstreams.sources).code == 0
        settled()
        races += 1
    record("apply --python, two at once", races=races + 1, corrupted=corrupted)
    assert corrupted == 0


def test_two_fetches_into_one_cache(tmp_path, cli, project, upstreams):
    cache = tmp_path / "cache"
    args = ["fetch", "--target", "t", *upstreams.sources, "--root", str(project.root)]
    rounds = corrupted = 0
    for _ in range(4):
        shutil.rmtree(cache, ignore_errors=True)
        results = race(args)
        assert [code for code, _ in results] == [0, 0], results
        for name, pin in (("minilib", upstreams.pin_lib), ("minitool", upstreams.pin_tool)):
            clone = cache / "git" / f"{name}.git"
            sound = (clone / "patchmgr-absent" / pin).is_file() and subprocess.run(
                ["git", "-C", str(clone), "fsck", "--no-progress", "--connectivity-only", pin], capture_output=True
            ).returncode == 0
            corrupted += not sound
        rounds += 1
    # the cache is complete: with both sources gone, apply checks out from it alone
    for repo in (upstreams.lib, upstreams.tool):
        repo.path.rename(repo.path.with_name(repo.path.name + "-gone"))
    into = tmp_path / "build"
    result = cli("apply", "--target", "t", "--into", str(into))
    assert result.code == 0, result.out + result.err
    assert cli("verify", "--target", "t", "--into", str(into)).code == 0
    record("fetch, two at once into one cache", races=rounds, corrupted=corrupted)
    assert corrupted == 0
    assert os.environ["PATCHMGR_CACHE"] == str(cache)
