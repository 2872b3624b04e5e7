"""SIGKILL at every step of export: the patch files, the manifest and the edit checkout's record are one
transaction. After each kill, a refresh --dry-run recovers first and says what it did; the project must then
be byte for byte the one before the run or exactly the one an uninterrupted run leaves."""

from __future__ import annotations

import pytest
from support.commands import edit, move_args
from support.gitrepos import git
from support.kill_points import kill_project_command
from support.scenes import series_project

pytestmark = pytest.mark.slow


def edited_series(tmp_path, cli, project, upstream, drop: bool):
    """An edit checkout whose last commit was amended and which gained two new commits (``drop``: and lost
    the second patch's commit); the export command, and a refresh --dry-run at the pin to observe."""
    pin = series_project(project, upstream)
    into = tmp_path / "work"
    assert edit(cli, upstream, into).code == 0
    if drop:
        git(into, "rebase", "-q", "--onto", "HEAD~2", "HEAD~1")  # drop the second patch's commit
    (into / "src/other.py").write_text("a = 3\n")
    git(into, "commit", "-q", "--amend", "--no-edit", "--all")
    for name in ("new", "newer"):
        (into / f"src/{name}.py").write_text(f"print('{name}')\n")
        git(into, "add", f"src/{name}.py")
        git(into, "commit", "-q", "-m", f"Add the {name} module\n\nUpstream-Status: Pending")
    args = ["export", "--target", "t", "--upstream", "lib", "--from", str(into), "--root", str(project.root)]
    observer = move_args("refresh", upstream, "--dry-run", to=pin)
    return into, args, observer


def test_kill_export(tmp_path, cli, project, upstream):
    """export writes 1 updated and 2 new patch files, the manifest and the edit checkout's record at once."""
    into, args, observer = edited_series(tmp_path, cli, project, upstream, drop=False)
    counts = kill_project_command(
        "export", "test_kill_export", cli, project, args, observer, into / ".git/patchmgr-edit.json"
    )
    assert (
        'patches = ["first", "second", "third", "add-the-new-module", "add-the-newer-module"]'
        in (project.root / "manifests/t.toml").read_text()
    )
    assert "a = 3" in (project.root / "patches/lib/third.patch").read_text()
    assert counts["kill_points"] == 5 * 3 + 2  # 5 files saved, prepared, 5 written (temp, rename), committed


def test_export_that_removes_a_patch_killed_at_every_step(tmp_path, cli, project, upstream):
    into, args, observer = edited_series(tmp_path, cli, project, upstream, drop=True)
    kill_project_command(
        "export, removing a patch",
        "test_export_that_removes_a_patch_killed_at_every_step",
        cli,
        project,
        args,
        observer,
        into / ".git/patchmgr-edit.json",
    )
    assert not (project.root / "patches/lib/second.patch").exists()
