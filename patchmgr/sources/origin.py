"""A location made a repository's ``origin``: the cache's clone of an upstream, or a checkout made from a source.

The one place a source location is taken as a remote, so that every command refuses the same locations before
anything fetches from them: one no URL rule allows, a folder that is no git repository, and a shallow clone
(``git clone --depth``). A partial clone fetching from a shallow one looks up the commit the source's history is cut
at with a lazy fetch, from that same source, which answers with the same cut, looked up again: thousands of ``git
fetch`` and ``upload-pack`` within a minute.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from patchmgr.io.git_run import LazyFetchLoop
from patchmgr.model.errors import GitError, SourceError
from patchmgr.model.manifest import url_problem
from patchmgr.model.urls import as_local_path, mask_url
from patchmgr.sources.cache_errors import NotARepository, ShallowSource, require_repository
from patchmgr.sources.cache_trust import LOCAL_UPLOAD_PACK

if TYPE_CHECKING:  # io.git is imported where a clone is opened: a status read back runs no git
    from patchmgr.io.git import GitRepo

# a location that cannot serve as a source at all: the next one is tried at once (not asked for every ref), and the
# hint given is its own
UNUSABLE = (ShallowSource, LazyFetchLoop)

# local sources this run found whole: asked once, not on every fetch (a clone's history does not get cut while a
# command runs, short of a fetch --depth in it meanwhile)
_WHOLE: set[Path] = set()


def point_origin(repo: GitRepo, url: str) -> None:
    """Point ``origin`` of a (partial) clone at ``url``: a URL or a local repository with its whole history."""
    problem = url_problem(url, from_command_line=True)
    if problem:
        raise SourceError(f"refusing source {mask_url(url)!r}: {mask_url(problem)}", "give a URL or a local path")
    local = as_local_path(url)
    if local is not None:
        if not local.exists():
            raise NotARepository(f"{local} does not exist", "give the folder of a git clone, or a URL")
        require_repository(local)
        require_whole_history(local)
        url = str(local.resolve())
    if repo.run_ok("remote", "get-url", "origin"):
        repo.run("remote", "set-url", "origin", "--", url)
    else:
        repo.run("remote", "add", "origin", "--", url)
        repo.run("config", "core.repositoryformatversion", "1")
        repo.run("config", "extensions.partialClone", "origin")
        repo.run("config", "remote.origin.promisor", "true")
        repo.run("config", "remote.origin.partialclonefilter", "blob:none")
    if local is not None:
        # A local source serves through a local upload-pack, which reads the
        # source's config, not ours: tell it to honour the blob filter, so
        # that a source lacking some large blobs can still serve the commit.
        repo.run("config", "remote.origin.uploadpack", LOCAL_UPLOAD_PACK)
    else:
        repo.run_ok("config", "--unset", "remote.origin.uploadpack")


def require_whole_history(local: Path) -> None:
    """Refuse a local source that is a shallow clone (``ShallowSource``), before anything fetches from it: a partial
    clone fetching from one looks up the commits it cuts off with a lazy fetch, which fetches from it again, and
    again. A folder git cannot read is left to the fetch, which says why."""
    from patchmgr.io.git import GitRepo

    if local.resolve() in _WHOLE:
        return
    try:
        with GitRepo(local) as source:
            shallow = source.is_shallow()
    except GitError:
        return
    if shallow:
        raise ShallowSource(local)
    _WHOLE.add(local.resolve())


def source_hint(upstream: str, unusable: Sequence[GitError]) -> str:
    """The next step when no source of ``upstream`` could provide a commit: the one an ``UNUSABLE`` source needs,
    when one was refused as such (``unusable``)."""
    return (unusable[-1].hint or "") if unusable else f"pass a reachable clone with --source {upstream}=PATH_OR_URL"
