"""SIGKILL at every step of export: the patch files, the manifest and the edit checkout's record are one
transaction. After each kill, a refresh --dry-run recovers first and says what it did; the project must then
be byte for byte the one before the run or exactly the one an uninterrupted run leaves."""

from __future__ import annotations

import shutil

import pytest
from support.commands import edit, move_args
from support.gitrepos import git
from support.kill_points import MINIMUM, kill_project_command
from support.reliability import KILL, kill_every_step, replace_tree, run
from support.scenes import series_project
from support.series_layout import sources, two_upstreams
from support.snapshot import snapshot

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


def test_kill_export_series_over_an_earlier_one(tmp_path, cli, project):
    """export --format series --force over an earlier export (a patch left lib's series since) and a file of the
    team's own: the folder is the earlier export or the new one after every kill, the team's file untouched.
    The next export there (without --force) recovers the folder first, says so, then refuses (not empty)."""
    lib, other = two_upstreams(tmp_path, project)
    into = tmp_path / "npu_patch"
    words = ["export", "--target", "t", "--format", "series", "--into", str(into), *sources(lib, other)]
    assert cli(*words).code == 0
    (into / "Dockerfile").write_text("FROM base\n")
    manifest = project.root / "manifests/t.toml"
    manifest.write_text(manifest.read_text().replace('"fix-a-again", "fix-b"]', '"fix-a-again"]'))
    saved = tmp_path / "npu_patch-before"
    replace_tree(into, saved)
    args = [*words, "--force", "--root", str(project.root)]

    def observe():
        result = cli(*words)
        assert result.code == 1 and "is not empty" in result.err and "Traceback" not in result.err, result.err
        return snapshot(into), [line.removeprefix("note: ") for line in result.err.splitlines() if "note: " in line]

    before = snapshot(into)
    code, output = run(args)
    assert code == 0, output
    after = snapshot(into)
    assert after != before and "patchmgr-series/lib/fix-b.patch" not in after
    counts = kill_every_step(
        "export --format series",
        args,
        lambda: replace_tree(saved, into),
        before,
        after,
        observe,
        minimum=MINIMUM["test_kill_export_series_over_an_earlier_one"],
    )
    assert (into / "Dockerfile").read_text() == "FROM base\n"
    assert (
        counts["kill_points"] == 9 + 1 + 8 * 2 + 1 + 1
    )  # 9 saved, prepared, 8 written (temp, rename), 1 removed, committed


def test_a_recovered_export_series_leaves_the_folder_as_a_clean_export_does(tmp_path, cli, project):
    """An export into a new folder killed at a step of its write, then the next export there: it recovers the
    folder, writes it, and leaves exactly what an uninterrupted export writes: no .patchmgr-state, no lock."""
    lib, other = two_upstreams(tmp_path, project)
    clean = tmp_path / "clean"
    words = ["export", "--target", "t", "--format", "series", *sources(lib, other), "--root", str(project.root)]
    code, output = run([*words, "--into", str(clean)])
    assert code == 0, output
    expected = snapshot(clean, exact=True)
    assert expected and not any(".patchmgr-state" in path for path in expected)
    into = tmp_path / "npu_patch"
    for kill_at in (2, 10, 19, 29):  # 9 files: saving one, prepared, writing one (temp, rename), committed
        shutil.rmtree(into, ignore_errors=True)
        code, output = run([*words, "--into", str(into)], {KILL.variable: str(kill_at)})
        assert code == KILL.code, (kill_at, output)
        assert (into / ".patchmgr-state").is_dir(), kill_at
        code, output = run([*words, "--into", str(into), "--force"])
        assert code == 0 and "recovered" in output and "Traceback" not in output, (kill_at, output)
        assert snapshot(into, exact=True) == expected, (kill_at, sorted(snapshot(into, exact=True)))
