"""A disk that can be filled up under a running patchmgr: a small tmpfs where the tests may mount one (root),
else a file size limit cut to zero.

A pytest plugin (tests/conftest.py registers it): the fixture ``disk``."""

from __future__ import annotations

import errno
import os
import resource
import subprocess
from pathlib import Path

import pytest


class Disk:
    """Where the tree under test lives, and how to make that disk full for a running patchmgr."""

    def __init__(self, root: Path, tmpfs: bool) -> None:
        self.root, self.tmpfs = root, tmpfs
        self.filler = root / "filler"

    def fill(self, pid: int | None = None) -> None:
        if not self.tmpfs:
            if pid is not None:
                resource.prlimit(pid, resource.RLIMIT_FSIZE, (0, 0))
            return
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        try:
            for size in (1 << 20, 4096, 1):
                chunk = b"\0" * size
                try:
                    while True:
                        os.write(fd, chunk)
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC
        finally:
            os.close(fd)

    def free(self) -> None:
        self.filler.unlink(missing_ok=True)

    @property
    def message(self) -> str:
        return "No space left on device" if self.tmpfs else "File too large"


@pytest.fixture
def disk(tmp_path):
    root = tmp_path / "disk"
    root.mkdir()
    # PATCHMGR_TEST_NO_TMPFS=1 runs the RLIMIT_FSIZE variant even where a tmpfs could be mounted
    mounted = (
        os.geteuid() == 0
        and not os.environ.get("PATCHMGR_TEST_NO_TMPFS")
        and subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(root)], capture_output=True
        ).returncode
        == 0
    )
    try:
        yield Disk(root, mounted)
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(root)], check=True)
