"""refresh and bump on real git upstreams: offsets rewritten exactly, fuzz and conflicts refused, one-line pins."""

from __future__ import annotations

import difflib

from support.commands import bump, refresh, status_of
from support.gitrepos import git
from support.scenes import lines_with, pin_fixes

from patchmgr.model.dep3_edit import set_last_update

MANIFEST = """# the test target: comments and layout must survive a bump
[target]
name = "t"
description = "test target"

[upstreams.lib]
git = "https://example.invalid/lib.git"   # the real home
commit = "{pin}"  # pinned for the fix
patches = [
    "fix",  # the only patch
]
"""


def prologue(data: bytes) -> bytes:
    return data[: data.index(b"diff --git")]


def changed_lines(before: str, after: str) -> list[str]:
    return [line for line in difflib.ndiff(before.splitlines(), after.splitlines()) if line[:2] in ("- ", "+ ")]


def test_refresh_rewrites_an_offset_patch_keeping_its_headers(cli, project, upstream):
    path = project.root / "patches/lib/fix.patch"
    pin_fixes(project, upstream, {"fix": {20: "fixed 20"}})
    before = path.read_bytes()
    upstream.commit({"src/mod.py": lines_with({}, insert_top=3)}, "upstream adds 3 lines on top")
    assert status_of(cli, upstream) == [("fix", "offset")]
    result = refresh(cli, upstream)
    assert result.code == 0, result.out + result.err
    assert "rewrote 1 patch\n" in result.out
    after = path.read_bytes()
    assert prologue(after) == set_last_update(prologue(before))  # only Last-Update (added: it had none) changes
    assert status_of(cli, upstream) == [("fix", "clean")]
    new_blob = git(upstream.path, "rev-parse", "main:src/mod.py")
    assert f"index {new_blob}..".encode() in after
    # only the index line, the hunk header and Last-Update differ
    assert len([line for line in changed_lines(before.decode(), after.decode()) if line.startswith("+ ")]) == 3
    # a second refresh has nothing to do
    again = refresh(cli, upstream)
    assert again.code == 0 and path.read_bytes() == after


def test_refresh_refuses_fuzz_unless_allowed_and_shows_old_and_new(cli, project, upstream):
    path = project.root / "patches/lib/fix.patch"
    pin_fixes(project, upstream, {"fix": {20: "fixed 20"}})
    before = path.read_bytes()
    upstream.commit({"src/mod.py": lines_with({17: "upstream changed 17"})}, "touch outer context")
    refused = refresh(cli, upstream)
    assert refused.code == 1
    assert "refused" in refused.out and "--allow-fuzz" in refused.out
    assert path.read_bytes() == before
    assert refresh(cli, upstream, "--allow-three-way").code == 1  # a 3-way merge allowed is not fuzz allowed
    assert path.read_bytes() == before
    allowed = refresh(cli, upstream, "--allow-fuzz")
    assert allowed.code == 0, allowed.out
    assert "fix (now)" in allowed.out and "fix (refreshed)" in allowed.out  # the interdiff came first
    assert "+ upstream changed 17" in allowed.out
    assert prologue(path.read_bytes()) == set_last_update(prologue(before))
    assert status_of(cli, upstream) == [("fix", "clean")]


def test_refresh_refuses_a_conflict_and_writes_nothing(cli, project, upstream):
    pin_fixes(project, upstream, {"one": {5: "one"}, "two": {30: "two"}})
    before = {p.name: p.read_bytes() for p in (project.root / "patches/lib").iterdir()}
    upstream.commit({"src/mod.py": lines_with({30: "rewritten"}, insert_top=1)}, "rewrite 30")
    result = refresh(cli, upstream)
    assert result.code == 1
    assert "conflict" in result.out and "nothing was written" in result.out
    assert {p.name: p.read_bytes() for p in (project.root / "patches/lib").iterdir()} == before


def test_bump_rewrites_only_the_pin_line(cli, project, upstream):
    pin = upstream.head()
    project.add_patch("lib", "fix", upstream.make_patch(pin, {"src/mod.py": lines_with({20: "x"})}, "Fix"))
    manifest = project.root / "manifests/t.toml"
    manifest.write_text(MANIFEST.format(pin=pin))
    new = upstream.commit({"README": "new release\n"}, "release")
    before = manifest.read_text()
    patch_before = (project.root / "patches/lib/fix.patch").read_bytes()
    result = bump(cli, upstream, to=new)
    assert result.code == 0, result.out + result.err
    after = manifest.read_text()
    assert changed_lines(before, after) == [f'- commit = "{pin}"  # pinned for the fix', f'+ commit = "{new}"']
    assert (project.root / "patches/lib/fix.patch").read_bytes() == patch_before
    assert f"bumped lib: {pin[:12]} -> {new[:12]}" in result.out


def test_bump_to_a_tag_sets_version_and_refreshes(cli, project, upstream):
    pin = upstream.head()
    pin_fixes(project, upstream, {"fix": {20: "x"}}, {"version": "0.4.2"})
    manifest = project.root / "manifests/t.toml"
    before = manifest.read_text()
    new = upstream.commit({"src/mod.py": lines_with({}, insert_top=2)}, "release 0.5.0")
    git(upstream.path, "tag", "v0.5.0")
    result = bump(cli, upstream, to="v0.5.0")
    assert result.code == 0, result.out + result.err
    assert changed_lines(before, manifest.read_text()) == [
        f'- commit = "{pin}"',
        f'+ commit = "{new}"  # v0.5.0',
        '- version = "0.4.2"',
        '+ version = "0.5.0"',
    ]
    assert "refreshed fix (offset)" in result.out
    assert status_of(cli, upstream, "v0.5.0") == [("fix", "clean")]


def test_bump_needs_a_version_it_cannot_guess(cli, project, upstream):
    pin_fixes(project, upstream, {"fix": {20: "x"}}, {"version": "0.4.2"})
    upstream.commit({"README": "more\n"}, "more")
    result = bump(cli, upstream)
    assert result.code == 2 and "--version" in result.err
    assert bump(cli, upstream, "--version", "0.4.3").code == 0
    assert 'version = "0.4.3"' in (project.root / "manifests/t.toml").read_text()


def test_bump_refuses_while_a_patch_conflicts_naming_it(cli, project, upstream):
    pin_fixes(project, upstream, {"good": {5: "good"}, "bad": {30: "bad"}})
    manifest = project.root / "manifests/t.toml"
    before = manifest.read_text()
    upstream.commit({"src/mod.py": lines_with({30: "rewritten"})}, "rewrite 30")
    result = bump(cli, upstream)
    assert result.code == 1
    assert "blocks the bump: bad is conflict" in result.out and "good is" not in result.out
    assert manifest.read_text() == before


def test_bump_drops_a_patch_that_landed_upstream_unless_kept(cli, project, upstream):
    pin_fixes(project, upstream, {"landed": {5: "landed"}, "ours": {30: "ours"}})
    manifest = project.root / "manifests/t.toml"
    before = manifest.read_text()
    carrier = upstream.commit({"src/mod.py": lines_with({5: "landed"})}, "take the landed fix (#12)")
    kept = bump(cli, upstream, "--keep")
    assert kept.code == 0 and "kept landed" in kept.out
    assert (project.root / "patches/lib/landed.patch").exists()
    assert '"landed", "ours"' in manifest.read_text()
    manifest.write_text(before)
    dropped = bump(cli, upstream)
    assert dropped.code == 0, dropped.out
    assert f"dropped landed: upstream commit {carrier}" in dropped.out.replace("\n", " ")
    assert not (project.root / "patches/lib/landed.patch").exists()
    assert 'patches = ["ours"]' in manifest.read_text()
    assert status_of(cli, upstream) == [("ours", "clean")]


def test_refresh_accepts_a_three_way_merge_when_allowed(cli, project, upstream):
    path = project.root / "patches/lib/fix.patch"
    # one hunk changing lines 20 and 24 with 21-23 as inner context, which upstream then edits
    pin_fixes(project, upstream, {"fix": {20: "fixed 20", 24: "fixed 24"}})
    upstream.commit({"src/mod.py": lines_with({22: "upstream changed 22"})}, "touch inner context")
    assert status_of(cli, upstream) == [("fix", "three-way")]
    assert refresh(cli, upstream).code == 1
    result = refresh(cli, upstream, "--allow-three-way")
    assert result.code == 0, result.out
    assert "old and new patch (three-way)" in result.out
    assert result.out.index("fix (refreshed)") < result.out.index("rewrote 1 patch")  # shown before writing
    assert status_of(cli, upstream) == [("fix", "clean")]
    assert b"+fixed 24\n" in path.read_bytes() and b" upstream changed 22\n" in path.read_bytes()


def test_bump_dry_run_writes_nothing(cli, project, upstream):
    pin_fixes(project, upstream, {"fix": {20: "x"}})
    upstream.commit({"src/mod.py": lines_with({}, insert_top=2)}, "shift")
    before = {p: p.read_bytes() for p in project.root.rglob("*") if p.is_file()}
    result = bump(cli, upstream, "--dry-run")
    assert result.code == 0 and "would refresh fix (offset)" in result.out and "nothing was written" in result.out
    assert {p: p.read_bytes() for p in project.root.rglob("*") if p.is_file()} == before


def test_bump_keeps_the_file_of_a_dropped_patch_another_target_lists(cli, project, upstream):
    pin = upstream.head()
    pin_fixes(project, upstream, {"landed": {5: "landed"}})
    project.manifest("other", {"lib": {"git": "https://example.invalid/lib.git", "commit": pin, "patches": ["landed"]}})
    upstream.commit({"src/mod.py": lines_with({5: "landed"})}, "take it (#12)")
    result = bump(cli, upstream)
    assert result.code == 0, result.out
    assert "its file stays: target other lists it too" in result.out
    assert (project.root / "patches/lib/landed.patch").exists()
    assert "patches = []" in (project.root / "manifests/t.toml").read_text()
    other = cli("status", "--target", "other", "--json", "--source", f"lib={upstream.path}")
    assert other.json["upstreams"][0]["patches"][0]["state"] == "clean"
