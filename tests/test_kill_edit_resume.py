"""SIGKILL at every step of ``edit --continue``, ``edit --skip`` and ``edit --abort`` (with hand-made work that
must be saved) at the stop of an ``edit --onto``; the scene and what is compared are in
tests/support/edit_kill.py."""

from __future__ import annotations

import pytest
from support.edit_kill import RESOLVED, kill_edit, saved_branch
from support.gitrepos import git

pytestmark = pytest.mark.slow


def test_kill_edit_continue(edit_scene):
    """--continue after the conflict is resolved and git add-ed: vendor-ten is committed, vendor-thirty
    applied on top, the move finished. The observer, edit --onto v2 without --force, refuses either way."""
    edit_scene.stopped()
    edit_scene.resolved()
    before = edit_scene.keep()

    def check(_said):
        log = git(edit_scene.into, "log", "--format=%s", f"{edit_scene.new}..HEAD").splitlines()
        assert log == ["Vendor line thirty", "Vendor line ten"], log
        assert (edit_scene.into / "src/mod.py").read_text() == RESOLVED.replace("line 30\n", "vendor 30\n")

    after = edit_scene.outcome_of(edit_scene.resume("continue"), 0, check)
    kill_edit("test_kill_edit_continue", edit_scene, edit_scene.resume("continue"), before, after, edit_scene.onto())


def test_kill_edit_skip(edit_scene):
    """--skip at the conflict: vendor-ten leaves the series, vendor-thirty is applied, the move finished."""
    edit_scene.stopped()
    before = edit_scene.keep()
    after = edit_scene.outcome_of(edit_scene.resume("skip"), 0)
    assert after["(git) HEAD"] != before["(git) HEAD"] and "(git) rebase-apply/next" not in after
    kill_edit("test_kill_edit_skip", edit_scene, edit_scene.resume("skip"), before, after, edit_scene.onto())


def test_kill_edit_abort_keeps_hand_made_work(edit_scene):
    """--abort while the move is stopped, holding a resolution git add-ed but not continued and a new file:
    the checkout goes back to the series at the pin and that work is kept on a patchmgr-saved branch."""
    edit_scene.stopped()
    edit_scene.resolved()
    (edit_scene.into / "notes.txt").write_text("my notes\n")
    before = edit_scene.keep()

    def check(said):
        branch = saved_branch(edit_scene.into)
        assert branch in said, said
        assert git(edit_scene.into, "show", f"{branch}:src/mod.py") + "\n" == RESOLVED
        assert git(edit_scene.into, "show", f"{branch}:notes.txt") == "my notes"
        assert git(edit_scene.into, "log", "--format=%s", f"{edit_scene.pin}..HEAD").splitlines() == [
            "Fix the readme",
            "Vendor line thirty",
            "Vendor line ten",
        ]

    after = edit_scene.outcome_of(edit_scene.resume("abort"), 0, check)
    kill_edit(
        "test_kill_edit_abort_keeps_hand_made_work",
        edit_scene,
        edit_scene.resume("abort"),
        before,
        after,
        edit_scene.onto(),
    )
