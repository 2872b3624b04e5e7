"""A patch made on MindSpeed's ``dev`` branch (at fc63de5c, the Ascend image's pin) is imported from its real
history: pinned on ``dev``, never on the unrelated ``master`` commit where it applies with offsets; the imported
series then moves onto a newer ``dev`` commit with ``edit --onto`` and reads clean there. And a vllm-ascend pin
that no tag names gets ``version``/``pypi`` when its PyPI release holds the patch's files as the pin does."""

from __future__ import annotations

import subprocess
import tomllib

import pytest
from support.gitrepos import git
from support.monolith import fill_stubs
from support.real_histories import clone_of, real_history

MADE_AT = "fc63de5c48426dd019c3b3f39e65f5bdf56e4086"
ROPE = "mindspeed/core/fusions/fused_rope.py"
STATE = "mindspeed/core/parallel_state.py"  # at fc63de5c its blob is dev's alone; on master the hunk is 3 lines off
URL = "https://gitcode.com/Ascend/MindSpeed.git"


def dev_patch(tmp_path) -> bytes:
    """What `git diff` in a MindSpeed clone checked out at fc63de5c prints after two one-line fixes."""
    clone = clone_of("mindspeed", tmp_path / "ms")
    git(clone, "checkout", "-q", "--detach", MADE_AT)
    rope = (clone / ROPE).read_text()
    (clone / ROPE).write_text(
        rope.replace("    HAVE_APPLY_ROPE_FUSION = False\n", "    HAVE_APPLY_ROPE_FUSION = False  # npu\n", 1)
    )
    lines = (clone / STATE).read_text().split("\n")
    lines[399] += "  # npu"
    (clone / STATE).write_text("\n".join(lines))
    diff = (git(clone, "diff") + "\n").encode()
    git(clone, "checkout", "-q", "--", ".")
    git(clone, "checkout", "-q", "master")  # the clone's HEAD names its default branch again
    return diff


def test_a_dev_branch_patch_is_pinned_on_dev_and_moves_onto_a_newer_dev_commit(tmp_path, cli, project):
    mirror = real_history("mindspeed")
    (tmp_path / "mindspeed.patch").write_bytes(dev_patch(tmp_path))
    # the source is a working clone, whose only local branch is master: dev is origin/dev there
    source = ("--git", f"mindspeed={URL}", "--source", f"mindspeed={tmp_path / 'ms'}")
    result = cli("import", str(tmp_path / "mindspeed.patch"), "--target", "t", *source, "--json")
    assert result.code == 0, result.out + result.err
    (up,) = result.json["upstreams"]
    base = up["base"]
    assert base["how"] == "index" and base["found_on"] == {"kind": "branch", "name": "dev"}, base
    pin = up["pin"]
    assert pin == base["commit"] and up["proven"]
    # on fc63de5c's line: dev holds the pin, the pin and fc63de5c are one another's history, and the patch's
    # files there are fc63de5c's
    assert git(mirror, "merge-base", "--is-ancestor", pin, "dev") == ""
    assert git(mirror, "merge-base", "--is-ancestor", MADE_AT, pin) == ""
    assert git(mirror, "diff", "--stat", MADE_AT, pin, "--", ROPE, STATE) == ""
    # the trap it used to fall into: on master the patch applies, with offsets
    clone = tmp_path / "ms"
    git(clone, "checkout", "-q", "--detach", "origin/master")
    assert git(clone, "branch", "--list", "dev") == ""  # dev is a remote branch alone there
    checked = subprocess.run(
        ["git", "apply", "--check", "-v", str(tmp_path / "mindspeed.patch")], cwd=clone, capture_output=True, text=True
    )
    assert checked.returncode == 0 and "offset 3 lines" in checked.stderr, checked.stderr

    fill_stubs(project.root)
    newer = git(mirror, "rev-parse", "dev")
    into = tmp_path / "work"
    moved = cli("edit", "--target", "t", "-u", "mindspeed", "--into", str(into), "--onto", newer, "--source", source[3])
    assert moved.code == 0, moved.out + moved.err
    exported = cli("export", "--target", "t", "-u", "mindspeed", "--from", str(into))
    assert exported.code == 0, exported.out + exported.err
    table = tomllib.loads((project.root / "manifests/t.toml").read_text())["upstreams"]["mindspeed"]
    assert table["commit"] == newer and table["patches"] == ["fused-rope", "parallel-state"], table
    status = cli("status", "--target", "t", "--source", source[3], "--json")
    assert status.code == 0, status.out + status.err
    assert {p["state"] for u in status.json["upstreams"] for p in u["patches"]} == {"clean"}, status.out


@pytest.mark.slow
def test_a_pin_whose_files_the_pypi_release_holds_gets_version_and_pypi(
    tmp_path, cli, project, release_cache, monkeypatch
):
    """vllm-ascend three commits before the tip of releases/v0.23.0: no tag names it, but the PyPI release
    0.23.0 (the highest release tag in its history) holds the patched file byte for byte as it does."""
    mirror = real_history("vllm-ascend")
    monkeypatch.setenv("PATCHMGR_CACHE", str(release_cache))  # the release is downloaded once per session
    pin = "4f3d30e6984b6f941addf7042728db19ff576512"
    clone = clone_of("vllm-ascend", tmp_path / "va")
    git(clone, "checkout", "-q", "--detach", pin)
    runner = clone / "vllm_ascend/worker/model_runner_v1.py"
    lines = runner.read_text().split("\n")
    lines[39] += "  # npu"
    runner.write_text("\n".join(lines))
    (tmp_path / "vllm-ascend.patch").write_bytes((git(clone, "diff") + "\n").encode())
    result = cli(
        "import", str(tmp_path / "vllm-ascend.patch"), "--target", "t", "--pin", f"vllm-ascend={pin}",
        "--git", "vllm-ascend=https://github.com/vllm-project/vllm-ascend.git",
        "--source", f"vllm-ascend={mirror}", "--json",
    )  # fmt: skip
    assert result.code == 0, result.out + result.err
    (up,) = result.json["upstreams"]
    assert up["pin"] == pin and up["base"]["how"] == "given" and up["base"]["tag"] is None
    assert any("PyPI release vllm-ascend 0.23.0 holds the patch's files as the pin does" in n for n in up["notes"])
    table = tomllib.loads((project.root / "manifests/t.toml").read_text())["upstreams"]["vllm-ascend"]
    assert table["version"] == "0.23.0" and table["pypi"] == "vllm-ascend", table
