"""smoke reads the trees too: after a kill mid-swap of apply (--into or --python) it rolls the swap back
before it looks."""

from __future__ import annotations

import pytest
from support.kill_points import venv_args
from support.reliability import pristine_environment, replace_tree, run
from support.snapshot import snapshot

from patchmgr.model.project import Project
from patchmgr.targets.verified_trees import verified_trees

pytestmark = pytest.mark.slow


def test_smoke_recovers_first_and_says_so(tmp_path, tmp_path_factory, project, upstreams):
    """smoke reads the trees too: after a kill mid-swap it rolls the swap back before it looks."""
    opened = Project.at(project.root)
    target = opened.target("t")
    into = tmp_path / "build"
    args = ["apply", "--target", "t", "--into", str(into), *upstreams.sources, "--root", str(project.root)]
    # 7 build steps (2 checkouts, 5 patches), the saved ledger, the prepared mark, then the first folder move
    assert run(args, {"PATCHMGR_FAULT_KILL_AT": "10"})[0] == -9
    trees = verified_trees(opened, target, into)
    assert "rolled back" in " ".join(trees[0].notes) and snapshot(into) == {}
    assert all(tree.patched_root is None for tree in trees)

    venv = tmp_path / "venv"
    replace_tree(pristine_environment(tmp_path_factory), venv)
    before = snapshot(venv)
    args = ["apply", *venv_args(venv), *upstreams.sources, "--root", str(project.root)]
    assert run(args, {"PATCHMGR_FAULT_KILL_AT": "30"})[0] == -9
    trees = verified_trees(opened, target, str(venv / "bin" / "python"))
    assert "rolled back" in " ".join(trees[0].notes) and snapshot(venv) == before
    assert all(tree.patched_root is None for tree in trees)  # nothing applied: nothing to test with the patches
