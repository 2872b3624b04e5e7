"""Fixtures shared by the smoke tests.

``patchmgr smoke`` runs the patches' tests in one pytest process per upstream and device with
PATCHMGR_SMOKE_ROOT set to the upstream's import root (a checkout joined with
its ``package-root``, or an installed environment's site-packages folder) and
PATCHMGR_SMOKE_DEVICE set to ``cpu``, ``cuda`` or ``npu``.
"""

from __future__ import annotations

import contextlib
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


@pytest.fixture(scope="session")
def npu_or_stand_in(smoke_device):
    """``with npu_or_stand_in(stand_in, npu=(dtype, tolerance), cpu=(dtype, tolerance)) as (device, dtype,
    tolerance)``: on an NPU the real torch_npu (skipping where it is not installed), elsewhere the stand-in
    module ``stand_in`` (a path) installed as torch_npu while the block runs, on the CPU."""

    @contextlib.contextmanager
    def chosen(stand_in: Path, *, npu: tuple, cpu: tuple):
        if smoke_device == "npu":
            pytest.importorskip("torch_npu", reason="no torch_npu for the NPU run")
            yield ("npu", *npu)
            return
        with _load_stand_in(stand_in).installed():
            yield ("cpu", *cpu)

    return chosen
