"""Deletion-only patches (issue 38, item 2): ``upstream`` only where history shows their lines there, then removed.

A patch that only removes lines reverse-applies wherever its context is, also where its lines never were. git
agrees that it cannot tell (``git apply --check`` fails and ``git apply -R --check`` passes at both kinds of
ref), so the oracle is git's history: whether the merge base of the pin and the ref has the lines
(``git apply --check`` there), and whether the ref is an ancestor of the pin (``git merge-base --is-ancestor``).
Each test builds a real upstream and real format-patch files.
"""

from __future__ import annotations

from pathlib import Path

from support.commands import bump, matrix, status_of
from support.gitrepos import BASE_TEXT, git, plain_git
from support.memory_tree import Files
from support.scenes import lines_with, setup

from patchmgr.engine.classify import check_series
from patchmgr.history.deletions import deletes_only, judge_deletions

DEBUG = "".join(f"debug {i}\n" for i in range(1, 4))
WITH_DEBUG = BASE_TEXT.replace("line 20\n", "line 20\n" + DEBUG)


def git_checks(upstream, ref: str, patch: bytes, tmp_path: Path) -> tuple[bool, bool]:
    """git's own word on ``patch`` at ``ref``: (``git apply --check`` passes, ``git apply -R --check`` passes)."""
    work = tmp_path / f"oracle-{ref[:12]}-{len(list(tmp_path.iterdir()))}"
    git(tmp_path, "clone", "-q", str(upstream.path), str(work))
    git(work, "checkout", "-q", "--detach", ref)
    forward = plain_git(work, "apply", "--check", "-", input=patch).returncode == 0
    backward = plain_git(work, "apply", "-R", "--check", "-", input=patch).returncode == 0
    return forward, backward


def is_ancestor(upstream, older: str, newer: str) -> bool:
    return plain_git(upstream.path, "merge-base", "--is-ancestor", older, newer).returncode == 0


def debug_upstream(project, upstream):
    """Upstream ``old`` (tagged) without the debug lines, then the pin that adds them; ``nodebug`` deletes them,
    made at the pin. Returns (old, pin, the patch)."""
    old = upstream.head()
    git(upstream.path, "tag", "old")
    pin = upstream.commit({"src/mod.py": WITH_DEBUG}, "add debug output")
    patch = upstream.make_patch(pin, {"src/mod.py": BASE_TEXT}, "Drop the debug output")
    setup(project, upstream, {"nodebug": patch})
    return old, pin, patch


def patch_of(cli, upstream, ref: str) -> dict:
    result = cli("status", "--target", "t", "--json", "--source", f"lib={upstream.path}", "--against", f"lib={ref}")
    (entry,) = result.json["upstreams"][0]["patches"]
    return {**entry, "code": result.code}


def test_at_a_ref_older_than_the_pin_there_is_nothing_to_delete(cli, project, upstream, tmp_path):
    old, pin, patch = debug_upstream(project, upstream)
    # git: the deletion does not apply at the older ref, its reverse does (it cannot tell), and the ref is older
    assert git_checks(upstream, old, patch, tmp_path) == (False, True)
    assert is_ancestor(upstream, old, pin)
    entry = patch_of(cli, upstream, "old")
    assert entry["state"] == "nothing-to-delete", entry  # was "upstream": bump's review would take it as landed
    assert entry["ok"] is False and entry["code"] == 1
    assert entry["detail"] == (
        f"the lines it deletes are not there, and never were in this history: {old[:12]} is older than the pin "
        f"{pin[:12]}, so no upstream commit on the way to it removed them: nothing to delete"
    )
    assert "carrier" not in entry


def test_on_a_branch_that_parted_before_the_lines_came_there_is_nothing_to_delete(cli, project, upstream, tmp_path):
    old, pin, patch = debug_upstream(project, upstream)
    git(upstream.path, "checkout", "-q", "-b", "other", old)
    other = upstream.commit({"README": "another line of history\n"}, "docs on another branch")
    base = git(upstream.path, "merge-base", pin, other)
    assert base == old
    assert git_checks(upstream, other, patch, tmp_path) == (False, True)
    assert git_checks(upstream, base, patch, tmp_path)[0] is False  # the merge base never had the lines
    entry = patch_of(cli, upstream, "other")
    assert entry["state"] == "nothing-to-delete", entry
    assert "never were on this line of history: the merge base" in entry["detail"]
    assert entry["ok"] is False
    # bump refuses it as a blocker; before, it was "upstream by its reverse", for review as landed
    moved = bump(cli, upstream, "--json", to="other")
    assert moved.code == 1, moved.out + moved.err
    doc = moved.json
    assert doc["action"] == "refused" and doc["blockers"] == ["nodebug"] and doc["review"] == []
    assert doc["dropped"] == []
    text = bump(cli, upstream, to="other").out
    assert "blocks the bump: nodebug is nothing-to-delete at other" in text


def test_where_a_commit_on_the_way_removed_the_lines_it_stays_upstream(cli, project, upstream, tmp_path):
    _, pin, patch = debug_upstream(project, upstream)
    # upstream removes the lines its own way (and changes a line far off): no commit has the patch's patch-id
    removed = upstream.commit({"src/mod.py": lines_with({2: "line two"})}, "remove debug output")
    assert git_checks(upstream, pin, patch, tmp_path) == (True, False)  # the pin, the merge base, has the lines
    assert git_checks(upstream, removed, patch, tmp_path) == (False, True)
    entry = patch_of(cli, upstream, "main")
    assert entry["state"] == "upstream", entry
    assert entry["detail"].startswith(f"the reverse of the patch applies from upstream commit {removed} on")


def test_a_patch_that_also_adds_lines_is_judged_by_them(cli, project, upstream, tmp_path):
    """The added line found at the patch's own place is the evidence; its deletion is a part of that change."""
    upstream.commit({"src/mod.py": WITH_DEBUG}, "add debug output")
    pin = upstream.head()
    mixed = WITH_DEBUG.replace(DEBUG, "").replace("line 35\n", "fixed 35\n")
    patch = upstream.make_patch(pin, {"src/mod.py": mixed}, "Drop the debug output, fix 35")
    setup(project, upstream, {"mixed": patch})
    landed = upstream.commit({"src/mod.py": mixed.replace("line 2\n", "line two\n")}, "take the fix")
    assert git_checks(upstream, landed, patch, tmp_path) == (False, True)
    assert deletes_only(project_patch(project, "mixed")) is False
    assert status_of(cli, upstream) == [("mixed", "upstream")]


def test_a_deleted_file_that_never_was_is_nothing_to_delete(cli, project, upstream, tmp_path):
    old = upstream.head()
    git(upstream.path, "tag", "old")
    pin = upstream.commit({"src/debug.py": "print('debug')\n"}, "add a debug module")
    patch = upstream.make_patch(pin, {"src/debug.py": None}, "Drop the debug module")
    setup(project, upstream, {"nodebug": patch})
    assert git_checks(upstream, old, patch, tmp_path) == (False, True)
    entry = patch_of(cli, upstream, "old")
    assert entry["state"] == "nothing-to-delete", entry
    assert entry["code"] == 1


def test_matrix_tip_on_another_line_says_nothing_to_delete(cli, project, upstream, tmp_path):
    old = upstream.head()
    git(upstream.path, "checkout", "-q", "-b", "feature")
    pin = upstream.commit({"src/mod.py": WITH_DEBUG}, "add debug output")
    patch = upstream.make_patch(pin, {"src/mod.py": BASE_TEXT}, "Drop the debug output")
    git(upstream.path, "checkout", "-q", "main")
    tip = upstream.commit({"README": "more\n"}, "docs")
    assert git(upstream.path, "merge-base", pin, tip) == old
    assert git_checks(upstream, tip, patch, tmp_path) == (False, True)
    project.add_patch("lib", "nodebug", patch)
    project.manifest("t", {"lib": {"git": "https://example.invalid/lib.git", "commit": pin, "patches": ["nodebug"]}})
    doc = matrix(cli, upstream, "--json").json
    (lib,) = doc["upstreams"]
    (row,) = lib["patches"]
    assert [c["state"] for c in row["cells"]] == ["clean", "nothing-to-delete"]
    shown = matrix(cli, upstream).out
    print(shown)
    assert "nothing-to-delete" in shown.split("legend:")[0]


def project_patch(project, patch_id: str):
    from patchmgr.model.patchfile import parse_patch

    path = project.root / "patches" / "lib" / f"{patch_id}.patch"
    return parse_patch(path.read_bytes(), path, "lib", patch_id)


def test_a_tree_without_history_cannot_call_it_upstream(upstream, project):
    """A release tree (no git history): the lines are not there, and nothing can say they were removed."""
    pin = upstream.commit({"src/mod.py": WITH_DEBUG}, "add debug output")
    patch = upstream.make_patch(pin, {"src/mod.py": BASE_TEXT}, "Drop the debug output")
    project.add_patch("lib", "nodebug", patch)
    parsed = project_patch(project, "nodebug")
    tree = Files({"src/mod.py": BASE_TEXT.encode()})
    (engine,) = check_series([parsed], tree)
    assert engine.state.value == "upstream"  # the engine alone: its reverse applies
    (judged,) = judge_deletions(None, None, tree, [engine])  # type: ignore[arg-type]  # no history is asked
    assert judged.state.value == "nothing-to-delete" and not judged.ok
    assert judged.detail == (
        "the lines it deletes are not there, and this tree has no history to tell whether upstream removed them "
        "or they never were: nothing to delete"
    )
