"""Abbreviated commit ids (``--pin 8f3c2a1``, ``--against lib=8f3c2a1``): the commit of a source that one names.

No server fetches a commit by an abbreviated id, and the cache holds whatever earlier runs happened to fetch: what
the cache alone says (git rev-parse there) would depend on those runs. So the source's every branch and tag is
fetched first, into the cache's own names for them, with the names the source no longer has pruned; the id then
names the commits of those refs that begin with it, the same answer on any machine: one is the commit (on any
branch or tag, not only the default one), several are an ``AmbiguousCommit`` that lists them, none is no such
commit.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from patchmgr.io.git_run import RepositoryDamaged
from patchmgr.model.errors import GitError, UsageError
from patchmgr.model.urls import mask_url
from patchmgr.sources.cache_errors import said_at

if TYPE_CHECKING:  # only for annotations: a status read back from the cache loads no git code
    from patchmgr.io.git import GitRepo

# git's shortest abbreviation is 4 hex digits; 40 is a full id, fetched as it is
ABBREVIATED = re.compile(r"[0-9a-fA-F]{4,39}")

# where the fetch of every ref (sources.refs.EVERY_REF) lays a source's branches and tags in the cache
SOURCE_REFS = ("refs/patchmgr/heads/", "refs/patchmgr/remotes/", "refs/tags/")


class AmbiguousCommit(UsageError):
    """An abbreviated commit id that begins the ids of several commits of the source: bad input, exit 2."""


def is_abbreviated(ref: str) -> bool:
    return ABBREVIATED.fullmatch(ref) is not None


def commits_named(repo: GitRepo, prefix: str) -> list[str]:
    """The commits on the source's branches and tags (as the cache last fetched every ref) whose id begins with
    ``prefix``: the cache's objects of that prefix (``rev-parse --disambiguate``), less those that are no commit
    and those that no branch or tag of the source contains (left by an earlier fetch of another ref)."""
    prefix = prefix.lower()
    listed = repo.run("rev-parse", f"--disambiguate={prefix}").split() if len(prefix) >= 4 else []
    found = []
    for sha in listed:
        if repo.run("cat-file", "-t", sha) != "commit":
            continue
        if repo.run("for-each-ref", "--count=1", f"--contains={sha}", "--format=%(refname)", *SOURCE_REFS):
            found.append(sha)
    return sorted(found)


def ambiguous(repo: GitRepo, upstream: str, prefix: str, url: str, commits: Sequence[str]) -> AmbiguousCommit:
    """The error for ``prefix``, which begins the ids of ``commits`` (two or more) at ``url``: each named in full,
    with its date and subject, as ``git rev-parse --disambiguate`` lists them."""
    described = repo.run("log", "--no-walk=sorted", "--format=%H %cs %s", *commits).split("\n")
    return AmbiguousCommit(
        f"upstream {upstream}'s commit id {prefix!r} is ambiguous: {len(commits)} commits of {mask_url(url)} begin "
        "with it: " + "; ".join(line.strip() for line in described if line.strip()),
        "give more digits of the commit id, or the full id of the one you mean",
    )


def by_prefix(
    repo: GitRepo,
    upstream: str,
    prefix: str,
    lacking: list[str],
    errors: list[str],
    fetch_every_ref: Callable[[str], None],
    progress: Callable[[str], None],
) -> tuple[str, str] | None:
    """The commit that ``prefix`` names on a branch or tag of the first of ``lacking`` (the sources that answered
    without a ref of that name) that has one, and that source; whatever the cache held before, since every ref of
    the source is fetched first (``fetch_every_ref``, pruning the names it no longer has). A prefix that begins
    several of its commits is an ``AmbiguousCommit``; a source that cannot be fetched from leaves ``lacking``."""
    for url in list(lacking):
        progress(f"fetching every branch and tag of {upstream} from {mask_url(url)} to find commit {prefix}")
        try:
            fetch_every_ref(url)
        except RepositoryDamaged:
            raise
        except GitError as exc:
            errors.append(said_at(url, exc))
            lacking.remove(url)
            continue
        commits = commits_named(repo, prefix)
        if len(commits) > 1:
            raise ambiguous(repo, upstream, prefix, url, commits)
        if commits:
            return commits[0], url
        errors.append(f"{mask_url(url)}: no commit of its branches and tags begins with {prefix}")
    return None
