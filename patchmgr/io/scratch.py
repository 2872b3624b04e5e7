"""patchmgr's temporary folders, and those a killed patchmgr left behind.

A process killed outright (SIGKILL, the out-of-memory killer, a container stopped after its grace period) runs
no cleanup, so the temporary folder it was using stays; for ``smoke --unpatched`` that is a view of a whole
upstream tree. So each folder is named for patchmgr, what it holds and the process that made it
(``patchmgr-smoke-4242-k2j8x0qa``), and the first folder a process makes sweeps the temporary directory of
the folders whose maker is gone: this user's own real folders (never a link, never another user's), named by a
process that no longer runs, and untouched for ``STALE_AFTER`` seconds (a process of another PID namespace
sharing the folder, whose number means nothing here, keeps its folder while it works in it).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
import time

STALE_AFTER = 600.0  # seconds since a left folder last changed
_NAME = re.compile(r"patchmgr-(?:[a-z]+-)+?(?P<pid>\d+)-[a-z0-9_]{8}\Z")
_swept_by: set[int] = set()  # the processes that have swept (a forked child sweeps for itself)


def folder(what: str) -> tempfile.TemporaryDirectory[str]:
    """A new temporary folder for ``what`` (lower-case words joined by ``-``), removed when it is closed."""
    if os.getpid() not in _swept_by:
        _swept_by.add(os.getpid())
        sweep()
    return tempfile.TemporaryDirectory(prefix=f"patchmgr-{what}-{os.getpid()}-")


def sweep(now: float | None = None) -> list[str]:
    """Remove the folders killed patchmgr processes left in the temporary directory; the names removed."""
    now = time.time() if now is None else now
    removed: list[str] = []
    try:
        entries = list(os.scandir(tempfile.gettempdir()))
    except OSError:
        return removed
    for entry in entries:
        named = _NAME.match(entry.name)
        if named is None:
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or now - info.st_mtime < STALE_AFTER:
            continue
        if _running(int(named.group("pid"))):
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        removed.append(entry.name)
    return removed


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True
