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


def pinned_series(project, upstream, *steps: dict) -> list[bytes]:
    """format-patch mails of ``steps`` (``first``, ``second``, ...) made one on top of the other at the pin
    (upstream's head), pinned as target ``t``'s series."""
    pin = upstream.head()
    names = NAMES[: len(steps)]
    subjects = [f"{name.capitalize()} fix" for name in names]
    mails = make_series(upstream, pin, list(zip(steps, subjects, strict=True)))
    for patch_id, data in zip(names, mails, strict=True):
        project.add_patch("lib", patch_id, data)
    project.manifest("t", {"lib": {"git": "https://example.invalid/lib.git", "commit": pin, "patches": names}})
    return mails


NAMES = ["first", "second", "third"]


def git_after_first(upstream, tmp_path: Path, mails: list[bytes]) -> list[bool]:
    """git at upstream's head: ``git am`` stops at the first patch; with it resolved its own way, whether each
    later patch applies (``git apply --check``), each on the ones before it that do."""
    work = tmp_path / f"oracle-{len(list(tmp_path.iterdir()))}"
    git(tmp_path, "clone", "-q", str(upstream.path), str(work))
    am = plain_git(work, "am", "-q", input=b"".join(mails))
    assert am.returncode != 0 and b"First fix" in am.stdout + am.stderr, am  # git am stops at the first patch
    plain_git(work, "am", "--abort")
    assert plain_git(work, "apply", "--3way", "-", input=mails[0]).returncode != 0  # a real conflict
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
    applies = []
    for mail in mails[1:]:
        applies.append(plain_git(work, "apply", "--check", "-", input=mail).returncode == 0)
        if applies[-1]:
            git(work, "apply", "-", input=mail)
    return applies


def git_says_knock_on(upstream, tmp_path: Path, first: bytes, second: bytes) -> bool:
    """``second`` does not apply at upstream's head after ``first`` (git am), but does once ``first`` is resolved
    its own way."""
    work = tmp_path / f"plain-{len(list(tmp_path.iterdir()))}"
    git(tmp_path, "clone", "-q", str(upstream.path), str(work))
    assert plain_git(work, "apply", "--check", "-", input=second).returncode != 0  # as the series runs: fails
    return git_after_first(upstream, tmp_path, [first, second]) == [True]


def two_patch_series(project, upstream, first_files: dict, second_files: dict) -> tuple[str, list[bytes]]:
    pin = upstream.head()
    return pin, pinned_series(project, upstream, first_files, second_files)


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
    assert patches["first"]["state"] == "conflict"
    assert patches["second"]["state"] == "conflict" and patches["second"]["ok"] is False
    # before: "src/mod.py hunk #1 ...: the hunk's lines are not in the upstream file", blaming upstream
    assert patches["second"]["detail"] == "needs first, which conflicts"
    assert patches["first"]["needs"] == [] and patches["second"]["needs"] == ["first"]
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
    """second stands on first alone; third stands on first too, but upstream also rewrote a line of its own
    context: only second's blame moves to first."""
    mails = pinned_series(
        project,
        upstream,
        {"src/mod.py": lines_with({10: "first 10", 30: "first 30"})},
        {"src/mod.py": lines_with({10: "first 10", 30: "first 30", 11: "second 11"})},
        {"src/mod.py": lines_with({10: "first 10", 30: "first 30", 11: "second 11", 31: "third 31"})},
    )
    # upstream rewrites first's lines, and line 33, in third's context and nowhere near first's lines
    upstream.commit({"src/mod.py": lines_with({10: "up 10", 30: "up 30", 33: "up 33"})}, "upstream rewrites")
    assert git_after_first(upstream, tmp_path, mails) == [True, False]
    _, patches = status_json(cli, upstream)
    assert [patches[n]["state"] for n in NAMES] == ["conflict"] * 3
    assert patches["second"]["detail"] == "needs first, which conflicts"  # before: blamed on upstream
    assert patches["third"]["detail"].startswith("src/mod.py hunk #1")  # upstream's conflict: as before
    assert [patches[n]["needs"] for n in NAMES] == [[], ["first"], []]


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
    assert (patches["second"]["state"], patches["second"]["detail"]) == ("conflict", "needs first, which conflicts")
    assert patches["second"]["needs"] == ["first"]


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
    assert [r.detail for r in results[1:]] == [
        "needs a, which conflicts",
        "needs b, which conflicts",
        "needs a, which conflicts; needs b, which conflicts",
    ]
    assert [[n.patch_id for n in r.needs] for r in results] == [[], ["a"], ["b"], ["a", "b"]]


def test_a_context_line_upstream_moved_away_keeps_the_blame_on_upstream(upstream, tmp_path):
    """A control for the rule's order check: upstream moves a line of second's context to the file's end, so
    the line is still in the file but not where second needs it. git: second fails with first resolved too;
    patchmgr must not blame first for it (a membership test alone would)."""
    pin = upstream.head()
    mails = make_series(
        upstream,
        pin,
        [
            ({"src/mod.py": lines_with({10: "first 10"})}, "First fix"),
            ({"src/mod.py": lines_with({10: "first 10", 11: "second 11"})}, "Second fix"),
        ],
    )
    moved = lines_with({10: "upstream 10"}).replace("line 13\n", "") + "line 13\n"
    upstream.commit({"src/mod.py": moved}, "upstream rewrites line 10, moves line 13 to the end")
    assert git_after_first(upstream, tmp_path, mails) == [False]
    patches = [parse_patch(m, tmp_path / f"{n}.patch", "lib", n) for m, n in zip(mails, ("a", "b"), strict=True)]
    results = check_series(patches, GitSource(GitRepo(upstream.path), upstream.head(), str(upstream.path)))
    assert [r.state for r in results] == [State.CONFLICT, State.CONFLICT]
    assert results[1].needs == () and "needs" not in results[1].detail
