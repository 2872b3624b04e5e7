"""import of monoliths that change one file twice, built from the real upstream histories at their pins:
MindSpeed with a second diff of fused_rope.py stacked on the first, vllm-ascend v0.23.0 with two diffs of
worker.py against the same preimage. Each imports, is proven, and `apply` gives the files `git apply` of
the monolith gives. Needs PATCHMGR_TEST_MIRRORS (skipped with the reason where a machine has none)."""

from __future__ import annotations

from pathlib import Path

from support.gitrepos import git
from support.monolith import applied_monolith, same_files, stacked_diff
from support.real_histories import clone_of, edited

MINDSPEED_PIN = "fc63de5c48426dd019c3b3f39e65f5bdf56e4086"  # on MindSpeed's dev branch
VLLM_ASCEND_PIN = "5cb98caaadeff42b5b62b996e34bb2aaa29d20fd"  # v0.23.0


def imported_and_applied(cli, tmp_path: Path, name: str, clone: Path, pin: str, mono: bytes, paths: list[str]):
    """Import ``mono`` for upstream ``name`` at ``pin``; check it is proven and that `apply` gives the files
    `git apply` of ``mono`` gives there. The import's JSON upstream."""
    patch = tmp_path / f"{name}.patch"
    patch.write_bytes(mono)
    source = ["--source", f"{name}={clone}"]
    result = cli(
        "import", str(patch), "--target", "t", "--git", f"{name}=https://example.invalid/{name}.git",
        "--pin", f"{name}={pin}", *source, "--json",
    )  # fmt: skip
    assert result.code == 0, result.out + result.err
    (up,) = result.json["upstreams"]
    assert up["proven"] and up["pin"] == pin and all(p["imported"] for p in up["pieces"]), up
    into = tmp_path / "build"
    applied = cli("apply", "--target", "t", "--into", str(into), *source)
    assert applied.code == 0, applied.out + applied.err
    reference = applied_monolith(clone, pin, mono, tmp_path / "ref")
    same_files(into / name, reference, [*paths, "README.md"])
    return up


def test_mindspeed_with_a_stacked_second_diff_of_fused_rope(tmp_path, cli, project):
    clone = clone_of("mindspeed", tmp_path / "MindSpeed")
    rope, feature = "mindspeed/core/fusions/fused_rope.py", "mindspeed/features_manager/fusions/fused_rope.py"
    scale = ("    _mscale = mscale\n", "    _mscale = float(mscale)\n")
    first = {
        rope: edited(clone, MINDSPEED_PIN, rope, scale),
        feature: edited(clone, MINDSPEED_PIN, feature, ('help="Use fused rotary-pos-emb."', 'help="Fused RoPE."')),
    }
    # the second edit, made after `git add` of the first: the line next to it, so its context holds the first
    yarn = (
        '    if hasattr(args, "rope_scaling_type") and args.rope_scaling_type == "yarn":\n',
        '    if getattr(args, "rope_scaling_type", None) == "yarn":\n',
    )
    second = {rope: edited(clone, MINDSPEED_PIN, rope, scale, yarn)}
    mono = stacked_diff(clone, MINDSPEED_PIN, {}, first) + stacked_diff(clone, MINDSPEED_PIN, first, second)
    assert mono.count(f"diff --git a/{rope} b/{rope}".encode()) == 2
    up = imported_and_applied(cli, tmp_path, "mindspeed", clone, MINDSPEED_PIN, mono, [rope, feature])
    assert [(p["id"], p["diffs"][0]["diff"], p["diffs"][0]["of"]) for p in up["pieces"]] == [
        ("fused-rope", 1, 2),
        ("fused-rope-2", 1, 1),  # the feature's fused_rope.py: another file of the same name
        ("fused-rope-diff-2", 2, 2),
    ]
    assert any(f"{rope} has 2 diffs" in n and "diff 2 is stacked on diff 1" in n for n in up["notes"]), up["notes"]
    assert not any("edited after git made it" in n for n in up["notes"])
    assert up["base"]["how"] == "given"
    piece = (project.root / "patches/mindspeed/fused-rope-diff-2.patch").read_text()
    assert (
        '+    if getattr(args, "rope_scaling_type", None) == "yarn":' in piece and " _mscale = float(mscale)" in piece
    )


def test_vllm_ascend_with_two_diffs_of_worker_against_one_preimage(tmp_path, cli, project):
    clone = clone_of("vllm-ascend", tmp_path / "vllm-ascend")
    worker, offload = "vllm_ascend/worker/worker.py", "vllm_ascend/simple_kv_offload/worker.py"
    first = {
        worker: edited(
            clone,
            VLLM_ASCEND_PIN,
            worker,
            (
                'falling back to v1 model runner.")\n',
                'falling back to v1 model runner.")\n            self.use_v2_model_runner = False\n',
            ),
        ),
        offload: git(clone, "show", f"{VLLM_ASCEND_PIN}:{offload}") + "\n# patched for the image\n",
    }
    second = {
        worker: edited(
            clone,
            VLLM_ASCEND_PIN,
            worker,
            ("is in developing, some features doesn't work", "is being developed, some features do not work"),
        )
    }
    mono = stacked_diff(clone, VLLM_ASCEND_PIN, {}, first) + stacked_diff(clone, VLLM_ASCEND_PIN, {}, second)
    assert mono.count(f"diff --git a/{worker} b/{worker}".encode()) == 2
    up = imported_and_applied(cli, tmp_path, "vllm-ascend", clone, VLLM_ASCEND_PIN, mono, [worker, offload])
    assert [p["takes"] for p in up["pieces"]] == [  # git diff names the files in path order
        offload,
        f"{worker} diff 1 of 2, hunk #1 of 2",
        f"{worker} diff 2 of 2, hunk #2 of 2",
    ]
    assert any("diff 2 was made against the same preimage as diff 1" in n for n in up["notes"]), up["notes"]
    built = (tmp_path / "build/vllm-ascend" / worker).read_text()
    assert "self.use_v2_model_runner = False" in built and "is being developed" in built
