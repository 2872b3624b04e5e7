"""SIGKILL at every step of ``edit --onto``, into an empty folder and over an edit checkout at the pin; the
scene and what is compared are in tests/support/edit_kill.py."""

from __future__ import annotations

import pytest
from support.edit_kill import kill_edit

pytestmark = pytest.mark.slow


def kill_onto_the_conflict(name, scene, before, after):
    """edit --onto v2 killed at every step from ``before``; the run that gets through stops at the conflict
    (``after``). The observer, edit --continue, refuses either way (no checkout; conflicts remain)."""
    kill_edit(name, scene, scene.onto(), before, after, scene.resume("continue"), exit_code=1)


def test_kill_edit_onto_into_an_empty_folder(edit_scene):
    """edit --onto into an empty folder: the checkout at the pin is built, moved to v2, and stops at the
    conflict."""
    edit_scene.into.mkdir()
    before = edit_scene.keep()
    after = edit_scene.outcome_of(edit_scene.onto(), 1)
    assert after["(git) HEAD"] == f"refs/heads/patchmgr {edit_scene.new}"
    kill_onto_the_conflict("test_kill_edit_onto_into_an_empty_folder", edit_scene, before, after)


def test_kill_edit_onto_over_an_edit_checkout(edit_scene):
    """edit --onto over a clean edit checkout at the pin (nothing to save), stopping at the conflict."""
    edit_scene.must(edit_scene.edit())
    before = edit_scene.keep()
    after = edit_scene.outcome_of(edit_scene.onto(), 1)
    assert "(git) HEAD" in before and after["(git) HEAD"] != before["(git) HEAD"]
    kill_onto_the_conflict("test_kill_edit_onto_over_an_edit_checkout", edit_scene, before, after)
