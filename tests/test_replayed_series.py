"""Every verdict of a series is made against the tree that series will have (issue 39, item 1): a patch that
evidence names ``upstream`` is one ``bump`` drops, so it contributes nothing to the check of the patches after it,
even where the engine could merge it in (``three-way``). ``status --against``, ``bump``, ``refresh`` and
``matrix`` agree with git replaying the series at the ref without the dropped patch."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from support.commands import bump, matrix, move_args
from support.gitrepos import git, git_bytes, make_series
from support.real_histories import clone_of
from support.scenes import lines_with


def carried_then_partly_reverted(project, upstream) -> str:
    """Series ``first`` (line 5), ``carried`` (lines 10 and 30) and ``after`` (line 30 again, on top of
    ``carried``), pinned at the head. Upstream then commits ``carried``'s own change (its patch-id) and later
    takes back its line 30: at main, ``carried`` three-way merges (its line 10 is there, line 30 is not) and reads
    upstream, while ``after`` needs the line 30 that only ``carried`` adds. Returns the carrying commit."""
    pin = upstream.head()
    mails = make_series(
        upstream,
        pin,
        [
            ({"src/mod.py": lines_with({5: "first"})}, "First fix"),
            ({"src/mod.py": lines_with({5: "first", 10: "carried 10", 30: "carried 30"})}, "Carried fix"),
            ({"src/mod.py": lines_with({5: "first", 10: "carried 10", 30: "after 30"})}, "After fix"),
        ],
    )
    for patch_id, data in zip(("first", "carried", "after"), mails, strict=True):
        project.add_patch("lib", patch_id, data)
    spec = {"git": "https://example.invalid/lib.git", "commit": pin, "patches": ["first", "carried", "after"]}
    project.manifest("t", {"lib": spec})
    carrier = upstream.commit({"src/mod.py": lines_with({10: "carried 10", 30: "carried 30"})}, "Carried fix")
    upstream.commit({"src/mod.py": lines_with({10: "carried 10"})}, "take line 30 back")
    return carrier


def git_replay(tmp_path, repo: Path, patches: Path, ref: str, ids: list[str]) -> dict[str, bool]:
    """Whether ``git apply --3way`` applies each patch (``patches``/ID.patch) at ``ref`` of ``repo``, each on top
    of the ones before it: the oracle."""
    work = tmp_path / "replay"
    shutil.rmtree(work, ignore_errors=True)
    git(tmp_path, "clone", "-q", "--shared", str(repo), str(work))
    git(work, "checkout", "-q", ref)
    applied = {}
    for patch_id in ids:
        patch = patches / f"{patch_id}.patch"
        run = subprocess.run(["git", "apply", "--3way", str(patch)], cwd=work, capture_output=True)
        applied[patch_id] = run.returncode == 0
        if run.returncode == 0:
            git(work, "commit", "-q", "-am", patch_id)
        else:
            git(work, "reset", "-q", "--hard")
    return applied


def states(cli, upstream, *where: str) -> dict[str, str]:
    result = cli("status", "--target", "t", "--json", "--source", f"lib={upstream.path}", *where)
    return {p["id"]: p["state"] for p in result.json["upstreams"][0]["patches"]}


def test_status_against_checks_the_later_patches_without_the_carried_one(tmp_path, cli, project, upstream):
    carried_then_partly_reverted(project, upstream)
    found = states(cli, upstream, "--against", "lib=main")
    assert found == {"first": "clean", "carried": "upstream", "after": "conflict"}
    # git, replaying the series at main without the patch upstream carries, agrees
    assert git_replay(tmp_path, upstream.path, project.root / "patches" / "lib", "main", ["first", "after"]) == {
        "first": True,
        "after": False,
    }


def test_bump_refuses_where_the_series_it_would_write_does_not_apply(cli, project, upstream):
    carried_then_partly_reverted(project, upstream)
    manifest = (project.root / "manifests" / "t.toml").read_bytes()
    result = bump(cli, upstream)
    assert result.code != 0, result.out + result.err
    assert "after" in result.out + result.err
    assert (project.root / "manifests" / "t.toml").read_bytes() == manifest  # the pin stays
    assert (project.root / "patches" / "lib" / "carried.patch").exists()


def test_refresh_does_not_rewrite_a_patch_against_bytes_the_series_will_not_have(cli, project, upstream):
    carried_then_partly_reverted(project, upstream)
    after = project.root / "patches" / "lib" / "after.patch"
    before = after.read_bytes()
    result = cli(*move_args("refresh", upstream))
    assert result.code != 0, result.out + result.err
    assert after.read_bytes() == before


def test_matrix_column_reads_as_status_against_it(cli, project, upstream):
    carried_then_partly_reverted(project, upstream)
    result = matrix(cli, upstream, "--refs", "main", "--json")
    rows = result.json["upstreams"][0]["patches"]
    column = {row["id"]: next(c["state"] for c in row["cells"] if c["column"] == "main") for row in rows}
    assert column == {"first": "clean", "carried": "upstream", "after": "conflict"}


MEGATRON_PIN = "2490e0c08af1772a247115e43c0a8295e10cc4de"


@pytest.mark.slow
def test_megatron_commits_as_a_series_agree_with_git_replaying_them(cli, project, tmp_path):
    """The issue's reproduction on Megatron-LM's real history: the 165th, 176th and 207th first-parent commits
    after 2490e0c08af1, as patches pinned there. At core_v0.16.0 the middle one is carried (its patch-id) but
    merges in only three-way; the last one does not apply without it, as git replaying the series says. So the
    bump to that tag refuses, and nothing it would write is written."""
    clone = clone_of("megatron-lm", tmp_path / "megatron")
    line = git(clone, "rev-list", "--reverse", "--first-parent", f"{MEGATRON_PIN}..origin/HEAD").split()
    ids = []
    for number in (165, 176, 207):
        data = git_bytes(clone, "format-patch", "-1", "--stdout", "--zero-commit", "--no-signature", line[number - 1])
        project.add_patch("megatron-lm", f"p{number}", data)
        ids.append(f"p{number}")
    spec = {"git": "https://github.com/NVIDIA/Megatron-LM.git", "commit": MEGATRON_PIN, "patches": ids}
    project.manifest("t", {"megatron-lm": spec})
    source = ["--source", f"megatron-lm={clone}"]
    found = cli("status", "--target", "t", "--json", *source, "--against", "megatron-lm=core_v0.16.0")
    states = {p["id"]: p["state"] for p in found.json["upstreams"][0]["patches"]}
    assert states["p176"] == "upstream", states
    kept = [patch_id for patch_id in ids if states[patch_id] != "upstream"]
    replayed = git_replay(tmp_path, clone, project.root / "patches" / "megatron-lm", "core_v0.16.0", kept)
    assert {patch_id: states[patch_id] in ("clean", "offset") for patch_id in kept} == replayed
    assert replayed == {"p165": True, "p207": False}
    manifest = (project.root / "manifests" / "t.toml").read_bytes()
    moved = cli("bump", "--target", "t", "--upstream", "megatron-lm", "--to", "core_v0.16.0", *source)
    assert moved.code != 0 and "p207" in moved.out + moved.err, moved.out + moved.err
    assert (project.root / "manifests" / "t.toml").read_bytes() == manifest
