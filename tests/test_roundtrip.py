"""edit / export: patches as commits and back, byte for byte where nothing changed."""

from __future__ import annotations

import os
import subprocess

from support.commands import edit, export
from support.gitrepos import GIT_ENV, git
from support.scenes import lines_with, reworked_series, series_project
from support.snapshot import snapshot

from patchmgr.model.dep3_edit import today


def test_edit_makes_one_commit_per_patch_with_the_patch_message(tmp_path, cli, project, upstream):
    pin = series_project(project, upstream)
    into = tmp_path / "work"
    result = edit(cli, upstream, into)
    assert result.code == 0, result.out + result.err
    assert git(into, "log", "--format=%s", f"{pin}..HEAD").splitlines() == ["Third fix", "Second fix", "First fix"]
    body = git(into, "log", "-1", "--format=%B", "HEAD~2")
    assert "Upstream-Status: Pending" in body
    assert (
        git(into, "log", "-1", "--format=%an <%ae> %aI", "HEAD") == "Upstream Dev <dev@upstream.example> "
        "2026-01-01T00:00:00+00:00"
    )
    assert git(into, "status", "--porcelain") == ""
    assert "patchmgr export" in result.out


def test_export_of_an_unchanged_checkout_changes_no_byte(tmp_path, cli, project, upstream):
    series_project(project, upstream)
    before = snapshot(project.root)
    into = tmp_path / "work"
    assert edit(cli, upstream, into).code == 0
    result = export(cli, into)
    assert result.code == 0, result.out + result.err
    assert "no patch changed" in result.out
    assert snapshot(project.root) == before


def test_regenerating_rewritten_commits_is_byte_identical(tmp_path, cli, project, upstream):
    """Commits that are rewritten (new ids) but carry the same patch export to the same bytes."""
    series_project(project, upstream)
    before = snapshot(project.root)
    into = tmp_path / "work"
    assert edit(cli, upstream, into).code == 0
    # rebase every commit onto itself with another committer date: all ids change, nothing else
    old_ids = git(into, "rev-list", "HEAD~3..HEAD")
    env = {**os.environ, **GIT_ENV, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_COMMITTER_DATE": "2030-05-05T00:00:00+00:00"}
    subprocess.run(["git", "rebase", "-q", "--force-rebase", "HEAD~3"], cwd=into, env=env, check=True)
    assert not set(git(into, "rev-list", "HEAD~3..HEAD").split()) & set(old_ids.split())
    result = export(cli, into)
    assert result.code == 0, result.out + result.err
    assert snapshot(project.root) == before


def test_round_trip_changes_one_patch_and_leaves_the_others(tmp_path, cli, project, upstream):
    series_project(project, upstream)
    files_before = snapshot(project.root / "patches/lib")
    second_before = (project.root / "patches/lib/second.patch").read_bytes()
    into = tmp_path / "work"
    assert edit(cli, upstream, into).code == 0
    # amend the middle patch: an interactive rebase, scripted
    git(into, "checkout", "-q", "HEAD~1")
    (into / "src/mod.py").write_text(lines_with({5: "first", 30: "second, better"}))
    git(into, "commit", "-q", "--amend", "--no-edit", "-a")
    git(into, "cherry-pick", "patchmgr")
    git(into, "branch", "-f", "patchmgr", "HEAD")
    git(into, "checkout", "-q", "patchmgr")
    result = export(cli, into)
    assert result.code == 0, result.out + result.err
    assert "updated   second" in result.out
    files_after = snapshot(project.root / "patches/lib")
    assert files_after["first.patch"] == files_before["first.patch"]
    assert files_after["third.patch"] == files_before["third.patch"]
    second = (project.root / "patches/lib" / "second.patch").read_bytes()
    assert files_after["second.patch"] != files_before["second.patch"]
    assert b"+line 30 is now second, better" not in second and b"+second, better\n" in second
    # message kept, with DEP-3 Last-Update set to today after the last field (the patch changed)
    assert second.split(b"\n---\n")[0] == second_before.split(b"\n---\n")[0] + f"\nLast-Update: {today()}".encode()
    status = cli("status", "--target", "t", "--json", "--source", f"lib={upstream.path}")
    assert [p["state"] for p in status.json["upstreams"][0]["patches"]] == ["clean", "clean", "clean"]
    # exporting again is a no-op
    assert "no patch changed" in export(cli, into).out
    assert snapshot(project.root / "patches/lib") == files_after


def test_export_adds_new_commits_and_drops_removed_ones(tmp_path, cli, project, upstream):
    into = reworked_series(tmp_path, cli, project, upstream, "Add a new module!")
    result = export(cli, into)
    assert result.code == 0, result.out + result.err
    manifest = (project.root / "manifests/t.toml").read_text()
    assert 'patches = ["first", "third", "add-a-new-module"]' in manifest
    assert not (project.root / "patches/lib/second.patch").exists()
    assert (project.root / "patches/lib/add-a-new-module.patch").read_bytes().startswith(b"From 0000000000")


def test_export_refuses_uncommitted_changes(tmp_path, cli, project, upstream):
    series_project(project, upstream)
    into = tmp_path / "work"
    assert edit(cli, upstream, into).code == 0
    (into / "src/mod.py").write_text("changed\n")
    result = export(cli, into)
    assert result.code == 1 and "uncommitted changes" in result.err


def test_edit_refuses_a_folder_in_use(tmp_path, cli, project, upstream):
    series_project(project, upstream)
    into = tmp_path / "work"
    into.mkdir()
    (into / "x").write_text("x")
    result = edit(cli, upstream, into)
    assert result.code == 2 and "not an empty folder" in result.err
