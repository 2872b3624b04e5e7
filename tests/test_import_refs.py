"""import finds where a patch was made on every branch and tag (not only HEAD's line), names that ref, writes
``version``/``pypi`` for a release-tag pin, and the imported series moves with ``edit --onto``."""

from __future__ import annotations

import tomllib

from support.commands import edit_onto, export, resume
from support.gitrepos import git
from support.monolith import MONOLITH, dirty_diff, fill_stubs, import_args, text_with, three_file_upstream

SHIFTED = "".join(f"header {i}\n" for i in range(1, 4))  # three lines added on top: the patch applies with offsets


def branch_made(tmp_path):
    """main moves on (a.py gains three lines on top, b.py and c.py too); the patch is made on branch dev,
    whose a.py changed on its own, so its preimage blobs exist on dev alone."""
    lib = three_file_upstream(tmp_path)
    fork = lib.head()
    git(lib.path, "checkout", "-q", "-b", "dev", fork)
    made_at = lib.commit({"src/a.py": text_with({30: "dev-only change"})}, "a: dev change")
    later = lib.commit({"README": "dev docs\n"}, "dev docs")  # the same files: the stretch ends here
    git(lib.path, "checkout", "-q", "main")
    lib.commit({name: SHIFTED + text_with({}) for name in MONOLITH}, "headers everywhere")
    wanted = {**MONOLITH, "src/a.py": text_with({5: "a fix", 30: "dev-only change"})}
    (tmp_path / "lib.patch").write_bytes(dirty_diff(lib, made_at, wanted))
    return lib, made_at, later


def test_a_patch_made_on_a_branch_is_pinned_on_that_branch_not_where_it_applies_with_offsets(tmp_path, cli, project):
    lib, made_at, later = branch_made(tmp_path)
    text = cli(*import_args(lib, tmp_path / "lib.patch"), "--dry-run")
    assert text.code == 0 and "found on branch dev" in text.out, text.out
    result = cli(*import_args(lib, tmp_path / "lib.patch"), "--json")
    assert result.code == 0, result.out + result.err
    (up,) = result.json["upstreams"]
    base = up["base"]
    assert base["how"] == "index" and base["commit"] == later, base  # the newest of dev's matching stretch
    assert base["found_on"] == {"kind": "branch", "name": "dev"}, base
    assert "on the first-parent line of branch dev" in base["detail"]
    assert up["pin"] == later and up["proven"]
    assert any("the base is on branch dev, not on main's line" in note for note in up["notes"]), up["notes"]
    assert git(lib.path, "merge-base", "--is-ancestor", made_at, later) == ""


def test_a_base_on_the_default_line_names_its_branch(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    made_at = lib.head()
    (tmp_path / "lib.patch").write_bytes(dirty_diff(lib, made_at, MONOLITH))
    result = cli(*import_args(lib, tmp_path / "lib.patch"), "--json")
    assert result.code == 0, result.out + result.err
    (up,) = result.json["upstreams"]
    assert up["base"]["commit"] == made_at and up["base"]["found_on"] == {"kind": "branch", "name": "main"}


def released_on_a_gone_branch(tmp_path, setup: str | None):
    """Release 0.3.1 was made on branch r0.3, which is deleted: only its tag reaches it; main moved on so that the
    patch applies there with offsets only."""
    lib = three_file_upstream(tmp_path)
    if setup is not None:
        lib.commit({"setup.py": setup}, "packaging")
    fork = lib.head()
    git(lib.path, "checkout", "-q", "-b", "r0.3", fork)
    lib.commit({"src/b.py": text_with({25: "release-only change"})}, "b: release fix")
    release = lib.commit({"README": "0.3.1\n"}, "release 0.3.1")
    git(lib.path, "tag", "-a", "-m", "0.3.1", "v0.3.1", release)
    git(lib.path, "checkout", "-q", "main")
    git(lib.path, "branch", "-q", "-D", "r0.3")
    lib.commit({name: SHIFTED + text_with({}) for name in MONOLITH}, "headers everywhere")
    wanted = {**MONOLITH, "src/b.py": text_with({10: "b fix one", 25: "release-only change", 32: "b fix two"})}
    (tmp_path / "lib.patch").write_bytes(dirty_diff(lib, release, wanted))
    return lib, release


def test_an_exact_blob_match_at_a_release_tag_wins_over_offsets_and_writes_version_and_pypi(tmp_path, cli, project):
    setup = "from setuptools import setup\n\n__package_name__ = 'tiny_lib'\nsetup(name=__package_name__)\n"
    lib, release = released_on_a_gone_branch(tmp_path, setup)
    result = cli(*import_args(lib, tmp_path / "lib.patch"), "--json")
    assert result.code == 0, result.out + result.err
    (up,) = result.json["upstreams"]
    assert up["base"]["commit"] == release and up["pin"] == release, up["base"]
    assert up["base"]["found_on"] == {"kind": "tag", "name": "v0.3.1"} and up["base"]["tag"] == "v0.3.1"
    assert any("the pin is release tag v0.3.1: version 0.3.1 and pypi tiny-lib written" in n for n in up["notes"])
    lib_table = tomllib.loads((project.root / "manifests/t.toml").read_text())["upstreams"]["lib"]
    assert lib_table["version"] == "0.3.1" and lib_table["pypi"] == "tiny-lib", lib_table
    assert cli("lint").code == 1  # the manifest loads: only the DEP-3 stubs are left to fill


def test_a_release_tag_pin_without_a_project_name_writes_the_version_and_says_what_to_add(tmp_path, cli, project):
    lib, release = released_on_a_gone_branch(tmp_path, None)
    result = cli(*import_args(lib, tmp_path / "lib.patch"), "--json")
    assert result.code == 0, result.out + result.err
    (up,) = result.json["upstreams"]
    assert any("add `pypi = NAME` for the release fallback" in n for n in up["notes"]), up["notes"]
    lib_table = tomllib.loads((project.root / "manifests/t.toml").read_text())["upstreams"]["lib"]
    assert lib_table["version"] == "0.3.1" and "pypi" not in lib_table


def test_an_imported_monolith_moves_onto_a_newer_release_with_edit_onto_and_its_version_follows(tmp_path, cli, project):
    setup = "from setuptools import setup\nsetup(name='tiny-lib')\n"
    lib, release = released_on_a_gone_branch(tmp_path, setup)
    imported = cli(*import_args(lib, tmp_path / "lib.patch"))
    assert imported.code == 0, imported.out + imported.err
    fill_stubs(project.root)
    # the next release: the branch is made again from the tag, and a.py changes where piece a holds its line
    git(lib.path, "checkout", "-q", "-b", "r0.4", "v0.3.1")
    newer = lib.commit({"src/a.py": text_with({5: "upstream rewrote line 5"})}, "a: rewrite line 5")
    git(lib.path, "tag", "v0.4.0", newer)
    git(lib.path, "checkout", "-q", "main")
    into = tmp_path / "work"
    stopped = edit_onto(cli, lib, into, "v0.4.0")
    assert stopped.code == 1 and "stopped at patch 1 of 3, a" in stopped.out, stopped.out + stopped.err
    (into / "src/a.py").write_text(text_with({5: "a fix"}))
    git(into, "add", "src/a.py")
    moved = resume(cli, into, "continue")
    assert moved.code == 0, moved.out + moved.err
    exported = export(cli, into)
    assert exported.code == 0, exported.out + exported.err
    lib_table = tomllib.loads((project.root / "manifests/t.toml").read_text())["upstreams"]["lib"]
    assert lib_table["commit"] == newer and lib_table["version"] == "0.4.0" and lib_table["pypi"] == "tiny-lib"
    status = cli("status", "--target", "t", "--source", f"lib={lib.path}", "--json")
    assert status.code == 0, status.out + status.err
    assert {p["state"] for u in status.json["upstreams"] for p in u["patches"]} == {"clean"}, status.out
    linted = cli("lint")
    assert linted.code == 0, linted.out + linted.err


def test_a_commit_that_only_a_tag_reaches_is_found_in_its_history_and_named_by_it(tmp_path, cli, project):
    """The patch was made on branch r0.3, later deleted, before a last change there; only tag v0.3.1 reaches the
    commit, and the tag's own files differ from it: found by the one log of every ref, named by the tag."""
    lib = three_file_upstream(tmp_path)
    git(lib.path, "checkout", "-q", "-b", "r0.3", lib.head())
    made_at = lib.commit({"src/b.py": text_with({25: "release-only change"})}, "b: release fix")
    release = lib.commit({"src/c.py": text_with({35: "last release change"})}, "c: last change")
    git(lib.path, "tag", "v0.3.1", release)
    git(lib.path, "checkout", "-q", "main")
    git(lib.path, "branch", "-q", "-D", "r0.3")
    lib.commit({name: SHIFTED + text_with({}) for name in MONOLITH}, "headers everywhere")
    wanted = {**MONOLITH, "src/b.py": text_with({10: "b fix one", 25: "release-only change", 32: "b fix two"})}
    (tmp_path / "lib.patch").write_bytes(dirty_diff(lib, made_at, wanted))
    result = cli(*import_args(lib, tmp_path / "lib.patch"), "--json")
    assert result.code == 0, result.out + result.err
    (up,) = result.json["upstreams"]
    assert up["base"]["commit"] == made_at and up["base"]["how"] == "index", up["base"]
    assert up["base"]["found_on"] == {"kind": "tag", "name": "v0.3.1"} and up["proven"]
    assert "on the first-parent line of tag v0.3.1" in up["base"]["detail"]
