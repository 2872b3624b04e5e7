"""What goes wrong in the cache, said once: a full disk, a ref the upstream lacks, a folder that is no repository."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from patchmgr.io.disk import FREE_SPACE
from patchmgr.model.errors import GitError, SourceError, StateError, UsageError
from patchmgr.model.urls import as_local_path, mask_url


class CacheError(StateError):
    """The cache cannot be used (made, written, locked, trusted): a problem of this machine for the whole run.

    Never an upstream reported unavailable: ``checking.check_upstream`` lets it through as one error.
    """


def disk_hint(problem: str) -> str:
    """What to do about the cache's disk, from its problem (``io.disk``'s words, perhaps with git's after them)."""
    if "inodes" in problem:
        return "remove files on that file system (it has no free inodes), or point PATCHMGR_CACHE at another one"
    if "space" in problem or "quota" in problem.lower():
        return f"{FREE_SPACE}, or point PATCHMGR_CACHE at a folder with free space"
    return "point PATCHMGR_CACHE at a writable folder of your own"


# What git fetch says when the source answered and has no such ref (git runs with LC_ALL=C).
NO_SUCH_REF = re.compile(r"couldn't find remote ref")


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
