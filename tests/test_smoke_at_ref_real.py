"""issue 28's Done-when on the real Megatron-Bridge history: before the README's bump journey moves the pin
(v0.4.2 -> v0.5.0), ``status --against megatron-bridge=v0.5.0 --smoke`` and ``bump --to v0.5.0 --smoke`` say that the
fused-norm part of the AutoMapping patch is partly upstream (v0.5.0 matches fused-norm classes by substring: its
fused-norm tests pass there without the patch), naming those tests; the THD mask patch, carried upstream, is
upstream by smoke; nothing of the project changes. Needs the real history (PATCHMGR_TEST_MIRRORS) and the smoke
tests' packages (torch, megatron-core): it skips without them, as in CI."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.real_histories import real_history
from support.snapshot import snapshot

ROOT = Path(__file__).resolve().parent.parent
FUSED_NORM = (
    "test_mindspeed_class_splits_like_megatron[MindSpeedTELayerNormColumnParallelLinear]",
    "test_linear_qkv_tp2_round_trip",
)

pytestmark = pytest.mark.slow


@pytest.fixture
def journey(tmp_path):
    mirror = real_history("megatron-bridge")
    for module in ("torch", "megatron.core"):
        if importlib.util.find_spec(module.split(".")[0]) is None:
            pytest.skip(f"the Megatron-Bridge smoke tests import {module}, which this environment lacks")
    project = tmp_path / "project"
    for name in ("manifests", "patches", "tests/smoke"):
        shutil.copytree(ROOT / name, project / name, ignore=shutil.ignore_patterns("__pycache__"))
    cache = Path(os.environ.get("PATCHMGR_CACHE") or tmp_path / "cache")

    def patchmgr(*args: str) -> tuple[int, dict]:
        env = {**os.environ, "PATCHMGR_CACHE": str(cache), "PYTHONPATH": str(ROOT)}
        done = subprocess.run(
            [sys.executable, "-m", "patchmgr", *args, "--source", f"megatron-bridge={mirror}", "--json"],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=1800,
        )
        return done.returncode, json.loads(done.stdout)

    return project, patchmgr


def _verdicts(doc: dict) -> dict[str, dict]:
    return {p["patch"]: p for p in doc["smoke"]["patches"]}


def test_status_and_bump_smoke_name_the_fused_norm_part_partly_upstream_before_the_pin_moves(journey):
    project, patchmgr = journey
    before = snapshot(project)
    code, doc = patchmgr(
        "status", "--target", "ascend", "-u", "megatron-bridge", "--against", "megatron-bridge=v0.5.0", "--smoke"
    )
    assert code == 1  # the series needs fuzz at v0.5.0 and a guard breaks there, as status without --smoke says
    found = _verdicts(doc)
    automapping = found["automapping-mindspeed-te-column"]
    assert automapping["verdict"] == "partly-upstream", automapping
    assert tuple(automapping["passing_unpatched"]) == FUSED_NORM
    assert all(test in automapping["reason"] for test in FUSED_NORM) and "review the patch" in automapping["reason"]
    assert found["thd-bool-attention-mask"]["verdict"] == "upstream-by-smoke"

    code, doc = patchmgr("bump", "--target", "ascend", "-u", "megatron-bridge", "--to", "v0.5.0", "--smoke")
    assert code == 1 and doc["action"] == "refused"  # the pin does not move
    automapping = _verdicts(doc)["automapping-mindspeed-te-column"]
    assert automapping["verdict"] == "partly-upstream" and tuple(automapping["passing_unpatched"]) == FUSED_NORM
    assert snapshot(project) == before
