"""What goes wrong in the cache, said once: a full disk, a ref the upstream lacks, a folder that is no repository."""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Sequence
from pathlib import Path

from patchmgr.model.errors import GitError, SourceError, StateError, UsageError
from patchmgr.model.urls import as_local_path, mask_url


class CacheError(StateError):
    """The cache cannot be used (made, written, locked, trusted): a problem of this machine for the whole run.

    Never an upstream reported unavailable: ``checking.check_upstream`` lets it through as one error.
    """


# What git says when it cannot write to the disk, as the errno that says it (git runs with LC_ALL=C).
_GIT_DISK_ERRORS = {
    "No space left on device": errno.ENOSPC,
    "Disk quota exceeded": errno.EDQUOT,
    "Read-only file system": errno.EROFS,
}


def disk_problem(said: str, path: Path) -> str | None:
    """The real cause when git failed writing at ``path`` because of the disk, else None.

    Git's message ``said`` first; its first fatal line does not always carry the errno
    ("could not set 'remote.origin.url'"), so the file system itself is asked next.
    """
    for text, code in _GIT_DISK_ERRORS.items():
        if text in said:
            return _os_problem(OSError(code, text), path)
    try:
        stats = os.statvfs(_existing_parent(path))
    except OSError:
        return None
    if stats.f_flag & os.ST_RDONLY:
        return "the file system is read-only"
    if stats.f_files and stats.f_favail == 0:
        return "no free inodes on that file system"
    if stats.f_blocks and stats.f_bavail == 0:
        return "no space left on that disk"
    return None


def disk_hint(problem: str) -> str:
    if "inodes" in problem:
        return "remove files on that file system (it has no free inodes), or point PATCHMGR_CACHE at another one"
    if "space" in problem or "quota" in problem.lower():
        return "free some space on that disk, or point PATCHMGR_CACHE at a folder with free space"
    return "point PATCHMGR_CACHE at a writable folder of your own"


def _os_problem(exc: OSError, path: Path) -> str:
    """What an OSError on ``path`` really means: a full disk, no free inodes, a read-only disk, ..."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        try:
            stats = os.statvfs(_existing_parent(path))
            if stats.f_files and stats.f_favail == 0:
                return "no free inodes on that file system"
            if exc.errno == errno.ENOSPC:
                return "no space left on that disk"
        except OSError:
            pass
    if exc.errno == errno.EROFS:
        return "the file system is read-only"
    if exc.errno == errno.EDQUOT:
        return "the disk quota is exceeded"
    if exc.errno in (errno.ENOTDIR, errno.EEXIST):
        return "a file is in the way of a folder"
    return exc.strerror or str(exc)


def _existing_parent(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


# What git fetch says when the source answered and has no such ref (git runs with LC_ALL=C).
_NO_SUCH_REF = re.compile(r"couldn't find remote ref")


class RefNotFound(SourceError):
    """Every source of an upstream was reached, and none has the ref or commit asked for.

    At the pin it stays a source problem (exit 1: the upstream is unavailable); for a ref
    given on the command line ``resolve_ref`` turns it into ``UnknownRef`` (exit 2).
    """


class UnknownRef(UsageError):
    """A ref given on the command line (``--against``, ``--to``) that the upstream does not have: bad input."""


def unknown_ref(upstream: str, ref: str, urls: Sequence[str]) -> UnknownRef:
    import shlex

    where = ", ".join(mask_url(url) for url in urls)
    hint = f"list its branches and tags with `git ls-remote --heads --tags {shlex.quote(mask_url(urls[0]))}`"
    if re.fullmatch(r"[0-9a-fA-F]{4,39}", ref):
        hint += ", or give the full 40-character commit id"
    said = "was reached and has" if len(urls) == 1 else "were reached and none has"
    return UnknownRef(
        f"upstream {upstream} has no ref {ref!r}: {where} {said} no branch, tag or commit of that name", hint
    )


class NotACommit(UsageError):
    """A ref that names a tree or a blob (a tag can point at any object), not a commit: nothing to check there."""

    def __init__(self, upstream: str, ref: str, kind: str) -> None:
        super().__init__(
            f"upstream {upstream}'s ref {ref!r} names a {kind}, not a commit",
            "give a branch, a tag or a commit id that names a commit",
        )
        self.kind = kind


class NotARepository(GitError):
    """A local source that is not a git repository (or not there): no git command was run on it."""


def _require_repository(local: Path) -> None:
    if not ((local / ".git").exists() or ((local / "HEAD").is_file() and (local / "objects").is_dir())):
        raise NotARepository(
            f"{local} is not a git repository", "give the folder of a git clone (or a bare repository), or a URL"
        )


def _said(url: str, exc: GitError) -> str:
    """``url: what went wrong``, the URL said once and its password masked."""
    shown, message = mask_url(url), mask_url(exc.message)
    return (
        message if message.startswith(shown) or message.startswith(str(as_local_path(url))) else f"{shown}: {message}"
    )
