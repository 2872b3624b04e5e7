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
from support.gitrepos import BASE_TEXT, git, git_bytes, plain_git
from support.memory_tree import Files
from support.scenes import lines_with, setup

from patchmgr.engine.classify import check_series

DEBUG = "".join(f"debug {i}\n" for i in range(1, 4))
WITH_DEBUG = BASE_TEXT.replace("line 20\n", "line 20\n" + DEBUG)


def git_checks(repo: Path, ref: str, patch: bytes, tmp_path: Path) -> tuple[bool, bool]:
    """git's own word on ``patch`` at ``ref`` of ``repo``: (``git apply --check`` passes, ``git apply -R --check``
    passes)."""
    work = tmp_path / f"oracle-{ref[:12]}-{len(list(tmp_path.iterdir()))}"
    git(tmp_path, "clone", "-q", "--shared", str(repo), str(work))
    git(work, "checkout", "-q", "--detach", ref)
    forward = plain_git(work, "apply", "--check", "-", input=patch).returncode == 0
    backward = plain_git(work, "apply", "-R", "--check", "-", input=patch).returncode == 0
    return forward, backward


def is_ancestor(repo: Path, older: str, newer: str) -> bool:
    return plain_git(repo, "merge-base", "--is-ancestor", older, newer).returncode == 0


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
    assert git_checks(upstream.path, old, patch, tmp_path) == (False, True)
    assert is_ancestor(upstream.path, old, pin)
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
    assert git_checks(upstream.path, other, patch, tmp_path) == (False, True)
    assert git_checks(upstream.path, base, patch, tmp_path)[0] is False  # the merge base never had the lines
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


def test_upstream_only_where_a_commit_on_the_way_removed_the_lines(cli, project, upstream, tmp_path):
    """The same patches at two refs: at main, where upstream removed the lines, ``upstream``; at the older ref,
    where they never were, not. A patch that also adds a line is judged by that line, as before."""
    other = "".join(f"other {i}\n" for i in range(1, 21))
    old = upstream.commit({"src/other.py": other}, "add other")
    git(upstream.path, "tag", "old")
    other_debug = other.replace("other 10\n", "other 10\n" + DEBUG)
    pin = upstream.commit({"src/mod.py": WITH_DEBUG, "src/other.py": other_debug}, "add debug output")
    nodebug = upstream.make_patch(pin, {"src/mod.py": BASE_TEXT}, "Drop the debug output")
    mixed_text = other.replace("other 18\n", "fixed 18\n")
    mixed = upstream.make_patch(pin, {"src/other.py": mixed_text}, "Drop the other debug output, fix 18")
    setup(project, upstream, {"nodebug": nodebug, "mixed": mixed})
    # upstream removes the lines its own way (and changes lines far off): no commit has either patch-id
    removed = upstream.commit(
        {"src/mod.py": lines_with({2: "line two"}), "src/other.py": mixed_text.replace("other 2\n", "two\n")},
        "remove debug output",
    )
    assert git_checks(upstream.path, pin, nodebug, tmp_path) == (True, False)  # the pin, the merge base, has them
    assert git_checks(upstream.path, removed, nodebug, tmp_path) == (False, True)
    assert git_checks(upstream.path, removed, mixed, tmp_path) == (False, True)
    assert git_checks(upstream.path, old, nodebug, tmp_path) == (False, True)  # git alike at the older ref
    assert git_checks(upstream.path, old, mixed, tmp_path) == (False, False)
    # mixed: its reverse fails at the older ref (git alike), so it is no upstream there; its blob merges
    assert status_of(cli, upstream, "old") == [("nodebug", "nothing-to-delete"), ("mixed", "three-way")]
    at_main = cli("status", "--target", "t", "--json", "--source", f"lib={upstream.path}", "--against", "lib=main")
    entries = {p["id"]: p for p in at_main.json["upstreams"][0]["patches"]}
    assert (entries["nodebug"]["state"], entries["mixed"]["state"]) == ("upstream", "upstream")
    assert entries["nodebug"]["detail"].startswith(f"the reverse of the patch applies from upstream commit {removed}")
    from patchmgr.history.deletions import deletes_only  # here: the module is new, the other tests run without it

    assert [deletes_only(project_patch(project, n)) for n in ("nodebug", "mixed")] == [True, False]


def test_a_deleted_file_that_never_was_is_nothing_to_delete(cli, project, upstream, tmp_path):
    old = upstream.head()
    git(upstream.path, "tag", "old")
    pin = upstream.commit({"src/debug.py": "print('debug')\n"}, "add a debug module")
    patch = upstream.make_patch(pin, {"src/debug.py": None}, "Drop the debug module")
    setup(project, upstream, {"nodebug": patch})
    assert git_checks(upstream.path, old, patch, tmp_path) == (False, True)
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
    assert git_checks(upstream.path, tip, patch, tmp_path) == (False, True)
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
    from patchmgr.history.deletions import judge_deletions

    (judged,) = judge_deletions(None, None, tree, [engine])  # type: ignore[arg-type]  # no history is asked
    assert judged.state.value == "nothing-to-delete" and not judged.ok
    assert judged.detail == (
        "the lines it deletes are not there, and this tree has no history to tell whether upstream removed them "
        "or they never were: nothing to delete"
    )


# Real commits of openssh-portable that only delete lines, each made after V_9_2_P1 had the context but not the
# lines: found with `git log --numstat V_9_2_P1..V_10_5_P1` (no line added) and `git apply --check` at V_9_2_P1.
OPENSSH_DELETIONS = (
    "2f5269938a8e4769f484c9d45419a86529078ede",  # remove vestigial stub
    "baf854c8bb0a6d0af5c696c801e631a48dabbaba",  # Remove warning pragma since clang doesn't like it.
)


def test_real_deletions_read_upstream_only_where_their_commit_is(cli, project, tmp_path):
    """openssh-portable: a deletion pinned just before its own upstream commit is nothing-to-delete at the older
    release V_9_2_P1 (git: the lines are not there, its reverse applies, V_9_2_P1 is older than the pin), and
    upstream, carried by that very commit, at the commit."""
    from support.real_histories import clone_of

    clone = clone_of("openssh", tmp_path / "openssh")
    for commit in OPENSSH_DELETIONS:
        pin = git(clone, "rev-parse", f"{commit}^")
        patch = git_bytes(clone, "format-patch", "-1", "--stdout", "--zero-commit", "--full-index", commit)
        project.add_patch("lib", "deletion", patch)
        project.manifest(
            "t", {"lib": {"git": "https://example.invalid/openssh.git", "commit": pin, "patches": ["deletion"]}}
        )
        older = git(clone, "rev-parse", "V_9_2_P1^{commit}")
        assert is_ancestor(clone, older, pin)
        assert git_checks(clone, older, patch, tmp_path) == (False, True)
        source = f"lib={clone}"
        at_older = cli("status", "--target", "t", "--json", "--source", source, "--against", "lib=V_9_2_P1")
        (entry,) = at_older.json["upstreams"][0]["patches"]
        assert entry["state"] == "nothing-to-delete", (commit, entry)
        at_commit = cli("status", "--target", "t", "--json", "--source", source, "--against", f"lib={commit}")
        (entry,) = at_commit.json["upstreams"][0]["patches"]
        assert (entry["state"], entry["carrier"]) == ("upstream", commit)
