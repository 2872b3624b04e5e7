"""Fixtures shared by the smoke tests.

``patchmgr smoke`` runs each patch's tests in a fresh pytest process with
PATCHMGR_SMOKE_ROOT set to the upstream's import root (a checkout joined with
its ``package-root``, or an installed environment's site-packages folder) and
PATCHMGR_SMOKE_DEVICE set to ``cpu``, ``cuda`` or ``npu``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from patchmgr.smoke.loader import UpstreamTree


@pytest.fixture(scope="session")
def upstream_root() -> Path:
    root = os.environ.get("PATCHMGR_SMOKE_ROOT")
    if not root:
        pytest.fail("PATCHMGR_SMOKE_ROOT is not set: run smoke tests through `patchmgr smoke`")
    return Path(root)


@pytest.fixture(scope="session")
def smoke_device() -> str:
    return os.environ.get("PATCHMGR_SMOKE_DEVICE", "cpu")


@pytest.fixture(scope="session")
def load_upstream(upstream_root):
    """``load_upstream("megatron.bridge", "megatron.bridge.models.x")`` imports one module of the tree."""

    def load(package: str, module: str, run_init=()):
        return UpstreamTree(upstream_root, package, run_init).load(module)

    return load
