"""Fixtures shared by the smoke tests.

``patchmgr smoke`` runs the patches' tests in one pytest process per upstream and device with
PATCHMGR_SMOKE_ROOT set to the upstream's import root (a checkout joined with
its ``package-root``, or an installed environment's site-packages folder) and
PATCHMGR_SMOKE_DEVICE set to ``cpu``, ``cuda`` or ``npu``.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
from pathlib import Path

import pytest

from patchmgr.smoke.fixtures import load_upstream, smoke_device, upstream_root

__all__ = ["load_upstream", "smoke_device", "upstream_root"]  # patchmgr's fixtures, for pytest to find here


def _load_stand_in(path: Path):
    """The stand-in module at ``path``, loaded by its path (the smoke folders are not packages)."""
    spec = importlib.util.spec_from_file_location(f"{path.parent.name}_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def target(request, smoke_device):
    """(device, dtype, tolerance) for a test module that names its ``TARGETS = {"npu": (dtype, tolerance), "cpu":
    (dtype, tolerance)}``: on an NPU the real torch_npu (skipping where it is not installed), elsewhere the CPU,
    with the module's neighbour ``npu_stand_in.py`` installed as torch_npu while the module's tests run."""
    targets = request.module.TARGETS
    if smoke_device == "npu":
        pytest.importorskip("torch_npu", reason="no torch_npu for the NPU run")
        yield ("npu", *targets["npu"])
        return
    with _load_stand_in(Path(request.module.__file__).with_name("npu_stand_in.py")).installed():
        yield ("cpu", *targets["cpu"])


@pytest.fixture(scope="session")
def built_for_other(smoke_device):
    """``with built_for_other("transformers", "verl's npu_patch.py"):`` around loading the upstream's code: an
    ImportError or AttributeError naming that distribution (the code under test asks it for a module or a name
    the installed version lacks) skips the test, naming what failed: the environment is not one that release
    loads with (the manifest's smoke-env gives it one), which says nothing about the patch."""

    @contextlib.contextmanager
    def guarded(distribution: str, what: str):
        try:
            yield
        except (ImportError, AttributeError) as error:
            if distribution not in f"{getattr(error, 'name', None) or ''} {error}":
                raise
            version = importlib.metadata.version(distribution)
            pytest.skip(
                f"{what} in the tree under test does not load with {distribution} {version} "
                f"({type(error).__name__}: {error}): run its smoke tests in the environment the manifest's "
                "smoke-env gives this release"
            )

    return guarded
