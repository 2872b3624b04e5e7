"""refresh and bump: --allow-fuzz apart from --allow-three-way, and DEP-3 Last-Update kept current on every
patch they rewrite; on real git repositories through the real CLI."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.scenes import lines_with, pin_fixes

FIELDS_DATED = "Origin: vendor\nUpstream-Status: Pending\nLast-Update: 2020-01-01"


def fuzz_scene(project, upstream) -> Path:
    pin_fixes(project, upstream, {"fix": {20: "fixed 20"}}, fields=FIELDS_DATED)
    upstream.commit({"src/mod.py": lines_with({17: "upstream changed 17"})}, "touch outer context")
    return project.root / "patches/lib/fix.patch"


def three_way_scene(project, upstream) -> Path:
    pin_fixes(project, upstream, {"fix": {20: "fixed 20", 24: "fixed 24"}}, fields=FIELDS_DATED)
    upstream.commit({"src/mod.py": lines_with({22: "upstream changed 22"})}, "touch inner context")
    return project.root / "patches/lib/fix.patch"


def maintain(cli, upstream, command, *extra):
    return cli(
        command, "--target", "t", "--upstream", "lib", "--to", "main", "--source", f"lib={upstream.path}", *extra
    )


def today() -> str:
    from patchmgr.model.dep3_edit import today as utc_today

    return utc_today()


@pytest.mark.parametrize("command", ["refresh", "bump"])
def test_fuzz_needs_allow_fuzz_and_three_way_needs_allow_three_way(cli, project, upstream, command):
    path = fuzz_scene(project, upstream)
    before = path.read_bytes()
    manifest = (project.root / "manifests/t.toml").read_bytes()
    refused = maintain(cli, upstream, command, "--allow-three-way")
    assert refused.code == 1 and "--allow-fuzz" in refused.out
    assert path.read_bytes() == before and (project.root / "manifests/t.toml").read_bytes() == manifest
    dry = maintain(cli, upstream, command, "--allow-fuzz", "--dry-run")
    assert dry.code == 0, dry.out
    assert "fix (now)" in dry.out and "fix (refreshed)" in dry.out and "+ upstream changed 17" in dry.out
    assert path.read_bytes() == before
    done = maintain(cli, upstream, command, "--allow-fuzz")
    assert done.code == 0, done.out
    written = "rewrote 1 patch" if command == "refresh" else "refreshed fix (fuzz)"
    assert done.out.index("fix (refreshed)") < done.out.index(written)  # old against new, shown before writing
    after = path.read_bytes()
    assert f"Last-Update: {today()}\n".encode() in after and b"2020-01-01" not in after
    assert after.count(b"Last-Update:") == 1
    # every other byte of the message is kept
    assert after[: after.index(b"Last-Update:")] == before[: before.index(b"Last-Update:")]


@pytest.mark.parametrize("command", ["refresh", "bump"])
def test_three_way_is_refused_with_allow_fuzz_alone(cli, project, upstream, command):
    path = three_way_scene(project, upstream)
    before = path.read_bytes()
    refused = maintain(cli, upstream, command, "--allow-fuzz")
    assert refused.code == 1 and "--allow-three-way" in refused.out and path.read_bytes() == before
    done = maintain(cli, upstream, command, "--allow-three-way", "--json")
    assert done.code == 0, done.out
    (patch,) = done.json["patches"]
    assert patch["state"] == "three-way" and patch["interdiff"]  # old against new, in JSON too
    assert f"Last-Update: {today()}\n".encode() in path.read_bytes()


def test_bump_of_an_offset_patch_updates_its_last_update(cli, project, upstream):
    path = project.root / "patches/lib/fix.patch"
    pin_fixes(project, upstream, {"fix": {20: "fixed 20"}}, fields=FIELDS_DATED)
    upstream.commit({"src/mod.py": lines_with({}, insert_top=3)}, "upstream adds 3 lines on top")
    result = maintain(cli, upstream, "bump")
    assert result.code == 0, result.out
    assert f"Last-Update: {today()}\n".encode() in path.read_bytes()


def test_help_texts_say_which_option_allows_what(cli):
    from typer.testing import CliRunner

    from patchmgr.cli.app import app

    for command in ("refresh", "bump"):
        text = " ".join(CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "400"}).output.split())
        assert "--allow-fuzz" in text and "apply only with fuzz" in text
        assert "need a 3-way merge (not fuzz" in text
