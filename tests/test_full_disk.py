"""A disk that fills up during apply: a clear one-line error, no traceback, and nothing changed.

The environment or the --into folder lives on a small tmpfs when the tests may mount one (root);
the run is paused at step N (PATCHMGR_FAULT_PAUSE_AT), the disk is filled to the last byte, and
the run goes on. Without a tmpfs, the paused run's file size limit is cut to zero instead
(RLIMIT_FSIZE through prlimit), so that each later write fails the same way.
"""

from __future__ import annotations

import time

import pytest
from support.reliability import Upstreams, pristine_environment, record, replace_tree, start
from support.snapshot import snapshot

pytestmark = pytest.mark.slow


def fill_at_each_step(name, disk, args, tmp_path, restore, state, before, after, stride=1) -> dict:
    """Run ``args`` once per step N, the disk filling up at N; check all or nothing each time.

    ``state()`` is the tree's snapshot, compared with ``before`` when the run fails and ``after``
    when the disk filled only once nothing was left to write."""
    counts = {"full_disk_runs": 0, "refused_unchanged": 0, "completed": 0, "tmpfs": disk.tmpfs}
    step = 1
    while True:
        restore()
        marker = tmp_path / "paused"
        marker.unlink(missing_ok=True)
        child = start(args, {"PATCHMGR_FAULT_PAUSE_AT": f"{step}:60", "PATCHMGR_FAULT_PAUSED": str(marker)})
        while not marker.exists() and not child.finished():
            time.sleep(0.005)
        paused = marker.exists()
        if paused:
            disk.fill(child.pid)
            marker.unlink()
        code, output = child.wait()
        disk.free()
        if not paused:  # there is no step N: the run went through with room to spare
            assert code == 0, output
            break
        counts["full_disk_runs"] += 1
        assert "Traceback" not in output, output
        if code == 0:
            counts["completed"] += 1
            assert state() == after
        else:
            error = [line for line in output.splitlines() if line.startswith("error: ")]
            assert code == 1 and len(error) == 1, output
            assert disk.message in error[0] or "cannot build the checkouts" in error[0], output
            assert state() == before, f"{name}: the disk filling at step {step} changed something: {output}"
            counts["refused_unchanged"] += 1
        step += stride
    record(name, **counts)
    return counts


def full_from_the_start(disk, args, state, before) -> str:
    disk.fill()
    code, output = start(args, fsize=None if disk.tmpfs else 0).wait()
    disk.free()
    assert code == 1 and "Traceback" not in output, output
    assert state() == before
    return output


def test_disk_fills_during_apply_into_over_an_older_checkout(tmp_path, cli, project, disk):
    upstreams = Upstreams.make(tmp_path / "upstreams")
    upstreams.write_series(project, 1)
    pristine, reference, into = tmp_path / "pristine", tmp_path / "reference", disk.root / "build"
    assert cli("apply", "--target", "t", "--into", str(pristine), *upstreams.sources).code == 0
    before = snapshot(pristine)
    upstreams.write_series(project, 2)
    assert cli("apply", "--target", "t", "--into", str(reference), *upstreams.sources).code == 0
    after = snapshot(reference, git_internals=False)
    args = ["apply", "--target", "t", "--into", str(into), *upstreams.sources, "--root", str(project.root)]

    def state():
        now = snapshot(into)
        return now if now == before else snapshot(into, git_internals=False)

    replace_tree(pristine, into)
    output = full_from_the_start(disk, args, state, before)
    assert f"nothing in {into} was changed" in output.replace("\n", "")
    counts = fill_at_each_step(
        "apply --into on a full disk",
        disk,
        args,
        tmp_path,
        lambda: replace_tree(pristine, into),
        state,
        before,
        after,
        stride=2,
    )
    assert counts["refused_unchanged"] >= 6


def test_disk_fills_during_apply_python(tmp_path, tmp_path_factory, cli, project, disk):
    upstreams = Upstreams.make(tmp_path / "upstreams")
    upstreams.write_series(project, 1)
    pristine = pristine_environment(tmp_path_factory)
    venv = disk.root / "venv"
    replace_tree(pristine, venv)
    before = snapshot(venv)
    python = ["--target", "t", "--python", str(venv / "bin" / "python")]
    assert cli("apply", *python, *upstreams.sources).code == 0
    after = snapshot(venv)
    args = ["apply", *python, *upstreams.sources, "--root", str(project.root)]
    replace_tree(pristine, venv)
    full_from_the_start(disk, args, lambda: snapshot(venv), before)
    counts = fill_at_each_step(
        "apply --python on a full disk",
        disk,
        args,
        tmp_path,
        lambda: replace_tree(pristine, venv),
        lambda: snapshot(venv),
        before,
        after,
        stride=4,
    )
    assert counts["refused_unchanged"] >= 10
    # and with room again, the same run goes through
    assert cli("apply", *python, *upstreams.sources).code == 0 and snapshot(venv) == after
