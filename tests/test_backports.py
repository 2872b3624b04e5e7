"""Backports tracked: the pull requests and commits a patch names, and whether each ref has them, on real git
upstreams (a squash subject ``(#N)``, a merge ``Merge pull request #N``, a named commit reached through a merge,
the patch's own subject, a prerequisite), in status (every format), matrix and bisect."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.commands import matrix, move_args
from support.gitrepos import git, merge_no_ff
from support.scenes import lines_with, setup

from patchmgr.model.patchfile import parse_patch
from patchmgr.model.references import Role, patch_references

URL = "https://github.com/owner/lib"


def mail(subject: str, fields: str) -> bytes:
    return (
        f"From: Dev <dev@example.com>\nSubject: [PATCH] {subject}\n\nWhy it is needed.\n\n{fields}\n---\n"
        "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+b\n"
    ).encode()


def named(subject: str, fields: str) -> list[tuple[str, int | None, str | None, str | None]]:
    patch = parse_patch(mail(subject, fields), Path("x.patch"))
    return [(r.role.value, r.number, r.commit, r.repository) for r in patch_references(patch)]


@pytest.mark.fast
def test_every_form_a_patch_names_a_change_in():
    sha = "85323c5cc8884448956ffc0d1d9ea06760854ee2"
    # Origin's commit and Upstream-Status's pull request, alone in their role: one change
    assert named("Fix", f"Origin: backport, {URL}/commit/{sha}\nUpstream-Status: Backport {URL}/pull/3314") == [
        ("backport", 3314, sha, "owner/lib")
    ]
    # a prerequisite the text names, its commit right after it; the same pull request named twice is one
    fields = (
        f"Origin: backport, {URL}/pull/6131\nUpstream-Status: Backport {URL}/pull/6131 (with its prerequisite "
        f"{URL}/pull/4888, commit 7af85da21d9acab2ef1465a23da8830e6d23f31e); both released"
    )
    assert named("Fix", fields) == [
        ("backport", 6131, None, "owner/lib"),
        ("prerequisite", 4888, "7af85da21d9acab2ef1465a23da8830e6d23f31e", "owner/lib"),
    ]
    # the subject's (#N); a Bug that is an issue names nothing, one that is a pull request does
    assert named("Fix the mask (#77)", f"Bug: {URL}/issues/5") == [("backport", 77, None, None)]
    assert named("Fix", f"Bug: {URL}/pull/9") == [("backport", 9, None, "owner/lib")]
    # GitCode and GitLab forms; Applied-Upstream; a bare commit id
    assert named("Fix", "Origin: upstream, https://gitcode.com/Ascend/MindSpeed/merge_requests/3268") == [
        ("backport", 3268, None, "Ascend/MindSpeed")
    ]
    assert named("Fix", "Applied-Upstream: https://gitlab.com/g/lib/-/commit/abcdef1234") == [
        ("backport", None, "abcdef1234", "g/lib")
    ]
    assert named("Fix", "Origin: upstream, commit 1234567abc") == [("backport", None, "1234567abc", None)]
    assert named("Fix", "Origin: vendor\nUpstream-Status: Pending") == []
    # the commit of the author's clone (add) and the base a patch was made on (import) are no upstream change
    assert named("Fix", "Origin: commit 1234567abc\nUpstream-Status: Pending") == []
    assert named("Fix", "Origin: vendor, imported from lib.patch (sha256 ab), made against commit 1234567abc") == []
    assert named("Fix", "Upstream-Status: Accepted, commit 1234567abc") == [("backport", None, "1234567abc", None)]
    assert Role.PREREQUISITE.value == "prerequisite"


def backport(upstream, pin, fields: str, line: int = 20, subject: str = "Fix") -> bytes:
    return upstream.make_patch(pin, {"src/mod.py": lines_with({line: f"fixed {line}"})}, subject, fields=fields)


def status(cli, upstream, *extra):
    return cli("status", "--target", "t", "--source", f"lib={upstream.path}", *extra)


def marks(doc, patch: str) -> list[tuple[int | None, str, str | None]]:
    (up,) = doc["upstreams"]
    found = next(p for p in up["patches"] if p["id"] == patch)["backports"]
    return [(m["pr"], m["state"], (m["landed_as"] or {}).get("commit")) for m in found]


def test_a_squashed_pull_request_is_there_from_the_commit_that_lands_it(cli, project, upstream):
    pin = upstream.head()
    fix = backport(upstream, pin, f"Origin: backport\nUpstream-Status: Backport {URL}/pull/42")
    setup(project, upstream, {"fix": fix})
    upstream.commit({"docs.txt": "one\n"}, "docs (#41)")
    landed = upstream.commit({"src/mod.py": lines_with({20: "fixed 20"})}, "fix line 20 upstream (#42)")
    git(upstream.path, "tag", "v1.0.0")
    upstream.commit({"docs.txt": "two\n"}, 'Revert "docs (#41)" (#43)')
    at_pin = status(cli, upstream, "--json").json
    assert marks(at_pin, "fix") == [(42, "absent", None)]
    there = status(cli, upstream, "--json", "--against", "lib=v1.0.0").json
    assert marks(there, "fix") == [(42, "present", landed)]
    text = status(cli, upstream, "--against", "lib=v1.0.0").out
    assert f"backport PR #42 at v1.0.0: there, {landed[:12]} 'fix line 20 upstream (#42)'" in text
    # the matrix, per column; the first change is the pull request the patch backports
    lib = matrix(cli, upstream, "--json").json["upstreams"][0]
    (row,) = lib["patches"]
    assert [c["backports"][0]["state"] for c in row["cells"]] == ["absent", "present", "present"]
    assert row["changed"]["named_by_patch"] == "PR #42, which this patch backports, landed"
    table = matrix(cli, upstream).out
    assert "PR #42: in v1.0.0, main (tip)" in table


def test_a_merged_pull_request_and_a_named_commit_reached_through_a_merge(cli, project, upstream):
    pin = upstream.head()
    git(upstream.path, "checkout", "-q", "-b", "feature")
    side = upstream.commit({"src/other.py": "x = 1\n"}, "the change itself")
    git(upstream.path, "checkout", "-q", "main")
    upstream.commit({"docs.txt": "one\n"}, "docs")
    merge = merge_no_ff(upstream, "feature", "Merge pull request #37 from someone/feature")
    by_merge = backport(upstream, pin, f"Upstream-Status: Backport {URL}/pull/37", line=5)
    by_commit = backport(upstream, pin, f"Origin: backport, {URL}/commit/{side}", line=30)
    project.add_patch("lib", "by-merge", by_merge)
    project.add_patch("lib", "by-commit", by_commit)
    spec = {"git": "https://example.invalid/lib.git", "commit": pin, "patches": ["by-merge", "by-commit"]}
    project.manifest("t", {"lib": spec})
    doc = status(cli, upstream, "--json", "--against", "lib=main").json
    assert marks(doc, "by-merge") == [(37, "present", merge)]  # the merge's subject, on the first-parent line
    assert marks(doc, "by-commit") == [(None, "present", side)]  # not first-parent, but reachable
    pinned = status(cli, upstream, "--json").json
    assert marks(pinned, "by-merge") == [(37, "absent", None)] and marks(pinned, "by-commit") == [
        (None, "absent", None)
    ]


def test_the_prerequisite_that_breaks_a_backport_is_named_as_such(cli, project, upstream):
    pin = upstream.head()
    fields = f"Upstream-Status: Backport {URL}/pull/60 (with its prerequisite {URL}/pull/48)"
    setup(project, upstream, {"fix": backport(upstream, pin, fields)})
    upstream.commit({"docs.txt": "one\n"}, "docs")
    prerequisite = upstream.commit({"src/mod.py": lines_with({20: "gathered 20"})}, "gather the weights (#48)")
    lib = matrix(cli, upstream, "--json").json["upstreams"][0]
    (row,) = lib["patches"]
    assert row["changed"]["commit"] == prerequisite and row["cells"][-1]["state"] == "conflict"
    assert row["changed"]["named_by_patch"] == "the backport's prerequisite PR #48 landed"
    cell = row["cells"][-1]["backports"]
    assert [(m["pr"], m["role"], m["state"]) for m in cell] == [
        (60, "backport", "absent"),
        (48, "prerequisite", "present"),
    ]
    text = matrix(cli, upstream).out
    assert f"conflict since {prerequisite[:12]}: the backport's prerequisite PR #48 landed" in text
    # bisect: at the pin and at --to, and its first commit named as the prerequisite
    result = cli(*move_args("bisect", upstream, "--json"))
    doc = result.json
    assert doc["patches"][0]["named_by_patch"] == "the backport's prerequisite PR #48 landed"
    assert [m["state"] for m in doc["backports"]["fix"]["pin"]] == ["absent", "absent"]
    assert [m["state"] for m in doc["backports"]["fix"]["to"]] == ["absent", "present"]
    said = cli(*move_args("bisect", upstream)).out
    assert "fix: backport PR #48 (prerequisite) at main: there" in said


def test_the_patch_subject_and_another_repository(cli, project, upstream):
    pin = upstream.head()
    own = backport(upstream, pin, "Origin: vendor", subject="Fix the mask (#77)")
    elsewhere = backport(upstream, pin, "Origin: backport, https://github.com/huggingface/transformers/pull/77", 30)
    setup(project, upstream, {"own": own, "elsewhere": elsewhere})
    landed = upstream.commit({"docs.txt": "x\n"}, "Fix the mask upstream (#77)")
    doc = status(cli, upstream, "--json", "--against", "lib=main").json
    assert marks(doc, "own") == [(77, "present", landed)]
    (mark,) = next(p for p in doc["upstreams"][0]["patches"] if p["id"] == "elsewhere")["backports"]
    assert mark["state"] == "unknown" and "huggingface/transformers" in mark["reason"]


def test_every_report_format_says_whether_the_backport_is_there(cli, project, upstream):
    pin = upstream.head()
    fields = f"Upstream-Status: Backport {URL}/pull/42"
    setup(project, upstream, {"fix": backport(upstream, pin, fields), "other": backport(upstream, pin, fields, 5)})
    upstream.commit({"docs.txt": "x\n"}, "unrelated (#42)")
    line = "backport PR #42 at main: there"
    for fmt in ("github", "junit"):
        out = status(cli, upstream, "--against", "lib=main", "--format", fmt).out
        assert line in out, fmt
    from markdown_it import MarkdownIt

    page = (
        MarkdownIt("commonmark")
        .enable("table")
        .render(status(cli, upstream, "--against", "lib=main", "--format", "markdown").out)
    )
    assert page.count(line) == 2  # as a reader sees it, once per patch


@pytest.mark.fast
def test_a_release_without_history_cannot_say():
    from patchmgr.history.backports import backports_at
    from patchmgr.model.manifest import Upstream

    lib = Upstream("lib", f"{URL}.git", (), "0" * 40, "1.0", "lib", "", ("fix",))
    patch = parse_patch(mail("Fix", f"Upstream-Status: Backport {URL}/pull/42"), Path("fix.patch"), "lib", "fix")
    (mark,) = backports_at(lib, object(), [patch])["fix"]
    assert (mark.presence.value, mark.reason) == ("unknown", "a release without git history cannot say")


def test_answers_about_a_commit_are_recorded_and_a_damaged_record_is_ignored(cli, project, upstream, tmp_path):
    pin = upstream.head()
    setup(project, upstream, {"fix": backport(upstream, pin, f"Upstream-Status: Backport {URL}/pull/42")})
    landed = upstream.commit({"docs.txt": "x\n"}, "the fix (#42)")
    first = status(cli, upstream, "--json", "--against", "lib=main").json
    record = tmp_path / "cache" / "git" / "lib.git" / "objects" / "info" / "patchmgr-answers"
    assert landed in record.read_text()  # the look-up of main's commit, kept
    assert marks(first, "fix") == [(42, "present", landed)]
    assert marks(status(cli, upstream, "--json", "--against", "lib=main").json, "fix") == [(42, "present", landed)]
    record.write_text('["' + landed + '", "grep \n{not json\n')
    assert marks(status(cli, upstream, "--json", "--against", "lib=main").json, "fix") == [(42, "present", landed)]


def test_installed_files_without_history_cannot_say(cli, tiny):
    from support.tinydist import core_with

    tiny.series(({"tinydist/core.py": core_with(500)}, "Core five (#42)"))
    result = cli("status", *tiny.src(), "--json")
    (up,) = result.json["upstreams"]
    (mark,) = up["patches"][0]["backports"]
    assert (mark["pr"], mark["state"], mark["reason"]) == (42, "unknown", "installed files have no git history")
