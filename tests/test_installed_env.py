"""apply/verify/smoke/revert --python on a real installed wheel: Megatron-Bridge 0.4.2 from PyPI.

The environment is a fresh virtual environment with the real wheel installed the
way users install it on Python 3.11 (--no-deps --ignore-requires-python). Its
heavy dependencies (torch, megatron-core) are borrowed from the test runner's
environment through a .pth file instead of being installed a second time.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import json
import os
import site
import subprocess
import sys
from pathlib import Path

import pytest
from support.reliability import install_wheels, site_packages
from support.snapshot import snapshot

from patchmgr.cli import main

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
ONLY = ("--upstream", "megatron-bridge")


def apply_in_a_process(python: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``patchmgr apply --target ascend --python PYTHON`` in a process of its own (a kill takes only it)."""
    return subprocess.run(
        [sys.executable, "-m", "patchmgr", "apply", "--target", "ascend", "--python", str(python), *extra]
        + ["--root", str(ROOT)],
        env=env,
        capture_output=True,
        text=True,
    )


@pytest.fixture(scope="module")
def wheel(tmp_path_factory, release_cache) -> Path:
    """The real wheel, downloaded once; each test installs it into an environment of its own."""
    folder = tmp_path_factory.mktemp("wheels")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            "--ignore-requires-python",
            "--only-binary=:all:",
            "-d",
            str(folder),
            "megatron-bridge==0.4.2",
        ],
        check=True,
    )
    return next(folder.glob("megatron_bridge-0.4.2-*.whl"))


@pytest.fixture
def env(tmp_path, wheel, smoke_extras):
    """A fresh environment per test, so one test's failure cannot leave the next a half-patched wheel."""
    venv = install_wheels(tmp_path, [wheel], "--ignore-requires-python")
    python, site_dir = venv / "bin" / "python", site_packages(venv)
    (site_dir / "zz-borrowed-deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return python, site_dir


@pytest.fixture
def run(capsys, release_cache, monkeypatch):
    monkeypatch.setenv("PATCHMGR_CACHE", str(release_cache))

    def invoke(*args: str) -> tuple[int, dict]:
        capsys.readouterr()
        code = main([*args, "--root", str(ROOT), "--json"])
        return code, json.loads(capsys.readouterr().out)

    return invoke


def record_rows(site_dir: Path) -> list[list[str]]:
    record = next(site_dir.glob("megatron_bridge-0.4.2.dist-info")) / "RECORD"
    return [row for row in csv.reader(record.read_text().splitlines()) if row]


def files_match_record(site_dir: Path) -> list[str]:
    """The files whose bytes differ from the hash the wheel's RECORD gives them."""
    wrong = []
    for path, digest, _size in record_rows(site_dir):
        if not digest:
            continue
        data = (site_dir / path).read_bytes()
        actual = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        if actual != digest:
            wrong.append(path)
    return wrong


def installed(site_dir: Path) -> dict[str, str]:
    """Hashes of everything under the models the patches touch, and of RECORD."""
    record = next(site_dir.glob("megatron_bridge-0.4.2.dist-info")) / "RECORD"
    return snapshot(site_dir / "megatron" / "bridge" / "models", record)


def test_apply_verify_smoke_revert(env, run):
    python, site_dir = env
    before = installed(site_dir)
    assert files_match_record(site_dir) == []

    code, doc = run("apply", "--target", "ascend", "--python", str(python), *ONLY)
    assert code == 0, doc
    assert doc["action"] == "applied"
    assert any("match the pin" in note for u in doc["upstreams"] for note in u["notes"])
    patched = installed(site_dir)
    assert patched != before
    # pip's view stays consistent: RECORD carries the new hashes
    assert files_match_record(site_dir) == []
    stale = site_dir / "megatron/bridge/models/conversion/__pycache__"
    assert not list(stale.glob("param_mapping.*.pyc"))

    code, doc = run("verify", "--target", "ascend", "--python", str(python), *ONLY)
    assert code == 0, doc
    code, doc = run("apply", "--target", "ascend", "--python", str(python), *ONLY)
    assert code == 0 and doc["action"] == "already-applied"

    code, smoke = run("smoke", "--target", "ascend", "--python", str(python), "--device", "cpu", *ONLY)
    ran = [r for r in smoke["results"] if r["result"] != "skipped"]
    assert code == 0, smoke
    assert len(ran) >= 5 and all(r["result"] == "passed" for r in ran)
    code, smoke = run("smoke", "--target", "ascend", "--python", str(python), "--device", "cpu", "--unpatched", *ONLY)
    ran = [r for r in smoke["results"] if r["result"] != "skipped"]
    assert code == 0, smoke
    assert len(ran) >= 5 and all(r["result"] == "failed" for r in ran)
    assert {p["verdict"] for p in smoke["patches"]} == {"proven"} and len(smoke["patches"]) == 3
    assert installed(site_dir) == patched  # the unpatched run worked on a copy

    (site_dir / "megatron/bridge/models/qwen_vl/modelling_qwen3_vl/utils.py").write_text("# hand edit\n")
    code, doc = run("verify", "--target", "ascend", "--python", str(python), *ONLY)
    assert code == 1 and any("utils.py" in p for p in doc["problems"])

    # the hand edit would be lost: refused with one error, nothing changed
    assert main(["revert", "--target", "ascend", "--python", str(python), *ONLY, "--root", str(ROOT)]) == 1
    code, doc = run("revert", "--target", "ascend", "--python", str(python), "--force", *ONLY)
    assert code == 0 and doc["action"] == "reverted"
    assert any("saved 1 file" in note and "utils.py" in note for note in doc["notes"]), doc["notes"]
    assert installed(site_dir) == {k: v for k, v in before.items()}
    assert files_match_record(site_dir) == []
    code, doc = run("revert", "--target", "ascend", "--python", str(python), *ONLY)
    assert doc["action"] == "nothing-to-revert"


def test_interrupted_apply_is_all_or_nothing(env, run, tmp_path):
    """SIGKILL at every other step of apply: afterwards the wheel is fully patched or untouched, never half.

    Steps are the journal's durable writes (saving originals, the prepared mark,
    each file, the commit mark); every second one keeps CI fast and still kills
    in each phase."""
    python, site_dir = env
    before = installed(site_dir)
    assert run("apply", "--target", "ascend", "--python", str(python), *ONLY)[0] == 0
    patched = installed(site_dir)
    assert run("revert", "--target", "ascend", "--python", str(python), *ONLY)[0] == 0
    outcomes = {"patched": 0, "untouched": 0}
    step = 1
    while True:
        done = apply_in_a_process(python, *ONLY, env={**os.environ, "PATCHMGR_FAULT_KILL_AT": str(step)})
        killed = done.returncode == -9
        code, doc = run("verify", "--target", "ascend", "--python", str(python), *ONLY)  # recovers first
        state = installed(site_dir)
        assert state in (before, patched), f"half-patched after a kill at step {step}"
        outcomes["patched" if state == patched else "untouched"] += 1
        if state == patched:
            assert code == 0, doc
        assert run("revert", "--target", "ascend", "--python", str(python), *ONLY)[0] == 0
        assert installed(site_dir) == before
        if not killed:
            break
        step += 2
    assert step > 10 and outcomes["untouched"] >= 1 and outcomes["patched"] >= 1, outcomes


def test_missing_or_wrong_version_is_named(tmp_path, run):
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", str(bare)], check=True)
    capture = apply_in_a_process(bare / "bin" / "python")
    assert capture.returncode == 2  # bad input: --python names an environment without the pinned distributions
    assert "megatron-bridge is not installed (wanted 0.4.2)" in capture.stderr
    assert "vllm-ascend is not installed (wanted 0.23.0)" in capture.stderr
    assert "Traceback" not in capture.stderr
