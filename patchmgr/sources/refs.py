"""Refs: what an upstream's source can be asked for, and what is said when none of its sources has one.

A ref is checked before anything is fetched or written (``validate_ref``); a
ref that every source was reached for and none has is ``RefNotFound`` at the
pin (the upstream is unavailable) and ``UnknownRef`` when given on the command
line (bad input); a ref that names a tree or a blob is ``NotACommit``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from patchmgr.model.errors import SourceError, UsageError
from patchmgr.model.urls import mask_url, ref_problem

if TYPE_CHECKING:  # only for annotations: a status read back from the cache loads no git code
    from patchmgr.io.git import GitRepo

# every branch and tag of a source, for import's base search; of a local clone its remote branches too (there
# the branch a patch was made on is often origin/NAME alone)
EVERY_REF = (
    "+refs/heads/*:refs/patchmgr/heads/*",
    "+refs/remotes/*:refs/patchmgr/remotes/*",
    "+refs/tags/*:refs/tags/*",
)


def validate_ref(ref: str) -> str:
    """``ref`` when git can fetch it as given (the rules of ``git check-ref-format``, one level allowed); else bad
    input, before anything is fetched or written. Revision expressions (``HEAD@{1}``, ``main~2``, ``v1^``) name a
    commit only in one clone's history: the source is asked for a ref, so they are refused here with their id's
    way to get it."""
    why = ref_problem(ref)
    if why:
        expression = any(mark in ref for mark in ("@{", "~", "^")) and ref.isprintable()
        raise UsageError(
            f"{ref!r} is not a valid git ref, one the upstream's source can be asked for: {why}",
            "give a branch, a tag or a commit id"
            + (
                f"; for a revision of your own clone, pass the commit it names (git rev-parse {_quoted(ref)} there)"
                if expression
                else ""
            ),
        )
    return ref


def _quoted(ref: str) -> str:
    return "'" + ref.replace("'", "'\\''") + "'"


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


def require_commit(repo: GitRepo, upstream: str, ref: str) -> None:
    """A fetched ref that is no commit: a tag at a tree or a blob (or at another such tag) is ``NotACommit``.
    The types are read from the ref and the tag object it names, so a blob is never fetched to be named."""
    kinds = repo.run("for-each-ref", "--format=%(objecttype) %(*objecttype)", "refs/patchmgr/against").split()
    if kinds:
        raise NotACommit(upstream, ref, kinds[-1])
