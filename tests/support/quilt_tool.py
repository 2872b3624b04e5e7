"""Real quilt, for the tests that compare patchmgr with it: a pristine tree of a commit, ``quilt push -a`` of a
series there, and the files of a tree. Tests skip (saying why) where quilt is not installed."""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
from io import BytesIO
from pathlib import Path

import pytest


def need_quilt() -> str:
    quilt = shutil.which("quilt")
    if quilt is None:
        pytest.skip("quilt is not installed (apt-get install quilt; .ci/run installs it)")
    return quilt


def pristine(repo: Path, commit: str, into: Path) -> Path:
    """The files of ``commit`` in ``repo`` (git archive, no .git), in a new folder ``into``."""
    data = subprocess.run(["git", "archive", "--format=tar", commit], cwd=repo, capture_output=True, check=True).stdout
    into.mkdir(parents=True)
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        tar.extractall(into, filter="tar")
    return into


def quilt_push_all(tree: Path, patches: Path) -> subprocess.CompletedProcess[str]:
    """``quilt push -a`` in ``tree`` of the series in ``patches`` (a folder holding ``series``); must succeed."""
    env = {**os.environ, "QUILT_PATCHES": str(patches.resolve()), "QUILT_PC": ".pc", "QUILTRC": os.devnull}
    done = subprocess.run([need_quilt(), "push", "-a"], cwd=tree, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    shutil.rmtree(tree / ".pc", ignore_errors=True)
    return done


def quilt_series(patches: Path) -> list[str]:
    """The patches of the series in ``patches``, as ``quilt series`` lists them."""
    env = {**os.environ, "QUILT_PATCHES": str(patches.resolve()), "QUILTRC": os.devnull}
    done = subprocess.run(
        [need_quilt(), "series"], cwd=patches.parent, env=env, capture_output=True, text=True, check=True
    )
    prefix = str(patches.resolve()) + "/"
    return [line.removeprefix(prefix).removeprefix("patches/") for line in done.stdout.splitlines()]


def files_of(tree: Path) -> dict[str, bytes]:
    """Every file below ``tree`` (but .git and patchmgr's ledger), by its path there."""
    return {
        path.relative_to(tree).as_posix(): path.read_bytes()
        for path in sorted(tree.rglob("*"))
        if path.is_file() and ".git" not in path.relative_to(tree).parts and path.name != "patchmgr-ledger.json"
    }


def dpkg_source_build(tree: Path, patches: Path, work: Path) -> subprocess.CompletedProcess[str]:
    """``dpkg-source -b`` of a minimal ``3.0 (quilt)`` source package: ``tree``'s files as its ``.orig`` tarball and
    ``patches`` as its ``debian/patches``. It applies the series as ``dpkg-source -x`` does (``patch -F 0``: an
    offset is taken, fuzz is refused), so its exit status is dpkg-source's word on the series. Skips without it."""
    if shutil.which("dpkg-source") is None:
        pytest.skip("dpkg-source is not installed (apt-get install dpkg-dev)")
    package = work / "app-1.0"
    shutil.copytree(tree, package)
    with tarfile.open(work / "app_1.0.orig.tar.gz", "w:gz") as tar:
        tar.add(package, arcname="app-1.0")
    debian = package / "debian"
    (debian / "source").mkdir(parents=True)
    (debian / "source" / "format").write_text("3.0 (quilt)\n")
    (debian / "changelog").write_text(
        "app (1.0-1) unstable; urgency=medium\n\n  * Test.\n\n"
        " -- A Tester <a@example.org>  Mon, 01 Jan 2024 00:00:00 +0000\n"
    )
    (debian / "control").write_text(
        "Source: app\nMaintainer: A Tester <a@example.org>\n\n"
        "Package: app\nArchitecture: all\nDescription: a test\n x\n"
    )
    shutil.copytree(patches, debian / "patches")
    return subprocess.run(["dpkg-source", "-b", package.name], cwd=work, capture_output=True, text=True)
