"""The real upstream histories (MindSpeed, vllm-ascend, …) for tests that must walk them: git snapshots
in a folder named by ``PATCHMGR_TEST_MIRRORS`` (one ``<owner>+<name>/repo`` bare repository per upstream,
as the workplace's fetch lays them out). CI cannot reach GitHub, so there the tests that need them skip
and say why; a test that can use a PyPI release instead does so (tests/test_real_upstreams.py)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

MIRRORS_ENV = "PATCHMGR_TEST_MIRRORS"

# upstream name (as the ascend manifest spells it) -> the snapshot's folder
SNAPSHOTS = {
    "megatron-bridge": "NVIDIA-NeMo+Megatron-Bridge",
    "mindspeed": "Ascend+MindSpeed",
    "vllm-ascend": "vllm-project+vllm-ascend",
    "mbridge": "ISEEKYAN+mbridge",
    "verl": "volcengine+verl",
    "megatron-lm": "NVIDIA+Megatron-LM",  # tags core_v0.x.y (core_v0.15.0rc4), each on a release branch of its own
    "openssh": "openssh+openssh-portable",  # tags V_9_9_P2, V_10_0_P1, each on a release branch of its own
}


def mirror_of(name: str) -> Path | None:
    """The bare repository holding ``name``'s real history, or None when this machine has none."""
    folder = os.environ.get(MIRRORS_ENV)
    if not folder:
        return None
    repo = Path(folder).expanduser() / SNAPSHOTS[name] / "repo"
    return repo if (repo / "HEAD").is_file() else None


def real_history(name: str) -> Path:
    """``name``'s real history, or skip the calling test with the reason (no snapshot on this machine)."""
    repo = mirror_of(name)
    if repo is None:
        pytest.skip(f"needs the real {name} history: set {MIRRORS_ENV} to a folder of git snapshots (CI has no GitHub)")
    return repo


def clone_of(name: str, into: Path) -> Path:
    """A working clone of ``name``'s real history that shares the snapshot's objects (fast, and the test may
    commit to it without touching the snapshot). Every branch of the snapshot is a remote branch there."""
    source = real_history(name)
    subprocess.run(
        ["git", "clone", "-q", "--shared", "--no-checkout", str(source), str(into)], check=True, capture_output=True
    )
    return into


def edited(clone: Path, pin: str, path: str, *changes: tuple[str, str]) -> str:
    """``path`` at ``pin`` in ``clone`` with each (old, new) text replaced once; every old text must be there."""
    text = subprocess.run(
        ["git", "show", f"{pin}:{path}"], cwd=clone, capture_output=True, text=True, check=True
    ).stdout
    for old, new in changes:
        assert text.count(old) >= 1, (path, old)
        text = text.replace(old, new, 1)
    return text
