"""SIGKILL at every step of bump and refresh: the project's patch files and manifest are one transaction.
After each kill, a --dry-run recovers first and says what it did; the project must then be byte for byte
the one before the run or exactly the one an uninterrupted run leaves."""

from __future__ import annotations

import pytest
from support.commands import move_args, status_of
from support.kill_points import kill_project_command
from support.scenes import lines_with, setup

pytestmark = pytest.mark.slow

SPREAD = {"one": 6, "two": 13, "three": 28, "four": 35}  # one line each; their contexts never touch


def offset_patches(project, upstream, carried: bool) -> str:
    """Patches on lines far apart of src/mod.py; upstream then adds 3 lines on top, so every one is offset.

    ``carried``: a patch ``fix`` (line 20) sits mid-series, and upstream first takes it in a commit
    with its very patch-id, so a bump drops it (its file removed, the series line rewritten)."""
    pin = upstream.head()
    patches = {
        pid: upstream.make_patch(pin, {"src/mod.py": lines_with({line: f"{pid} {line}"})}, pid.title())
        for pid, line in SPREAD.items()
    }
    fixed = {20: "fixed 20"} if carried else {}
    if carried:
        fix = upstream.make_patch(pin, {"src/mod.py": lines_with(fixed)}, "Fix")
        patches = {
            "one": patches["one"],
            "two": patches["two"],
            "fix": fix,
            "three": patches["three"],
            "four": patches["four"],
        }
    else:
        patches["five"] = upstream.make_patch(pin, {"src/mod.py": lines_with({20: "five 20"})}, "Five")
    setup(project, upstream, patches)
    if carried:
        upstream.commit({"src/mod.py": lines_with(fixed)}, "take the vendor fix (#31)")
    upstream.commit({"src/mod.py": lines_with(fixed, insert_top=3)}, "upstream adds 3 lines on top")
    return pin


BUMP = ["bump", "--target", "t", "--upstream", "lib", "--to", "main"]


def test_kill_bump(cli, project, upstream):
    """Refreshes 5 offset patches and moves the pin and the version: 6 files, one transaction."""
    offset_patches(project, upstream, carried=False)
    manifest = project.root / "manifests/t.toml"
    manifest.write_text(manifest.read_text().replace("[upstreams.lib]", '[upstreams.lib]\nversion = "1.0"'))
    args = [*BUMP, "--version", "1.1", "--source", f"lib={upstream.path}", "--root", str(project.root)]
    counts = kill_project_command("bump", "test_kill_bump", cli, project, args, [*args[:-2], "--dry-run"])
    assert status_of(cli, upstream) == [(pid, "clean") for pid in ("one", "two", "three", "four", "five")]
    text = manifest.read_text()
    assert upstream.head() in text and 'version = "1.1"' in text
    assert counts["kill_points"] == 6 * 3 + 2  # 6 files saved, prepared, 6 written (temp, rename), committed


def test_bump_that_drops_a_patch_killed_at_every_step(cli, project, upstream):
    """Refreshes 4 offset patches, drops 1 that upstream took (its file removed) and moves the pin."""
    offset_patches(project, upstream, carried=True)
    args = [*BUMP, "--source", f"lib={upstream.path}", "--root", str(project.root)]
    kill_project_command(
        "bump, dropping a patch",
        "test_bump_that_drops_a_patch_killed_at_every_step",
        cli,
        project,
        args,
        [*args[:-2], "--dry-run"],
    )
    assert not (project.root / "patches/lib/fix.patch").exists()
    assert 'patches = ["one", "two", "three", "four"]' in (project.root / "manifests/t.toml").read_text()


def test_kill_refresh(cli, project, upstream):
    offset_patches(project, upstream, carried=False)
    args = move_args("refresh", upstream, "--root", str(project.root))
    counts = kill_project_command("refresh", "test_kill_refresh", cli, project, args, [*args[:-2], "--dry-run"])
    assert status_of(cli, upstream) == [(pid, "clean") for pid in ("one", "two", "three", "four", "five")]
    assert counts["kill_points"] == 5 * 3 + 2  # 5 files saved, prepared, 5 written (temp, rename), committed
