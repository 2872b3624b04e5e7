"""bisect and `upstream` evidence: which upstream commit broke a patch, or carries it, on real git histories."""

from __future__ import annotations

from support.commands import move_args
from support.gitrepos import git, merge_no_ff
from support.scenes import lines_with, setup


def bisect(cli, upstream, *extra):
    return cli(*move_args("bisect", upstream, "--json", *extra))


def fix_patch(upstream, pin, line=20):
    return upstream.make_patch(pin, {"src/mod.py": lines_with({line: f"fixed {line}"})}, "Fix")


def test_names_the_commit_that_introduced_the_conflict(cli, project, upstream):
    pin = upstream.head()
    setup(project, upstream, {"fix": fix_patch(upstream, pin)})
    upstream.commit({"README": "one\n"}, "docs: unrelated")
    upstream.commit({"src/mod.py": lines_with({5: "early change"})}, "touch the file elsewhere (#10)")
    culprit = upstream.commit(
        {"src/mod.py": lines_with({5: "early change", 20: "rewritten 20"})}, "refactor: rewrite line 20 (#1234)"
    )
    upstream.commit({"README": "two\n"}, "docs: more")
    result = bisect(cli, upstream)
    assert result.code == 1, result.err
    doc = result.json
    assert doc["upstream"] == "lib" and doc["to"] == upstream.head()
    (patch,) = doc["patches"]
    assert (patch["id"], patch["state"], patch["first_commit"]) == ("fix", "conflict", culprit)
    assert patch["subject"] == "refactor: rewrite line 20 (#1234)" and patch["pr"] == 1234
    assert patch["monotonic"] is True
    # only the base and the two commits that touch src/mod.py were classified
    assert patch["commits_checked"] == 3


def test_change_merged_upstream_is_named_and_upstream(cli, project, upstream):
    pin = upstream.head()
    setup(project, upstream, {"fix": fix_patch(upstream, pin)})
    upstream.commit({"README": "x\n"}, "docs")
    carrier = upstream.commit({"src/mod.py": lines_with({20: "fixed 20"})}, "Take the vendor fix (#77)")
    # later upstream work edits the same lines again: the patch's reverse no longer applies
    upstream.commit(
        {"src/mod.py": lines_with({19: "reworked 19", 20: "fixed 20 better", 21: "reworked 21"})}, "rework the fix"
    )
    (patch,) = bisect(cli, upstream).json["patches"]
    assert (patch["state"], patch["first_commit"], patch["pr"]) == ("upstream", carrier, 77)
    assert patch["state_at_to"] == "upstream"
    assert patch["carried_by"]["commit"] == carrier
    # status names the carrying commit too, though the reverse does not apply at main
    status = cli("status", "--target", "t", "--json", "--source", f"lib={upstream.path}", "--against", "lib=main")
    (doc,) = status.json["upstreams"][0]["patches"]
    assert doc["state"] == "upstream"
    assert carrier in doc["evidence"] and "same patch-id" in doc["evidence"]


def test_reverse_applying_patch_names_the_first_upstream_commit(cli, project, upstream):
    pin = upstream.head()
    setup(project, upstream, {"fix": fix_patch(upstream, pin)})
    # upstream takes the change together with another one: a different patch-id
    carrier = upstream.commit({"src/mod.py": lines_with({3: "other", 20: "fixed 20"})}, "big change (#5)")
    status = cli("status", "--target", "t", "--json", "--source", f"lib={upstream.path}", "--against", "lib=main")
    (doc,) = status.json["upstreams"][0]["patches"]
    assert doc["state"] == "upstream" and carrier in doc["evidence"]
    (patch,) = bisect(cli, upstream).json["patches"]
    assert (patch["state"], patch["first_commit"]) == ("upstream", carrier)


def test_non_monotonic_history_is_reported_not_guessed(cli, project, upstream):
    pin = upstream.head()
    setup(project, upstream, {"fix": fix_patch(upstream, pin)})
    broke = upstream.commit({"src/mod.py": lines_with({20: "broken 20"})}, "break it")
    fixed = upstream.commit({"src/mod.py": lines_with({})}, "revert: break it")
    again = upstream.commit({"src/mod.py": lines_with({20: "broken again"})}, "break it again")
    result = bisect(cli, upstream)
    (patch,) = result.json["patches"]
    assert patch["monotonic"] is False
    assert patch["first_commit"] is None and patch["state"] == "conflict"
    assert [(s["commit"], s["state"]) for s in patch["transitions"]] == [
        (broke, "conflict"),
        (fixed, "clean"),
        (again, "conflict"),
    ]
    assert "not monotonic" in patch["note"]
    human = cli("bisect", "--target", "t", "--upstream", "lib", "--to", "main", "--source", f"lib={upstream.path}")
    assert "not monotonic" in human.out and "no single commit broke it" in human.out


def test_merge_on_the_first_parent_line_counts(cli, project, upstream):
    """A change made on a side branch breaks the patch where the merge lands on the first-parent line."""
    pin = upstream.head()
    setup(project, upstream, {"fix": fix_patch(upstream, pin)})
    git(upstream.path, "checkout", "-q", "-b", "side")
    upstream.commit({"src/mod.py": lines_with({20: "side rewrote 20"})}, "side: rewrite 20")
    git(upstream.path, "checkout", "-q", "main")
    upstream.commit({"README": "main moves on\n"}, "main: docs")
    merge = merge_no_ff(upstream, "side", "Merge pull request #9 from someone/side")
    (patch,) = bisect(cli, upstream).json["patches"]
    assert (patch["first_commit"], patch["state"], patch["pr"]) == (merge, "conflict", 9)


def test_nothing_to_bisect_when_every_patch_applies(cli, project, upstream):
    pin = upstream.head()
    setup(project, upstream, {"fix": fix_patch(upstream, pin)})
    upstream.commit({"src/mod.py": lines_with({}, insert_top=2)}, "shift")
    result = bisect(cli, upstream)
    assert result.code == 0
    assert result.json["patches"] == [] and result.json["applying"] == ["fix"]
    # asked for by name, an applying patch is walked anyway: it never stopped applying
    (patch,) = bisect(cli, upstream, "--patch", "fix").json["patches"]
    assert patch["first_commit"] is None and patch["state_at_to"] == "offset"


def test_unknown_patch_is_a_usage_error(cli, project, upstream):
    pin = upstream.head()
    setup(project, upstream, {"fix": fix_patch(upstream, pin)})
    result = bisect(cli, upstream, "--patch", "nope")
    assert result.code == 2 and "no patch nope" in result.err


def test_pin_on_a_release_branch_walks_from_the_merge_base(cli, project, upstream):
    base = upstream.head()
    git(upstream.path, "checkout", "-q", "-b", "release")
    pin = upstream.commit({"README": "release notes\n"}, "release 1.0")
    git(upstream.path, "checkout", "-q", "main")
    setup(project, upstream, {"fix": fix_patch(upstream, pin)})
    project.manifest("t", {"lib": {"git": "https://example.invalid/lib.git", "commit": pin, "patches": ["fix"]}})
    culprit = upstream.commit({"src/mod.py": lines_with({21: "main rewrote 21"})}, "main: rewrite 21 (#3)")
    doc = bisect(cli, upstream).json
    assert doc["merge_base"] == base and doc["pin"] == pin
    (patch,) = doc["patches"]
    assert patch["first_commit"] == culprit


def test_pull_request_numbers_in_subjects():
    from patchmgr.history.walk import pr_number

    assert pr_number("fix(qwen 35): fix qwen35 thd attention mask dtype to bool (#3314)") == 3314
    assert pr_number("cp: `fix: x (4361)` into `r0.5.0` (#4382)") == 4382
    assert pr_number("Merge pull request #37 from ISEEKYAN/fix") == 37
    assert pr_number("!3216 merge core_v0.12.1_sub_seq_len into master") == 3216  # gitcode / gitee
    assert pr_number("feat!: breaking change") is None and pr_number("docs: update") is None
