"""The shipped patch set against the real upstream releases on PyPI.

GitHub is out of reach in CI, so these tests read Megatron-Bridge and verl (wheels)
and vllm-ascend (sdist) from the package index, the way `status` falls back when
git is unreachable. MindSpeed and mbridge publish no release at their pins, so
without git they must be reported unavailable, never passed over.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from patchmgr.cli import main

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
RELEASE_UPSTREAMS = ("megatron-bridge", "vllm-ascend", "verl")


@pytest.fixture
def run(release_cache, monkeypatch, capsys):
    monkeypatch.setenv("PATCHMGR_CACHE", str(release_cache))

    def invoke(*args: str) -> tuple[int, dict]:
        capsys.readouterr()
        code = main([*args, "--root", str(ROOT), "--json"])
        out = capsys.readouterr().out
        return code, json.loads(out)

    return invoke


def by_name(doc: dict) -> dict[str, dict]:
    return {u["name"]: u for u in doc["upstreams"]}


def states(upstream: dict) -> dict[str, str]:
    return {p["id"]: p["state"] for p in upstream["patches"]}


def test_release_pins_are_clean(run):
    code, doc = run(
        "status",
        "--target",
        "ascend",
        "--upstream",
        "megatron-bridge",
        "--upstream",
        "vllm-ascend",
        "--upstream",
        "verl",
        "--against",
        "megatron-bridge=0.4.2",
        "--against",
        "vllm-ascend=0.23.0",
        "--against",
        "verl=0.7.0",
    )
    upstreams = by_name(doc)
    assert code == 0, doc
    assert upstreams["megatron-bridge"]["source"].startswith("release megatron-bridge 0.4.2 (PyPI megatron_bridge-")
    assert states(upstreams["megatron-bridge"]) == {
        "automapping-mindspeed-te-column": "clean",
        "thd-bool-attention-mask": "clean",
        "nvtx-megatron-core-ranges": "clean",
    }
    assert upstreams["vllm-ascend"]["source"] == "release vllm-ascend 0.23.0 (PyPI vllm_ascend-0.23.0.tar.gz)"
    assert states(upstreams["vllm-ascend"]) == {"packed-broadcast-wait-source-stream": "clean"}
    assert upstreams["verl"]["source"].startswith("release verl 0.7.0 (PyPI verl-0.7.0")
    assert states(upstreams["verl"]) == {
        "npu-moe-routing-scatter-always": "clean",
        "vision-pos-embed-grid-device": "clean",
    }


def test_megatron_bridge_0_5_0(run):
    code, doc = run(
        "status", "--target", "ascend", "--upstream", "megatron-bridge", "--against", "megatron-bridge=0.5.0"
    )
    (upstream,) = doc["upstreams"]
    assert upstream["source"].startswith("release megatron-bridge 0.5.0")
    assert code == 1
    assert states(upstream) == {
        # 0.5.0 carries upstream #3314 (85323c5), the fix this patch backports.
        "thd-bool-attention-mask": "upstream",
        # 0.5.0 added InferenceLayerNormColumnParallelLinear next to the line the
        # patch extends, so the hunk only places with reduced context; a release
        # has no history for a 3-way merge, so fuzz is what it is here.
        "automapping-mindspeed-te-column": "fuzz",
        # 0.5.0's dist-train code replaced the trailing context of the last
        # range_pop (and added a fifth direct torch.cuda.nvtx call that a refresh
        # must also cover), so the last hunk places only with fuzz.
        "nvtx-megatron-core-ranges": "fuzz",
    }


def test_git_only_upstreams_are_unavailable_not_skipped_without_git(run):
    code, doc = run(
        "status",
        "--target",
        "ascend",
        "--upstream",
        "mindspeed",
        "--upstream",
        "mbridge",
        "--source",
        "mindspeed=https://git.invalid/MindSpeed.git",
        "--source",
        "mbridge=https://git.invalid/mbridge.git",
    )
    assert code == 1
    for upstream in doc["upstreams"]:
        assert upstream["available"] is False
        assert "git.invalid" in upstream["error"]


def test_apply_and_smoke_against_the_releases(run, tmp_path, smoke_extras):
    """The smoke tests pass on the patched releases and every one fails on the unpatched ones.

    verl's tests need transformers 4.57 (the others 5.x): smoke runs them in the environment it builds from the
    manifest's smoke-requirements, so this also proves that environment works, patched and unpatched."""
    into = tmp_path / "build"
    only = [arg for name in RELEASE_UPSTREAMS for arg in ("--upstream", name)]
    code, doc = run("apply", "--target", "ascend", "--into", str(into), *only)
    assert code == 0, doc
    assert doc["action"] == "applied"
    code, doc = run("verify", "--target", "ascend", "--into", str(into), *only)
    assert code == 0, doc

    code, patched = run("smoke", "--target", "ascend", "--into", str(into), "--device", "cpu", *only)
    ran = [r for r in patched["results"] if r["result"] != "skipped"]
    assert code == 0, patched
    assert {r["patch"] for r in ran} == {
        "automapping-mindspeed-te-column",
        "thd-bool-attention-mask",
        "nvtx-megatron-core-ranges",
        "packed-broadcast-wait-source-stream",
        "npu-moe-routing-scatter-always",
        "vision-pos-embed-grid-device",
    }
    assert all(r["result"] == "passed" for r in ran)
    assert {p["patch"]: p["verdict"] for p in patched["patches"]} == dict.fromkeys({r["patch"] for r in ran}, "proven")

    # the upstreams that were not applied prove nothing: smoke says which patches and why, and fails
    code, absent = run(
        "smoke",
        "--target",
        "ascend",
        "--into",
        str(into),
        "--device",
        "cpu",
        "--upstream",
        "mindspeed",
        "--upstream",
        "mbridge",
    )
    assert code == 1, absent
    not_run = {p["patch"]: (p["verdict"], p["reason"]) for p in absent["patches"]}
    assert set(not_run) == {"varlen-honor-no-mask", "vlm-forward-kwargs-passthrough"}
    assert all(verdict == "not-proven" and "is not applied into" in reason for verdict, reason in not_run.values())

    code, unpatched = run("smoke", "--target", "ascend", "--into", str(into), "--device", "cpu", "--unpatched", *only)
    ran = [r for r in unpatched["results"] if r["result"] != "skipped"]
    assert code == 0, unpatched
    assert len(ran) >= 8  # every test of the six patches that runs on the CPU
    # each fails by its assertions (a red result), never by an error that proves nothing
    assert all(r["result"] == "failed" for r in ran), [r for r in ran if r["result"] != "failed"]
    assert {p["verdict"] for p in unpatched["patches"]} == {"proven"} and len(unpatched["patches"]) == 6
    verl_tests = {r["test"] for r in ran if r["upstream"] == "verl"}
    assert len(verl_tests) >= 2, verl_tests  # verl's own tests ran red, in their own environment
