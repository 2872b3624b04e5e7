"""The disk as the cause of a failed write, told once for every writer: the cache, a checkout, a journal.

A write fails with an ``OSError`` (its errno says why) or inside git, whose
message names the cause only sometimes: its first fatal line often names just
the file it could not write ("failed to write commit object"). Then the file
system itself is asked, at the nearest folder of the path that exists.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from patchmgr.model.errors import GitError

# The causes, in the words every error message uses.
NO_SPACE = "no space left on that disk"
NO_INODES = "no free inodes on that file system"
READ_ONLY = "the file system is read-only"
QUOTA = "the disk quota is exceeded"
FREE_SPACE = "free some space on that disk"  # the start of every hint for a full disk

# errnos of a write that failed because the disk (or the quota, or the file size limit) is full
FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)

# What git says when it cannot write to the disk, as the errno that says it (git runs with LC_ALL=C).
_GIT_SAYS = {
    "no space left on device": errno.ENOSPC,
    "out of diskspace": errno.ENOSPC,
    "disk quota exceeded": errno.EDQUOT,
    "file too large": errno.EFBIG,
    "read-only file system": errno.EROFS,
}

# Git removes its temporary files after a failed write, so a disk it filled is seldom at its last byte
# when asked: this little left counts as full.
_NEARLY_FULL = 64 << 10


def nearest_existing(path: Path) -> Path:
    """``path``, or its nearest parent that exists: where the file system of a path to be made can be asked."""
    missing = missing_folders(path)
    return missing[-1].parent if missing else path


def missing_folders(path: Path, *, links_exist: bool = False) -> list[Path]:
    """``path`` and its parents that do not exist, deepest first: what making ``path`` creates.

    With ``links_exist``, a symbolic link (even a dangling one) counts as existing: nothing is made in its place.
    """
    exists = os.path.lexists if links_exist else os.path.exists
    missing = []
    while not exists(path) and path != path.parent:
        missing.append(path)
        path = path.parent
    return missing


def os_problem(exc: OSError, path: Path) -> str:
    """What an OSError on ``path`` really means: a full disk, no free inodes, a read-only disk, ..."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        try:
            stats = os.statvfs(nearest_existing(path))
            if stats.f_files and stats.f_favail == 0:
                return NO_INODES
            if exc.errno == errno.ENOSPC:
                return NO_SPACE
        except OSError:
            pass
    if exc.errno == errno.EROFS:
        return READ_ONLY
    if exc.errno == errno.EDQUOT:
        return QUOTA
    if exc.errno in (errno.ENOTDIR, errno.EEXIST):
        return "a file is in the way of a folder"
    return exc.strerror or str(exc)


def git_problem(said: str, path: Path) -> str | None:
    """The real cause when git failed writing at ``path`` because of the disk, else None.

    Git's message ``said`` first; when it carries no errno the file system itself is asked.
    """
    lowered = said.lower()
    for text, code in _GIT_SAYS.items():
        if text in lowered:
            return os_problem(OSError(code, os.strerror(code)), path)
    try:
        stats = os.statvfs(nearest_existing(path))
    except OSError:
        return None
    if stats.f_flag & os.ST_RDONLY:
        return READ_ONLY
    if stats.f_files and stats.f_favail == 0:
        return NO_INODES
    if stats.f_blocks and stats.f_bavail * stats.f_frsize < _NEARLY_FULL:
        return NO_SPACE
    return None


def disk_full(cause: OSError | GitError | str, folder: Path) -> bool:
    """Whether a failure while writing under ``folder`` was the disk (or the quota, or the file size limit)
    running out; a read-only disk is not full."""
    if isinstance(cause, OSError):
        return cause.errno in FULL_ERRNOS
    problem = git_problem(cause if isinstance(cause, str) else cause.message, folder)
    return problem is not None and problem != READ_ONLY


def failure_text(exc: OSError | GitError) -> str:
    """A failed write in one line: git's message, or the OS's words and the file they are about."""
    if isinstance(exc, GitError):
        return exc.message
    where = f" ({exc.filename})" if exc.filename else ""
    return f"{exc.strerror or exc}{where}"
