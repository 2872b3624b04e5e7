"""Knock-on failures (issue 38, item 3): a patch that fails only because an earlier patch of the series did not
apply names that patch (``needs first, which conflicts``) instead of blaming upstream for a line it adds.

The oracle is git on a real series: ``git am`` stops at the earlier patch; ``git apply --3way`` of the earlier
patch at the ref leaves a conflict, resolved the earlier patch's way (``git merge-file --theirs`` of git's own
three stages: upstream's changes kept where they do not clash); on that tree ``git apply --check`` of the later
patch passes exactly when the later patch failed only for want of the earlier one.
"""

from __future__ import annotations

from pathlib import Path

from support.commands import bump, matrix, move_args
from support.gitrepos import git, make_series, plain_git
from support.scenes import lines_with

from patchmgr.engine.classify import check_series
from patchmgr.engine.results import State
from patchmgr.io.git import GitRepo
from patchmgr.model.patchfile import parse_patch
from patchmgr.sources.upstream import GitSource


def two_patch_series(project, upstream, first_files: dict, second_files: dict) -> tuple[str, list[bytes]]:
    """``first`` then ``second``, format-patch mails made one on top of the other at the pin (upstream's head)."""
    pin = upstream.head()
    mails = make_series(upstream, pin, [(first_files, "First fix"), (second_files, "Second fix")])
    for patch_id, data in zip(("first", "second"), mails, strict=True):
        project.add_patch("lib", patch_id, data)
    project.manifest(
        "t", {"lib": {"git": "https://example.invalid/lib.git", "commit": pin, "patches": ["first", "second"]}}
    )
    return pin, mails


def git_says_knock_on(upstream, tmp_path: Path, first: bytes, second: bytes) -> bool:
    """At upstream's head: ``git am`` stops at ``first``; with ``first`` resolved its own way, does ``second``
    apply (``git apply --check``)?"""
    work = tmp_path / f"oracle-{len(list(tmp_path.iterdir()))}"
    git(tmp_path, "clone", "-q", str(upstream.path), str(work))
    am = plain_git(work, "am", "-q", input=first + second)
    assert am.returncode != 0 and b"First fix" in am.stdout + am.stderr, am  # git am stops at the first patch
    plain_git(work, "am", "--abort")
    assert plain_git(work, "apply", "--check", "-", input=second).returncode != 0  # as the series runs: fails
    assert plain_git(work, "apply", "--3way", "-", input=first).returncode != 0  # a real conflict
    conflicted = git(work, "diff", "--name-only", "--diff-filter=U").split()
    assert conflicted
    for path in conflicted:
        stages = {}
        for stage in (1, 2, 3):
            stages[stage] = work / f".stage{stage}"
            stages[stage].write_bytes(plain_git(work, "show", f":{stage}:{path}").stdout)
        merged = plain_git(work, "merge-file", "-p", "--theirs", str(stages[2]), str(stages[1]), str(stages[3]))
        (work / path).write_bytes(merged.stdout)
        for stage in stages.values():
            stage.unlink()
    return plain_git(work, "apply", "--check", "-", input=second).returncode == 0


def status_json(cli, upstream):
    result = cli("status", "--target", "t", "--json", "--source", f"lib={upstream.path}", "--against", "lib=main")
    return result, {p["id"]: p for p in result.json["upstreams"][0]["patches"]}


def test_a_patch_standing_on_a_conflicting_one_names_it(cli, project, upstream, tmp_path):
    _, (first, second) = two_patch_series(
        project,
        upstream,
        {"src/mod.py": lines_with({10: "first 10"})},
        {"src/mod.py": lines_with({10: "first 10", 11: "second 11"})},  # line 10 is in its leading context
    )
    upstream.commit({"src/mod.py": lines_with({10: "upstream 10"})}, "upstream rewrites line 10")
    assert git_says_knock_on(upstream, tmp_path, first, second)
    result, patches = status_json(cli, upstream)
    assert result.code == 1
    assert patches["first"]["state"] == "conflict" and patches["first"]["needs"] == []
    assert patches["second"]["state"] == "conflict" and patches["second"]["ok"] is False
    # before: "src/mod.py hunk #1 ...: the hunk's lines are not in the upstream file", blaming upstream
    assert patches["second"]["needs"] == ["first"]
    assert patches["second"]["detail"] == "needs first, which conflicts"
    plain = cli("status", "--target", "t", "--source", f"lib={upstream.path}", "--against", "lib=main").out
    assert "lib       second  conflict  needs first, which conflicts\n  lib: " in plain, plain  # no upstream lines
    refused = bump(cli, upstream)
    assert "blocks the bump: second is conflict at main, needs first, which conflicts" in refused.out
    assert bump(cli, upstream, "--json").json["blockers"] == ["first", "second"]
    cells = matrix(cli, upstream, "--json").json["upstreams"][0]["patches"][1]["cells"]
    assert (cells[-1]["state"], cells[-1]["needs"], cells[-1]["detail"]) == (
        "conflict",
        ["first"],
        "needs first, which conflicts",
    )
    assert "conflict, needs first" in matrix(cli, upstream).out
    # no upstream commit is named as what broke second: the commit broke first
    broke = upstream.head()
    changed = matrix(cli, upstream, "--json").json["upstreams"][0]["patches"][1]["changed"]
    assert changed["commit"] is None, changed
    assert changed["note"] == (
        f"needs first, which conflicts from commit {broke[:12]} on: that commit broke the earlier patch, not this one"
    )
    found = {p["id"]: p for p in cli(*move_args("bisect", upstream, "--json")).json["patches"]}
    assert found["first"]["first_commit"] == broke
    assert found["second"]["first_commit"] is None and found["second"]["note"] == changed["note"]
    report = cli(
        "status", "--target", "t", "--source", f"lib={upstream.path}", "--against", "lib=main", "--format", "junit"
    )
    assert "conflict: needs first, which conflicts" in report.out


def test_a_patch_that_upstream_breaks_as_well_stays_upstreams_conflict(cli, project, upstream, tmp_path):
    _, (first, second) = two_patch_series(
        project,
        upstream,
        {"src/mod.py": lines_with({10: "first 10"})},
        {"src/mod.py": lines_with({10: "first 10", 11: "second 11"})},
    )
    # upstream also rewrites line 13, in second's own context and nowhere near first
    upstream.commit({"src/mod.py": lines_with({10: "upstream 10", 13: "upstream 13"})}, "upstream rewrites 10, 13")
    assert not git_says_knock_on(upstream, tmp_path, first, second)
    _, patches = status_json(cli, upstream)
    assert patches["second"]["state"] == "conflict"
    assert patches["second"]["needs"] == []
    assert "needs" not in patches["second"]["detail"]


def test_a_file_the_earlier_patch_creates_is_not_gone_from_upstream(cli, project, upstream, tmp_path):
    created = "def helper():\n    return 1\n"
    _, (first, second) = two_patch_series(
        project,
        upstream,
        {"src/mod.py": lines_with({10: "first 10"}), "src/helper.py": created},
        {"src/mod.py": lines_with({10: "first 10"}), "src/helper.py": created.replace("1", "2")},
    )
    upstream.commit({"src/mod.py": lines_with({10: "upstream 10"})}, "upstream rewrites line 10")
    assert git_says_knock_on(upstream, tmp_path, first, second)
    _, patches = status_json(cli, upstream)
    # before: "missing", "src/helper.py: the file is gone from the upstream", a file upstream never had
    assert (patches["second"]["state"], patches["second"]["needs"]) == ("conflict", ["first"])


def test_engine_names_the_nearest_of_a_chain(upstream, project, tmp_path):
    """b stands on a (line 10 in its context), c on b alone (line 20), d on a and b (lines 10 and 11): each
    names what it stands on."""
    pin = upstream.head()
    steps = [
        ({"src/mod.py": lines_with({10: "first 10"})}, "First"),
        ({"src/mod.py": lines_with({10: "first 10", 11: "second 11", 20: "second 20"})}, "Second"),
        ({"src/mod.py": lines_with({10: "first 10", 11: "second 11", 20: "second 20", 21: "c 21"})}, "Third"),
        ({"src/mod.py": lines_with({10: "first 10", 11: "second 11", 20: "second 20", 21: "c 21", 12: "d"})}, "D"),
    ]
    mails = make_series(upstream, pin, steps)
    upstream.commit({"src/mod.py": lines_with({10: "upstream 10"})}, "upstream rewrites line 10")
    patches = [parse_patch(m, tmp_path / f"{n}.patch", "lib", n) for m, n in zip(mails, "abcd", strict=True)]
    source = GitSource(GitRepo(upstream.path), upstream.head(), str(upstream.path))
    results = check_series(patches, source)
    assert [r.state for r in results] == [State.CONFLICT] * 4
    assert [[n.patch_id for n in r.needs] for r in results] == [[], ["a"], ["b"], ["a", "b"]]
