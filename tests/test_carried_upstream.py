"""``upstream`` when history carries the change (issue 38, item 1): a commit in pin..ref with the patch's patch-id,
or one its Origin/Applied-Upstream names and the ref reaches, makes the patch ``upstream (carried by X[, changed
since])`` in status, bump and matrix, although its lines changed later; a named commit the ref does not reach
carries nothing."""

from __future__ import annotations

import re

import pytest
from support.commands import bump, matrix, move_args
from support.gitrepos import detached_at, git
from support.real_histories import SNAPSHOTS, clone_of
from support.scenes import lines_with, pin_fixes

from patchmgr.model.patchfile import parse_patch
from patchmgr.model.references import patch_references

SHA = "0123456789abcdef0123456789abcdef01234567"


@pytest.mark.parametrize(
    "value",
    [
        f"upstream, https://github.com/owner/lib/commit/{SHA}",
        f"upstream, https://gitlab.com/group/sub/lib/-/commit/{SHA}",
        f"upstream, https://anongit.mindrot.org/lib.git/commit/?id={SHA}",
        f"upstream, https://git.example.org/cgit/lib.git/commit/?h=main&id={SHA}",
        f"upstream, https://sourceware.org/git/?p=lib.git;a=commit;h={SHA}",
        f"upstream, http://git.example.org/gitweb/?p=lib.git;h={SHA}",
        f"upstream, commit {SHA}",
    ],
)
def test_every_forge_commit_url_names_the_commit(tmp_path, value):
    patch = parse_patch(
        f"Description: fix\nOrigin: {value}\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n".encode(), tmp_path / "p.patch"
    )
    assert [r.commit for r in patch_references(patch)] == [SHA]


def state_cells(cli, upstream, ref="main") -> dict[str, str]:
    """Patch id -> its state and detail cells of the status table."""
    result = cli("status", "--target", "t", "--source", f"lib={upstream.path}", "--against", f"lib={ref}")
    rows = [line.split(None, 2) for line in result.out.splitlines() if line.startswith("lib ")]
    return {row[1]: row[2] for row in rows}


def status_json(cli, upstream, ref="main") -> dict[str, dict]:
    result = cli("status", "--target", "t", "--json", "--source", f"lib={upstream.path}", "--against", f"lib={ref}")
    return {p["id"]: p for p in result.json["upstreams"][0]["patches"]}


def named_scene(project, upstream, origin: str, lead: str = "Origin: upstream, ") -> tuple[str, str]:
    """Patch ``landed`` (line 10) whose Origin names upstream's commit of the fix, made upstream's own way (not
    its patch-id), after which upstream edits the line before (its reverse no longer applies); patch
    ``offside`` (line 30) whose Origin names a commit of a line main does not reach, main rewriting line 30.
    ``origin`` is the Origin's form, ``{}`` the commit, after ``lead`` (the field). Returns (the named commit,
    the one main lacks)."""
    pin = upstream.head()
    with detached_at(upstream.path, pin):
        elsewhere = upstream.commit({"src/mod.py": lines_with({30: "fixed 30"})}, "side fix")
    carrier = upstream.commit({"src/mod.py": lines_with({10: "fixed 10", 11: "upstream's own"})}, "fix 10 (#5)")
    fixes = {"landed": ({10: "fixed 10"}, carrier), "offside": ({30: "fixed 30"}, elsewhere)}
    for patch_id, (lines, named) in fixes.items():
        data = upstream.make_patch(
            pin, {"src/mod.py": lines_with(lines)}, patch_id.capitalize(), fields=lead + origin.format(named)
        )
        project.add_patch("lib", patch_id, data)
    spec = {"git": "https://example.invalid/lib.git", "commit": pin, "patches": list(fixes)}
    project.manifest("t", {"lib": spec})
    upstream.commit(
        {"src/mod.py": lines_with({9: "later", 10: "fixed 10", 11: "upstream's own", 30: "rewritten 30"})}, "later"
    )
    return carrier, elsewhere


FORMS = [
    "https://github.com/owner/lib/commit/{}",
    "https://gitlab.com/group/lib/-/commit/{}",
    "https://git.example.org/lib.git/commit/?id={}",
    "https://git.example.org/lib.git/commit/?h=main&id={}",
    "https://git.example.org/?p=lib.git;a=commit;h={}",
    "https://git.example.org/?p=lib.git;h={}",
    "commit {}",
]


@pytest.mark.parametrize("form", FORMS)
def test_a_commit_the_origin_names_carries_the_patch_though_its_lines_changed(cli, project, upstream, form):
    carrier, _elsewhere = named_scene(project, upstream, form)
    found = status_json(cli, upstream)
    assert found["landed"]["state"] == "upstream", found["landed"]
    assert found["landed"]["carrier"] == carrier and found["landed"]["changed_since"] is True
    assert "its Origin names it" in found["landed"]["detail"]
    # named too, but on a line the ref does not reach: the change is not there, so it is not upstream
    assert found["offside"]["state"] == "conflict"
    assert state_cells(cli, upstream)["landed"].startswith(f"upstream (carried by {carrier[:12]}, changed since)")


@pytest.mark.parametrize("lead", ["Applied-Upstream: ", "Bug: "])
def test_applied_upstream_and_bug_name_the_carrier_as_origin_does(cli, project, upstream, lead):
    # a Bug field's commit URL may name the commit that brought the bug in: that one is in the pin's history,
    # so it carries nothing; one past the pin that the ref reaches is the fix
    carrier, _elsewhere = named_scene(project, upstream, "https://github.com/owner/lib/commit/{}", lead)
    found = status_json(cli, upstream)
    assert (found["landed"]["state"], found["landed"]["carrier"]) == ("upstream", carrier), found["landed"]
    assert found["offside"]["state"] == "conflict"


def test_a_commit_with_the_patch_id_reads_carried_and_changed_since(cli, project, upstream):
    pin_fixes(project, upstream, {"landed": {5: "landed"}, "ours": {30: "ours"}})
    carrier = upstream.commit({"src/mod.py": lines_with({5: "landed"})}, "take the fix (#12)")
    upstream.commit({"src/mod.py": lines_with({4: "later", 5: "landed", 6: "later"})}, "edit around it")
    assert state_cells(cli, upstream)["landed"].startswith(f"upstream (carried by {carrier[:12]}, changed since)")
    assert status_json(cli, upstream)["landed"]["changed_since"] is True
    shown = matrix(cli, upstream, "--refs", "main", "--json")
    landed = next(row for row in shown.json["upstreams"][0]["patches"] if row["id"] == "landed")
    assert landed["cells"][-1]["changed_since"] is True and landed["cells"][-1]["carrier"] == carrier


def test_bump_drops_a_patch_its_origin_names_with_that_commit_instead_of_refusing(cli, project, upstream):
    carrier, elsewhere = named_scene(project, upstream, "https://git.example.org/lib.git/commit/?id={}")
    manifest = project.root / "manifests/t.toml"
    manifest.write_text(manifest.read_text().replace('"landed", "offside"', '"landed"'))
    result = bump(cli, upstream)
    assert result.code == 0, result.out
    said = " ".join(result.out.split())
    assert f"dropped landed: upstream commit {carrier} carries this change (its Origin names it)" in said
    assert not (project.root / "patches/lib/landed.patch").exists()
    assert "patches = []" in manifest.read_text()


def test_whatever_bisect_finds_status_finds(cli, project, upstream):
    """Upstream takes the change inside a bigger commit (not the patch's patch-id), then edits the line before
    it: bisect names the commit where the patch became upstream, and status says upstream too."""
    pin_fixes(project, upstream, {"landed": {5: "landed"}})
    took = upstream.commit({"src/mod.py": lines_with({5: "landed", 20: "unrelated"})}, "big change (#9)")
    upstream.commit({"src/mod.py": lines_with({4: "later", 5: "landed", 20: "unrelated"})}, "edit line 4")
    walked = cli(*move_args("bisect", upstream, "--json"))
    history = walked.json["patches"][0]
    assert history["first_commit"] == took and history["state"] == "upstream", history
    found = status_json(cli, upstream)["landed"]
    assert found["state"] == "upstream" and found["changed_since"] is True and found["carrier"] is None
    assert took in found["detail"]
    # the reverse alone is no carrier: bump asks for a review instead of dropping it
    assert "needs review: landed" in bump(cli, upstream).out


DEBIAN_STYLE = """From {sha} Mon Sep 17 00:00:00 2001
From: "djm@openbsd.org" <djm@openbsd.org>
Subject: {subject}

Origin: backport, https://anongit.mindrot.org/openssh.git/commit/?id={sha}
Bug-Debian: https://bugs.debian.org/1117530
Last-Update: 2026-01-08

Patch-Name: backport.patch
---
"""


def without_id_lines(diff: str) -> str:
    """``diff`` without the hunks that change a ``$OpenBSD: …$`` line, as Debian backports openssh's commits."""
    kept = []
    for part in re.split(r"(?m)^(?=diff --git )", diff):
        head, *hunks = re.split(r"(?m)^(?=@@ )", part)
        hunks = [hunk for hunk in hunks if "$OpenBSD" not in hunk]
        kept += [head, *hunks] if hunks else []
    return "".join(kept)


def test_a_debian_backport_named_by_its_cgit_origin_is_upstream_though_changed_since(cli, project, tmp_path):
    """openssh's real history: Debian's CVE-2025-61984.patch backports upstream commit 35d591765210 (ssh.c) to
    10.0p1 without its ``$OpenBSD$`` line (so not its patch-id), its Origin the cgit URL Debian writes;
    upstream edits ssh.c again before V_10_3_P1, where the patch conflicts. It is upstream there, carried by
    that commit, as Debian's own changelog says when it dropped the patch."""
    SNAPSHOTS.setdefault("openssh", "openssh+openssh-portable")
    clone = clone_of("openssh", tmp_path / "openssh")
    named = "35d5917652106aede47621bb3f64044604164043"
    pin = git(clone, "rev-parse", "V_10_0_P1^{commit}")
    git(clone, "checkout", "-q", "--detach", pin)
    git(clone, "apply", input=without_id_lines(git(clone, "diff", f"{named}~1", named) + "\n").encode())
    body = git(clone, "diff", "--full-index") + "\n"
    git(clone, "checkout", "-q", "-f", pin)
    subject = git(clone, "log", "-1", "--format=%s", named)
    project.add_patch("ssh", "CVE-2025-61984", (DEBIAN_STYLE.format(sha=named, subject=subject) + body).encode())
    spec = {"git": "https://github.com/openssh/openssh-portable", "commit": pin, "patches": ["CVE-2025-61984"]}
    project.manifest("t", {"ssh": spec})
    result = cli("status", "--target", "t", "--json", "--source", f"ssh={clone}", "--against", "ssh=V_10_3_P1")
    found = result.json["upstreams"][0]["patches"][0]
    assert found["state"] == "upstream" and found["carrier"] == named, found
    assert found["changed_since"] is True and "its Origin names it" in found["detail"]
    # at a release without that commit, the same patch is not upstream
    before = cli("status", "--target", "t", "--json", "--source", f"ssh={clone}", "--against", "ssh=V_10_0_P1")
    assert before.json["upstreams"][0]["patches"][0]["state"] != "upstream"


def test_a_patch_whose_one_hunk_spans_a_short_file_is_found_by_its_patch_id(cli, project, upstream):
    """The hunk has one line of context before it and two after (the file's ends), and five between its two
    changes: its own context count (2) splits it in two, so only git's default context gives its patch-id (a
    real openssh commit, regress/connect.sh, read as not carried that way)."""
    short = "".join(f"short {i}\n" for i in range(1, 11))
    upstream.commit({"src/short.py": short}, "add a short file")
    changed = short.replace("short 2\n", "fixed 2\n").replace("short 8\n", "fixed 8\n")
    pin = upstream.head()
    project.add_patch("lib", "short", upstream.make_patch(pin, {"src/short.py": changed}, "Short"))
    project.manifest("t", {"lib": {"git": "https://example.invalid/lib.git", "commit": pin, "patches": ["short"]}})
    carrier = upstream.commit({"src/short.py": changed}, "take the short fix")
    upstream.commit({"src/short.py": changed.replace("short 5\n", "later 5\n")}, "edit between")
    found = status_json(cli, upstream)["short"]
    assert found["state"] == "upstream" and found["carrier"] == carrier, found
    assert found["changed_since"] is True
