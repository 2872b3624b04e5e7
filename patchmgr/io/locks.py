"""Exclusive locks between patchmgr runs (flock): a second run waits, says so, and gives up clearly."""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import time
from collections.abc import Callable
from io import TextIOWrapper
from pathlib import Path

from patchmgr.model.errors import StateError

_LOCK_TIMEOUT = "PATCHMGR_LOCK_TIMEOUT"  # seconds a second run waits for a lock before it gives up


def lock_timeout(default: float) -> float:
    value = os.environ.get(_LOCK_TIMEOUT)
    try:
        return float(value) if value else default
    except ValueError:
        return default


class FileLock:
    """An exclusive lock on ``path`` (flock): a second holder waits up to ``timeout`` seconds, then fails clearly.

    Re-entering the same lock in one process (a fetch inside a fetch) does not wait on itself.
    """

    _held: dict[str, int] = {}

    def __init__(self, path: Path, timeout: float, what: str, on_wait: Callable[[str], None] | None = None) -> None:
        self.path = path
        self.timeout = timeout
        self.what = what
        self.on_wait = on_wait
        self.waited = 0.0  # seconds spent waiting for another run
        self._handle: TextIOWrapper | None = None

    def __enter__(self) -> FileLock:
        key = str(self.path)
        if self._held.get(key):
            self._held[key] += 1
            return self
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = handle = _open_lock_file(self.path)
        started = time.monotonic()
        deadline = started + self.timeout
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self._held[key] = 1
                return self
            except BlockingIOError:
                if not self.waited and self.on_wait:
                    self.on_wait(f"waiting for another patchmgr run that holds {self.path}")
                self.waited = time.monotonic() - started or 1e-6
                if time.monotonic() >= deadline:
                    handle.close()
                    self._handle = None
                    raise StateError(
                        f"another patchmgr run holds {self.path} ({self.what}); gave up after {self.timeout:g}s",
                        "wait for it to finish, then run again",
                    ) from None
                time.sleep(0.1)

    def __exit__(self, *exc: object) -> None:
        key = str(self.path)
        self._held[key] -= 1
        if self._held[key] == 0 and self._handle:
            del self._held[key]
            fcntl.flock(self._handle, fcntl.LOCK_UN)
            self._handle.close()
            self._handle = None


def _open_lock_file(path: Path) -> TextIOWrapper:
    """The lock file, opened never through a link and never as a FIFO or device (another user's link in a
    shared folder would have this run create or open a file elsewhere). OSError as ``open`` raises it."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        raise OSError(
            errno.ELOOP, "it is a symbolic link (a lock file is never opened through one)", str(path)
        ) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "it is not a regular file", str(path))
    return os.fdopen(fd, "r+")
