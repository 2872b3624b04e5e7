"""SIGKILL at every step of apply --into DIR: into a new folder, over an older checkout, and with --force over
a checkout holding local work. After each kill, verify recovers first and says what it did; the folder must
then be byte for byte the one before the run (rolled back, or never started) or exactly the one an
uninterrupted run leaves (finished). A further apply then completes."""

from __future__ import annotations

import shutil

import pytest
from support.gitrepos import git
from support.kill_points import MINIMUM, into_a_new_folder
from support.reliability import UNTOUCHED, kill_every_step, replace_tree, said
from support.snapshot import snapshot

pytestmark = pytest.mark.slow


@pytest.fixture
def kill_apply_into(request, tmp_path, project, upstreams):
    """Kill apply --into tmp_path/build (with ``options``) at every step, at least MINIMUM[this test] times;
    before each run the folder is put back as ``saved`` (None: no folder), and ``observe`` (verify) must find
    it before or after."""
    into = tmp_path / "build"

    def restore(saved):
        if saved is None:
            shutil.rmtree(into, ignore_errors=True)
        else:
            replace_tree(saved, into)

    def kill(label, saved, before, after, observe, next_apply=None, every=1, options=()):
        args = ["apply", "--target", "t", "--into", str(into), *options, *upstreams.sources]
        minimum = MINIMUM[request.node.name]
        kill_every_step(
            label,
            [*args, "--root", str(project.root)],
            lambda: restore(saved),
            before,
            after,
            observe,
            next_apply,
            every=every,
            minimum=minimum,
        )

    return kill


def test_kill_apply_into_a_new_folder(tmp_path, cli, project, upstreams, kill_apply_into):
    _into, after, observe = into_a_new_folder(tmp_path, cli, upstreams)
    kill_apply_into("apply --into, new folder", None, {}, after, observe)


def test_kill_reapply_into_over_an_older_checkout(tmp_path, cli, project, upstreams, kill_apply_into):
    """The worst place for a half swap: both checkouts and the ledger are replaced by newer ones."""
    into, pristine, reference = tmp_path / "build", tmp_path / "pristine", tmp_path / "reference"
    assert cli("apply", "--target", "t", "--into", str(pristine), *upstreams.sources).code == 0
    before = snapshot(pristine)
    upstreams.write_series(project, 2)
    assert cli("apply", "--target", "t", "--into", str(reference), *upstreams.sources).code == 0
    after = snapshot(reference, git_internals=False)

    def observe():
        result = cli("verify", "--target", "t", "--into", str(into), "--json")
        outcome = said(result.json["notes"])
        state = snapshot(into, git_internals=outcome in UNTOUCHED)
        if outcome in UNTOUCHED:  # the older checkout is back, so verify names the changed patches
            assert result.code == 1 and any("lib-3" in p for p in result.json["problems"]), result.out
        else:
            assert result.code == 0, result.out
        return state, result.json["notes"]

    def next_apply():
        result = cli("apply", "--target", "t", "--into", str(into), *upstreams.sources)
        assert result.code == 0, result.out + result.err
        assert snapshot(into, git_internals=False) == after

    kill_apply_into("apply --into, over an older checkout", pristine, before, after, observe, next_apply, every=3)


def add_local_work(checkout):
    """A local commit, a branch of its own, an edit of a tracked file and an untracked file."""
    (checkout / "src/minilib/local.py").write_text("LOCAL = 1\n")
    git(checkout, "add", "src/minilib/local.py")
    git(checkout, "commit", "-q", "-m", "Local fix")
    git(checkout, "branch", "experiment")
    with open(checkout / "src/minilib/util.py", "a") as handle:
        handle.write("HAND_EDIT = 1\n")
    (checkout / "notes.txt").write_text("my notes\n")


def assert_work_saved(checkout):
    """The new checkout carries the old one's work on patchmgr-saved/<UTC time> branches."""
    branches = git(checkout, "for-each-ref", "--format=%(refname:short)", "refs/heads/patchmgr-saved/").split()
    (main,) = [b for b in branches if not b.endswith("-experiment")]
    assert sorted(branches) == sorted([main, f"{main}-experiment"]), branches
    assert git(checkout, "show", f"{main}:notes.txt") == "my notes"
    assert git(checkout, "show", f"{main}:src/minilib/local.py") == "LOCAL = 1"
    assert git(checkout, "show", f"{main}:src/minilib/util.py").endswith("HAND_EDIT = 1")
    assert git(checkout, "log", "-1", "--format=%s", f"{main}-experiment") == "Local fix"


def test_kill_forced_reapply_into_over_local_work(tmp_path, cli, project, upstreams, kill_apply_into):
    """--force over a checkout holding local work: killed anywhere, the old checkout is back with its
    work byte for byte, or the new one is in place holding that work on its saved branches."""
    into, pristine, reference = tmp_path / "build", tmp_path / "pristine", tmp_path / "reference"
    assert cli("apply", "--target", "t", "--into", str(pristine), *upstreams.sources).code == 0
    add_local_work(pristine / "minilib")
    before = snapshot(pristine)
    upstreams.write_series(project, 2)
    assert cli("apply", "--target", "t", "--into", str(reference), *upstreams.sources).code == 0
    after = snapshot(reference, git_internals=False)
    replace_tree(pristine, into)
    refused = cli("apply", "--target", "t", "--into", str(into), *upstreams.sources)
    assert refused.code == 1 and "lose local work" in " ".join(refused.err.split()), refused.out + refused.err
    assert snapshot(into) == before

    def observe():
        result = cli("verify", "--target", "t", "--into", str(into), "--json")
        outcome = said(result.json["notes"])
        state = snapshot(into, git_internals=outcome in UNTOUCHED)
        if state == after:
            assert result.code == 0, result.out
            assert_work_saved(into / "minilib")
        else:
            assert result.code == 1, result.out  # the old checkout: older series, local work
        return state, result.json["notes"]

    def next_apply():
        result = cli("apply", "--target", "t", "--into", str(into), "--force", *upstreams.sources)
        assert result.code == 0, result.out + result.err
        assert snapshot(into, git_internals=False) == after
        assert_work_saved(into / "minilib")

    label = "apply --into --force, over local work"
    kill_apply_into(label, pristine, before, after, observe, next_apply, every=3, options=["--force"])
