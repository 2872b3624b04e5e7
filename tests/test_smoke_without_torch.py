"""smoke without torch: the cpu lane runs wherever pytest runs; only the device lanes (cuda, npu) need torch.

A pure-Python upstream in a real git repository, its patch and smoke test, applied with ``apply --into``, then
``smoke --python`` on a fresh virtual environment that holds pytest and nothing else (no torch), through the real
CLI and the real device probe. A smoke test that itself needs torch must still fail honestly there.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from support.smoke_scene import DETECTS, LOAD, Scene, verdicts


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory) -> str:
    """A fresh virtual environment with pytest alone (pip's own configuration, as a user's would be)."""
    venv = tmp_path_factory.mktemp("no-torch") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            python,
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "pytest",
        ],
        check=True,
    )
    probe = subprocess.run([python, "-c", "import torch"], capture_output=True, text=True)
    assert probe.returncode != 0 and "torch" in probe.stderr  # the premise: no torch there
    return python


@pytest.fixture
def scene(tmp_path, project, cli) -> Scene:
    return Scene(tmp_path, project, cli)


def smoke(scene: Scene, python: str, *args: str):
    result = scene.cli("smoke", "--target", "t", "--into", str(scene.into), "--python", python, "--json", *args)
    return result.code, result.json


def applied(scene: Scene, test: str) -> None:
    scene.patch()
    scene.manifest()
    scene.smoke_test(test)
    scene.apply()


def test_a_pure_python_upstream_is_proven_without_torch(scene, bare_python):
    applied(scene, DETECTS)
    for device in ("cpu", "auto"):
        code, doc = smoke(scene, bare_python, "--device", device)
        assert code == 0, doc
        assert verdicts(doc)["fix-add"][0] == "proven"
        ran = [r for r in doc["results"] if r["device"] == "cpu"]
        assert [r["result"] for r in ran] == ["passed"], doc["results"]

    # auto: the device lanes say why they did not run, and nothing skipped counts as a proof
    code, doc = smoke(scene, bare_python, "--device", "auto")
    skipped = {r["device"]: r["reason"] for r in doc["results"] if r["result"] == "skipped"}
    assert skipped["cuda"].startswith("cuda: torch is not installed in this environment"), skipped
    assert skipped["npu"].startswith("npu: torch and torch_npu are not installed"), skipped
    assert doc["summary"] == {"proven": 1, "failed": 0, "not-proven": 0}

    # red without the patch, for the bug's own reason (the assertion), on the same interpreter
    code, doc = smoke(scene, bare_python, "--device", "cpu", "--unpatched")
    assert code == 0, doc
    assert verdicts(doc)["fix-add"][0] == "proven"
    (result,) = doc["results"]
    assert result["result"] == "failed" and "assert" in result["reason"] and "5" in result["reason"], result


def test_asking_for_a_device_lane_without_torch_proves_nothing(scene, bare_python):
    applied(scene, DETECTS)
    code, doc = smoke(scene, bare_python, "--device", "cuda")
    assert code == 1, doc
    verdict, reason = verdicts(doc)["fix-add"]
    assert verdict == "not-proven" and "torch is not installed" in reason, doc


# torch reached only at run time (the import scan cannot see it), so the test itself meets the ImportError
NEEDS_TORCH = LOAD + (
    "\n\ndef test_add():\n    import importlib\n    torch = importlib.import_module('torch')\n"
    "    assert torch.tensor(load_calc().add(2, 3)).item() == 5\n"
)


@pytest.mark.parametrize("unpatched", [False, True], ids=["patched", "unpatched"])
def test_a_smoke_test_that_needs_torch_is_not_proven_by_its_import_error(scene, bare_python, unpatched):
    applied(scene, NEEDS_TORCH)
    code, doc = smoke(scene, bare_python, "--device", "cpu", *(["--unpatched"] if unpatched else []))
    assert code == 1, doc
    verdict, reason = verdicts(doc)["fix-add"]
    assert verdict == "not-proven", doc  # neither a pass nor, unpatched, a red result
    (result,) = doc["results"]
    assert result["result"] == "error" and "No module named 'torch'" in result["reason"], result


def test_a_smoke_test_importing_torch_is_refused_before_it_runs(scene, bare_python):
    applied(scene, "import torch\n\n" + DETECTS)
    result = scene.cli("smoke", "--target", "t", "--into", str(scene.into), "--python", bare_python, "--device", "cpu")
    assert result.code == 2, result.out + result.err
    assert "lacks torch (the smoke tests import them); nothing was run" in result.err, result.err
