"""A ref whose commit the cache holds needs no network (issue 27, item 3): ``bump --to v2`` and
``edit --onto v2`` after ``status --against lib=v2`` work when the manifest's URL cannot be reached, and say that
the cache stood in; a ref the cache never resolved still fails with the reason."""

from __future__ import annotations

from support.gitrepos import git
from support.scenes import lines_with, pin_fixes

UNREACHABLE = "https://example.invalid/lib.git"  # the manifest's URL (support.scenes): .invalid never resolves


def moved_upstream(cli, project, upstream) -> str:
    """Target ``t`` at the pin with one patch; upstream tag v2 one commit on, resolved once from a clone."""
    pin_fixes(project, upstream, {"fix": {20: "fixed 20"}})
    new = upstream.commit({"src/mod.py": lines_with({3: "moved upstream"})}, "move")
    git(upstream.path, "tag", "v2")
    seen = cli("status", "--target", "t", "--against", "lib=v2", "--source", f"lib={upstream.path}", "--json")
    assert seen.code == 0, seen.out + seen.err
    assert seen.json["upstreams"][0]["commit"] == new
    return new


def test_bump_to_a_tag_the_cache_resolved_needs_no_network(cli, project, upstream):
    new = moved_upstream(cli, project, upstream)
    bumped = cli("bump", "--target", "t", "--upstream", "lib", "--to", "v2")
    assert bumped.code == 0, bumped.out + bumped.err
    assert f"lib v2 is {new[:12]} as the cache last resolved it: no source could be reached" in bumped.err
    assert "example.invalid" in bumped.err  # the reason the URL was not asked
    assert f'commit = "{new}"' in (project.root / "manifests/t.toml").read_text()


def test_status_against_a_tag_the_cache_resolved_needs_no_network(cli, project, upstream):
    new = moved_upstream(cli, project, upstream)
    again = cli("status", "--target", "t", "--against", "lib=v2", "--json")
    assert again.code == 0, again.out + again.err
    assert again.json["upstreams"][0]["commit"] == new
    assert f"lib v2 is {new[:12]} as the cache last resolved it" in again.err


def test_edit_onto_gets_past_the_ref_and_names_what_the_cache_lacks(cli, project, upstream, tmp_path):
    """The ref is the cache's; the checkout needs the files of the pin, which only a source (or `patchmgr fetch`)
    can give: that is what the error is about, not the ref."""
    new = moved_upstream(cli, project, upstream)
    moved = cli("edit", "--target", "t", "--upstream", "lib", "--onto", "v2", "--into", str(tmp_path / "work"))
    assert moved.code == 1 and f"lib v2 is {new[:12]} as the cache last resolved it" in moved.err
    assert "cannot resolve lib ref" not in moved.err and "cannot read src/mod.py" in moved.err
    assert "hint: pass a complete clone of the upstream" in moved.err


def test_a_ref_the_cache_never_resolved_still_fails_with_the_reason(cli, project, upstream):
    moved_upstream(cli, project, upstream)
    git(upstream.path, "tag", "v3")
    result = cli("bump", "--target", "t", "--upstream", "lib", "--to", "v3")
    assert result.code == 1, result.out + result.err
    assert "cannot resolve lib ref 'v3'" in result.err and "example.invalid" in result.err
