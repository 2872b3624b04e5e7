"""history.Walk classifies independent groups of a series once per set of file versions: the same states as
check_series at every commit, on a real history where patches depend on each other through files and folders."""

from __future__ import annotations

from pathlib import Path

from support.gitrepos import BASE_TEXT, make_series
from support.scenes import lines_with

from patchmgr.engine.classify import check_series
from patchmgr.history.walk import Walk, independent_groups
from patchmgr.io.git import GitRepo
from patchmgr.io.git_merge import merge_texts
from patchmgr.model.patchfile import parse_patch
from patchmgr.sources.upstream import GitSource


def test_walk_states_equal_check_series_at_every_commit(upstream):
    pin = upstream.commit({"src/other.py": BASE_TEXT, "docs/guide.txt": BASE_TEXT}, "more files")
    mails = make_series(
        upstream,
        pin,
        [
            ({"src/mod.py": lines_with({10: "first fix"})}, "Fix mod at 10"),
            ({"src/other.py": lines_with({30: "other fix"})}, "Fix other"),
            # depends on the first patch: same file, right after its line
            ({"src/mod.py": lines_with({10: "first fix", 12: "second fix"})}, "Fix mod at 12"),
            # creates a file in a new folder: upstream later puts a file where the folder would go
            ({"docs/new/page.txt": "page\n"}, "Add a page"),
            ({"docs/guide.txt": lines_with({5: "guide fix"})}, "Fix the guide"),
        ],
    )
    series = [parse_patch(mail, Path(f"p{i}.patch"), "lib", f"p{i}") for i, mail in enumerate(mails)]
    assert independent_groups(series) == [(0, 2), (1,), (3,), (4,)]
    commits = [pin]
    for step, files in enumerate(
        [
            {"README": "unrelated\n"},
            {"src/mod.py": lines_with({}, insert_top=2)},  # offsets the mod patches
            {"src/other.py": lines_with({30: "upstream took line 30"})},  # conflicts the other patch
            {"docs/new": "a file where the patch needs a folder\n"},
            {"docs/new": None},
            {"src/mod.py": lines_with({10: "first fix"}, insert_top=2)},  # upstream carries the first fix
            {"src/other.py": BASE_TEXT},  # and reverts the other change
        ]
    ):
        commits.append(upstream.commit(files, f"step {step}"))
    with GitRepo(upstream.path) as repo:
        walk = Walk(repo, pin, commits[-1], str(upstream.path), series)
        for commit in commits + commits[::-1]:
            expected = [r.state for r in check_series(series, GitSource(repo, commit, "x"), merge_texts)]
            assert walk.states_at(commit) == expected, commit
            assert [walk.state_at(i, commit) for i in range(len(series))] == expected
        # each group was classified once per distinct version of its files, not once per commit
        assert walk.checks < len(series) * len(commits)
        assert walk.related(2) == [0, 2] and walk.related(4) == [4]


def test_walks_from_one_base_toward_two_refs_classify_each_version_of_the_files_once(upstream):
    # a matrix walks from the merge base toward each column: the second walk meets the first one's commits and
    # files again, and takes their classification instead of checking them again (counted, not timed)
    pin = upstream.head()
    mails = make_series(upstream, pin, [({"src/mod.py": lines_with({10: "fix"})}, "Fix mod at 10")])
    series = [parse_patch(mails[0], Path("p0.patch"), "lib", "p0")]
    near = upstream.commit({"src/mod.py": lines_with({}, insert_top=2)}, "offsets the patch")
    upstream.commit({"src/mod.py": lines_with({10: "upstream took line 10"}, insert_top=2)}, "conflicts it")
    far = upstream.commit({"README": "unrelated\n"}, "leaves its file alone")
    with GitRepo(upstream.path) as repo:
        first = Walk(repo, pin, near, str(upstream.path), series)
        first.history(0, first.state_at(0, near), None)
        second = Walk(repo, pin, far, str(upstream.path), series)
        history = second.history(0, second.state_at(0, far), None)
        assert first.checks == 2  # the base and the offset
        assert second.checks == 1  # only the conflict is new to it
        expected = [r.state for r in check_series(series, GitSource(repo, far, "x"), merge_texts)]
        assert [step.state for step in history.transitions][-1] == expected[0]
