"""The fixtures a smoke test reaches its upstream's code with, for every project's ``tests/smoke/<upstream>/
conftest.py`` to import (``patchmgr init`` writes one that does): kept here, so that a project gets their fixes
with the tool instead of a copy frozen on the day it started.

``patchmgr smoke`` runs the patches' tests in a pytest process per upstream and device with PATCHMGR_SMOKE_ROOT
set to the upstream's import root (a checkout joined with its ``package-root``, or an installed environment's
site-packages folder; with ``--unpatched`` the pinned upstream without the patches) and PATCHMGR_SMOKE_DEVICE set
to ``cpu``, ``cuda`` or ``npu``. Only a pytest process imports this module: it is a plugin, not part of the
tool's commands.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

import pytest

from patchmgr.smoke.loader import UpstreamTree


@pytest.fixture(scope="session")
def upstream_root() -> Path:
    """The folder to import the upstream from: the tree ``patchmgr smoke`` tests."""
    root = os.environ.get("PATCHMGR_SMOKE_ROOT")
    if not root:
        pytest.fail("PATCHMGR_SMOKE_ROOT is not set: run smoke tests through `patchmgr smoke`")
    return Path(root)


@pytest.fixture(scope="session")
def smoke_device() -> str:
    """The lane the test runs on: ``cpu``, ``cuda`` or ``npu``."""
    return os.environ.get("PATCHMGR_SMOKE_DEVICE", "cpu")


@pytest.fixture(scope="session")
def load_upstream(upstream_root: Path) -> Callable[..., ModuleType]:
    """``load_upstream("mypackage", "mypackage.module")`` imports one module of the tree under test, never an
    installed copy (an ImportError if another copy would win the import). Sub-package ``__init__`` files do not
    run unless named in ``run_init``, so a heavy package still loads the one module a test needs."""

    def load(package: str, module: str, run_init: Sequence[str] = ()) -> ModuleType:
        return UpstreamTree(upstream_root, package, run_init).load(module)

    return load
