"""What goes wrong in the cache, said once: its disk, a source folder that is no repository, a source's failure."""

from __future__ import annotations

from pathlib import Path

from patchmgr.io.disk import FREE_SPACE, os_problem
from patchmgr.io.locks import FileLock
from patchmgr.model.errors import GitError, StateError
from patchmgr.model.urls import as_local_path, mask_url


class CacheError(StateError):
    """The cache cannot be used (made, written, locked, trusted): a problem of this machine for the whole run.

    Never an upstream reported unavailable: ``check.status.check_upstream`` lets it through as one error.
    """


def disk_hint(problem: str) -> str:
    """What to do about the cache's disk, from its problem (``io.disk``'s words, perhaps with git's after them)."""
    if "inodes" in problem:
        return "remove files on that file system (it has no free inodes), or point PATCHMGR_CACHE at another one"
    if "space" in problem or "quota" in problem.lower():
        return f"{FREE_SPACE}, or point PATCHMGR_CACHE at a folder with free space"
    return "point PATCHMGR_CACHE at a writable folder of your own"


class NotARepository(GitError):
    """A local source that is not a git repository (or not there): no git command was run on it."""


class ShallowSource(GitError):
    """A local source that is a shallow clone (``git clone --depth``): its history is cut off, and a partial clone
    fetching from it asks again and again for the commits it lacks (a lazy fetch inside each fetch)."""

    def __init__(self, local: Path) -> None:
        super().__init__(
            f"{local} is a shallow clone: its history is cut off, and patchmgr needs a source with all of it",
            f"make it whole with `git -C {local} fetch --unshallow`, or give a full clone",
        )


def require_repository(local: Path) -> None:
    """Refuse ``local`` (``NotARepository``) unless it is a git clone or a bare repository: checked before git runs."""
    if not ((local / ".git").exists() or ((local / "HEAD").is_file() and (local / "objects").is_dir())):
        raise NotARepository(
            f"{local} is not a git repository", "give the folder of a git clone (or a bare repository), or a URL"
        )


def said_at(url: str, exc: GitError) -> str:
    """``url: what went wrong``, the URL said once and its password masked."""
    shown, message = mask_url(url), mask_url(exc.message)
    return (
        message if message.startswith(shown) or message.startswith(str(as_local_path(url))) else f"{shown}: {message}"
    )


class CacheLock(FileLock):
    """The per-upstream lock of the cache; a lock file that cannot be made (a read-only or full disk) is one error."""

    def __enter__(self) -> FileLock:
        try:
            return super().__enter__()
        except OSError as exc:
            problem = os_problem(exc, self.path)
            raise CacheError(f"cannot lock {self.path} in the patchmgr cache: {problem}", disk_hint(problem)) from None
