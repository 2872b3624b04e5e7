"""Debian source packages for the tests that compare patchmgr with a distribution's own decisions: unpacked by
``apt-get source`` (``dpkg-source -x``, the package's patches applied), or the test skips and says why (no apt,
no deb-src line for the release, no network). Opt-in, as the real histories are (``support.real_histories``)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

# A folder that keeps the packages between runs (``<folder>/<release>/<package>-<version>/``); without it each
# run downloads them into its own temporary folder.
CACHE_ENV = "PATCHMGR_TEST_DEBSRC"


def debian_source(package: str, into: Path, release: str | None = None) -> Path:
    """``package`` (of ``release``, e.g. ``trixie``; apt's default without one) unpacked in the new folder
    ``into``, or skip."""
    if shutil.which("apt-get") is None or shutil.which("dpkg-source") is None:
        pytest.skip("apt-get and dpkg-source are not installed")
    into.mkdir(parents=True)
    wanted = f"{package}/{release}" if release else package
    try:
        done = subprocess.run(["apt-get", "source", wanted], cwd=into, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        pytest.skip(f"apt-get source {wanted} took over 10 minutes")
    if done.returncode != 0:
        shutil.rmtree(into, ignore_errors=True)  # a later run tries again, not on half a download
        pytest.skip(f"apt-get source {wanted} failed (no deb-src line or no network): {done.stderr.strip()[-300:]}")
    return unpacked_in(into, package)


def unpacked_in(folder: Path, package: str) -> Path:
    return next(p for p in sorted(folder.iterdir()) if p.is_dir() and p.name.startswith(f"{package}-"))


def cached_debian_source(package: str, release: str, fallback: Path) -> Path:
    """``package`` of ``release`` from the folder ``PATCHMGR_TEST_DEBSRC`` names (downloaded there once), or
    into ``fallback`` when it names none."""
    folder = os.environ.get(CACHE_ENV)
    into = Path(folder).expanduser() / release if folder else fallback / release
    if into.is_dir() and any(p.is_dir() and p.name.startswith(f"{package}-") for p in into.iterdir()):
        return unpacked_in(into, package)
    return debian_source(package, into, release)
