"""A ref whose commit the cache holds needs no network (issue 27, item 3): ``bump --to v2`` and
``status --against v2`` after ``status --against lib=v2`` work when the manifest's URL cannot be reached, and say
that the cache stood in; ``edit --onto v2`` and ``apply --into`` check out from the cache when it holds every file
(after ``patchmgr fetch``), else name the files it lacks; a ref the cache never resolved still fails with the
reason."""

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


def test_edit_onto_offline_checks_out_from_a_cache_that_holds_every_file(cli, project, upstream, tmp_path):
    """``patchmgr fetch`` (online) filled the cache at the pin; ``status --against`` resolved v2 and read what v2
    changed: with the manifest's URL out of reach, edit --onto checks both out from the cache and says so."""
    new = moved_upstream(cli, project, upstream)
    filled = cli("fetch", "--target", "t", "--source", f"lib={upstream.path}")
    assert filled.code == 0, filled.out + filled.err
    work = tmp_path / "work"
    moved = cli("edit", "--target", "t", "--upstream", "lib", "--onto", "v2", "--into", str(work))
    assert moved.code == 0, moved.out + moved.err
    assert f"lib {new[:12]}: checked out from the patchmgr cache" in moved.err and "example.invalid" in moved.err
    assert "every patch is on v2" in moved.out
    assert git(work, "rev-parse", "HEAD~1") == new and "fixed 20" in (work / "src/mod.py").read_text()
    assert "moved upstream" in (work / "src/mod.py").read_text()
    assert git(work, "remote", "get-url", "origin") == UNREACHABLE  # the checkout names the upstream, not the cache
    applied = cli("apply", "--target", "t", "--into", str(tmp_path / "build"))
    assert applied.code == 0, applied.out + applied.err
    assert "fixed 20" in (tmp_path / "build/lib/src/mod.py").read_text()


def test_a_checkout_the_cache_cannot_serve_names_the_missing_files(cli, project, upstream, tmp_path):
    """status read only what the patches touch: the pin's README never reached the cache, so apply --into and
    edit --onto (a file new at v2) fail with one error naming it and how to fill the cache; nothing is made."""
    moved_upstream(cli, project, upstream)
    build = tmp_path / "build"
    result = cli("apply", "--target", "t", "--into", str(build))
    assert result.code == 1, result.out + result.err
    assert "no source could provide it (https://example.invalid/lib.git" in result.err
    assert "the cache lacks 1 file(s) of" in result.err and ": README" in result.err
    assert "hint: run `patchmgr fetch --target t --upstream lib` while its source is reachable" in result.err
    assert "Traceback" not in result.err and not build.exists()
    upstream.commit({"src/new.py": "new\n"}, "add a file")
    git(upstream.path, "tag", "-f", "v2")
    assert cli("fetch", "--target", "t", "--source", f"lib={upstream.path}").code == 0
    assert cli("status", "--target", "t", "--against", "lib=v2", "--source", f"lib={upstream.path}").code in (0, 1)
    work = tmp_path / "work"
    moved = cli("edit", "--target", "t", "--upstream", "lib", "--onto", "v2", "--into", str(work))
    assert moved.code == 1, moved.out + moved.err
    assert "the cache lacks 1 file(s) of" in moved.err and ": src/new.py" in moved.err
    assert "--source lib=PATH_OR_URL" in moved.err and not work.exists()
    # the hint's own command fills the cache with every file of v2 (while the source is reachable); then the
    # same edit --onto works with the manifest's URL out of reach
    assert "`patchmgr fetch --target t --upstream lib --against lib=v2`" in moved.err, moved.err
    filled = cli(
        "fetch", "--target", "t", "--upstream", "lib", "--against", "lib=v2", "--source", f"lib={upstream.path}"
    )
    assert filled.code == 0 and "lib at v2: cached from" in filled.out, filled.out + filled.err
    moved = cli("edit", "--target", "t", "--upstream", "lib", "--onto", "v2", "--into", str(work))
    assert moved.code == 0 and "checked out from the patchmgr cache" in moved.err, moved.out + moved.err
    assert (work / "src/new.py").read_text() == "new\n"


def test_a_ref_the_cache_never_resolved_still_fails_with_the_reason(cli, project, upstream):
    moved_upstream(cli, project, upstream)
    git(upstream.path, "tag", "v3")
    result = cli("bump", "--target", "t", "--upstream", "lib", "--to", "v3")
    assert result.code == 1, result.out + result.err
    assert "cannot resolve lib ref 'v3'" in result.err and "example.invalid" in result.err


def test_fetch_with_a_source_after_an_offline_run_fills_the_cache_from_that_source(cli, project, upstream, tmp_path):
    """The offline run left the cache's remote at the unreachable URL; the hint's `patchmgr fetch --source`
    fetches the files from the source it names, and the checkout then works offline."""
    moved_upstream(cli, project, upstream)
    assert cli("status", "--target", "t", "--against", "lib=v2").code == 0  # offline: the cache's v2, with a note
    assert cli("apply", "--target", "t", "--into", str(tmp_path / "build")).code == 1  # the cache lacks README
    filled = cli("fetch", "--target", "t", "--source", f"lib={upstream.path}")
    assert filled.code == 0, filled.out + filled.err
    applied = cli("apply", "--target", "t", "--into", str(tmp_path / "build"))
    assert applied.code == 0, applied.out + applied.err
    assert (tmp_path / "build/lib/README").read_text() == "upstream\n"


def test_fetch_from_a_local_source_that_lacks_a_blob_names_the_file_and_caches_the_rest(cli, project, upstream):
    pin_fixes(project, upstream, {"fix": {20: "fixed 20"}})
    upstream.commit({"docs/guide.md": "a guide\n"}, "a guide")
    pin = upstream.head()
    manifest = project.root / "manifests/t.toml"
    manifest.write_text(manifest.read_text().replace(git(upstream.path, "rev-parse", "HEAD~1"), pin))
    guide = git(upstream.path, "rev-parse", f"{pin}:docs/guide.md")
    (upstream.path / ".git" / "objects" / guide[:2] / guide[2:]).unlink()  # the source lost the guide's blob
    fetched = cli("fetch", "--target", "t", "--source", f"lib={upstream.path}", "--json")
    assert fetched.code == 0, fetched.out + fetched.err
    (entry,) = fetched.json["upstreams"]
    assert entry["ok"] and entry["absent"] == ["docs/guide.md"], entry
