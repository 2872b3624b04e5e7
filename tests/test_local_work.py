"""apply --into and edit never lose a person's work in a checkout they rebuild (issue 11, item 1).

A rebuild replaces DIR/<upstream> with a fresh checkout. Local commits, changed
and untracked files, other branches and stashes there are refused (exit 1, DIR
byte for byte as it was), or with --force carried into the new checkout as
branches patchmgr-saved/<UTC time>... that the output names.
"""

from __future__ import annotations

import re

import pytest
from support.gitrepos import git
from support.scenes import series_project, two_upstreams
from support.snapshot import snapshot


def apply(cli, into, sources, *extra):
    return cli("apply", "--target", "t", "--into", str(into), *sources, *extra)


def change_series(project):
    patch = project.root / "patches/lib/two.patch"
    patch.write_bytes(patch.read_bytes().replace(b"Lib two", b"Lib two, edited"))


def add_local_work(checkout):
    """A local commit, an uncommitted edit of a tracked file, an untracked file, and bytecode (not work)."""
    (checkout / "src/local.py").write_text("local = 1\n")
    git(checkout, "add", "src/local.py")
    git(checkout, "commit", "-q", "-m", "Local fix")
    with open(checkout / "src/mod.py", "a") as handle:
        handle.write("hand edit\n")
    (checkout / "notes.txt").write_text("my notes\n")
    (checkout / "src/__pycache__").mkdir()
    (checkout / "src/__pycache__/mod.cpython-311.pyc").write_bytes(b"\x00bytecode")


def saved_branch(text):
    found = re.findall(r"patchmgr-saved/\d{8}T\d{6}Z", text)
    assert found, text
    return found[0]


@pytest.mark.parametrize("series", ["changed", "unchanged"])
def test_reapply_over_local_work_refuses_and_changes_no_byte(tmp_path, cli, project, series):
    _lib, _tool, sources = two_upstreams(tmp_path, project)
    into = tmp_path / "build"
    assert apply(cli, into, sources).code == 0
    add_local_work(into / "lib")
    if series == "changed":
        change_series(project)
    before = snapshot(into)
    raw_index = (into / "lib/.git/index").read_bytes()
    for extra in ((), ("--dry-run",), ("--json",)):
        result = apply(cli, into, sources, *extra)
        assert result.code == 1, result.out + result.err
        message = " ".join(result.err.split())  # rich may wrap the line
        assert "error: apply would rebuild" in message and "lose local work" in message
        for named in (
            "1 local commit",
            "Local fix",
            "1 modified file",
            "src/mod.py",
            "1 untracked file",
            "notes.txt",
            "--force",
            "patchmgr-saved/",
        ):
            assert named in message, (named, message)
        assert "__pycache__" not in message and "tool" not in message.split("hint:")[0].split("lose local work")[1]
        assert "Traceback" not in result.err
        assert snapshot(into) == before
        if series == "changed":  # unchanged, apply's verify runs `git status`, which may refresh the stat cache
            assert (into / "lib/.git/index").read_bytes() == raw_index
        assert not (into / ".patchmgr-state/staging").exists()


@pytest.mark.parametrize("series", ["changed", "unchanged"])
def test_force_saves_local_work_on_a_branch_in_the_new_checkout(tmp_path, cli, project, series):
    _lib, _tool, sources = two_upstreams(tmp_path, project)
    into = tmp_path / "build"
    assert apply(cli, into, sources).code == 0
    checkout = into / "lib"
    add_local_work(checkout)
    if series == "changed":
        change_series(project)
    planned = apply(cli, into, sources, "--dry-run", "--force")
    assert planned.code == 0 and "would save local work of lib" in planned.out
    result = apply(cli, into, sources, "--force")
    assert result.code == 0, result.out + result.err
    text = " ".join(result.out.split())
    assert "saved local work of lib on branch patchmgr-saved/" in text
    assert "(1 local commit, 1 modified file, 1 untracked file)" in text
    assert f"in {checkout}" in text and "applied target t" in text
    branch = saved_branch(text)
    # the new checkout is the applied series, clean, and verifies
    wanted = "Lib two, edited" if series == "changed" else "Lib two"
    assert git(checkout, "log", "-1", "--format=%s") == wanted
    assert git(checkout, "status", "--porcelain") == ""
    assert cli("verify", "--target", "t", "--into", str(into)).code == 0
    # ... and carries the saved work: the local commit, the edit and the untracked file
    assert git(checkout, "log", "--format=%s", branch).splitlines()[:4] == [
        "patchmgr: uncommitted work saved from " + str(checkout),
        "Local fix",
        "Lib two",
        "Lib one",
    ]
    assert git(checkout, "show", f"{branch}:src/local.py") == "local = 1"
    assert git(checkout, "show", f"{branch}:notes.txt") == "my notes"
    assert git(checkout, "show", f"{branch}:src/mod.py").endswith(
        "two\n" + "\n".join(f"line {i}" for i in range(31, 41)) + "\nhand edit"
    )
    assert "__pycache__" not in git(checkout, "ls-tree", "-r", "--name-only", branch)
    # the objects are in the new checkout itself, not fetched on demand from the source
    assert git(checkout, "cat-file", "-t", git(checkout, "rev-parse", f"{branch}~1")) == "commit"
    # a saved branch is work too: the next rebuild refuses to drop it, and --force keeps it under its name
    change_series(project)
    patch = project.root / "patches/lib/two.patch"
    patch.write_bytes(patch.read_bytes().replace(b"Lib two, edited", b"Lib two, again"))
    again = apply(cli, into, sources)
    assert again.code == 1 and branch in " ".join(again.err.split())
    assert apply(cli, into, sources, "--force").code == 0
    assert git(checkout, "show", f"{branch}:notes.txt") == "my notes"


def test_other_branches_and_stashes_are_work_too(tmp_path, cli, project):
    _lib, _tool, sources = two_upstreams(tmp_path, project)
    into = tmp_path / "build"
    assert apply(cli, into, sources).code == 0
    checkout = into / "lib"
    git(checkout, "checkout", "-q", "-b", "feature")
    (checkout / "feature.txt").write_text("feature\n")
    git(checkout, "add", "feature.txt")
    git(checkout, "commit", "-q", "-m", "Feature work")
    git(checkout, "checkout", "-q", "patchmgr")
    with open(checkout / "src/mod.py", "a") as handle:
        handle.write("stashed edit\n")
    git(checkout, "stash", "-q")
    git(checkout, "branch", "harmless", "HEAD~1")  # inside what apply made: nothing of its own
    change_series(project)
    before = snapshot(into)
    refused = apply(cli, into, sources)
    message = " ".join(refused.err.split())
    assert refused.code == 1 and "1 other branch or tag (feature)" in message and "1 stash" in message
    assert "harmless" not in message
    assert snapshot(into) == before
    forced = apply(cli, into, sources, "--force")
    assert forced.code == 0, forced.out + forced.err
    text = " ".join(forced.out.split())
    branch = saved_branch(text)
    assert f"{branch}-feature" in text and f"{branch}-stash-0" in text
    assert git(checkout, "show", f"{branch}-feature:feature.txt") == "feature"
    assert git(checkout, "show", f"{branch}-stash-0:src/mod.py").endswith("stashed edit")
    assert git(checkout, "branch", "--list", branch) == ""  # HEAD itself held nothing to save


def test_a_clean_checkout_is_rebuilt_without_force(tmp_path, cli, project):
    _lib, _tool, sources = two_upstreams(tmp_path, project)
    into = tmp_path / "build"
    assert apply(cli, into, sources).code == 0
    checkout = into / "lib"
    # bytecode that running the code leaves, and a reset back into the applied commits, lose nothing
    (checkout / "src/__pycache__").mkdir()
    (checkout / "src/__pycache__/mod.cpython-311.pyc").write_bytes(b"\x00bytecode")
    git(checkout, "reset", "-q", "--hard", "HEAD~1")
    change_series(project)
    result = apply(cli, into, sources)
    assert result.code == 0, result.out + result.err
    assert "applied target t" in result.out and "saved" not in result.out
    assert git(checkout, "log", "-1", "--format=%s") == "Lib two, edited"
    assert git(checkout, "for-each-ref", "--format=%(refname)", "refs/heads") == "refs/heads/patchmgr"
    # an untracked file alone, with an unchanged series, needs no rebuild: nothing to do, the file stays
    (checkout / "notes.txt").write_text("my notes\n")
    again = apply(cli, into, sources)
    assert again.code == 0 and "nothing to do" in again.out
    assert (checkout / "notes.txt").read_text() == "my notes\n"


def edit(cli, upstream, into, *extra):
    return cli(
        "edit", "--target", "t", "--upstream", "lib", "--into", str(into), "--source", f"lib={upstream.path}", *extra
    )


def test_edit_over_an_edit_checkout_with_unexported_work(tmp_path, cli, project, upstream):
    series_project(project, upstream)
    into = tmp_path / "work"
    assert edit(cli, upstream, into).code == 0
    # an edit checkout holding nothing unexported is simply made again
    again = edit(cli, upstream, into)
    assert again.code == 0, again.out + again.err
    (into / "src/new.py").write_text("new = 1\n")
    git(into, "add", "src/new.py")
    git(into, "commit", "-q", "-m", "Fourth fix")
    (into / "scratch.txt").write_text("scratch\n")
    before = snapshot(into)
    refused = edit(cli, upstream, into)
    message = " ".join(refused.err.split())
    assert refused.code == 1, refused.out + refused.err
    assert "not yet exported" in message and "Fourth fix" in message and "scratch.txt" in message
    assert "patchmgr export" in message and "--force" in message
    assert snapshot(into) == before
    assert not (tmp_path / ".work.patchmgr-edit").exists()
    forced = edit(cli, upstream, into, "--force")
    assert forced.code == 0, forced.out + forced.err
    text = " ".join(forced.out.split())
    assert "saved local work of lib on branch patchmgr-saved/" in text
    branch = saved_branch(text)
    assert git(into, "log", "-1", "--format=%s") == "Third fix"
    assert git(into, "status", "--porcelain") == ""
    assert git(into, "show", f"{branch}:src/new.py") == "new = 1"
    assert git(into, "show", f"{branch}:scratch.txt") == "scratch"
    assert "Fourth fix" in git(into, "log", "--format=%s", branch)
    assert not (tmp_path / ".work.patchmgr-edit").exists()
