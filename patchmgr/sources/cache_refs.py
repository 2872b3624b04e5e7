"""The refs the cache has resolved, remembered, so that a ref whose commit the cache holds is found without the
network: ``bump --to v0.5.0`` after ``status --against megatron-bridge=v0.5.0`` works on a machine that cannot
reach the upstream's URL any more (with a note that says the cache stood in, and from when).

Each ref a source resolved is kept in the cached clone as ``refs/patchmgr/resolved/<ref>``; a ref no source
could be asked for is looked up there, then among the tags the cache holds (a ``v0.5.0`` fetched with the
branches and tags of a commit). A branch found this way is where the cache last saw it: the note says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from patchmgr.model.errors import GitError

if TYPE_CHECKING:  # only for annotations: a status read back from the cache loads no git code
    from patchmgr.io.git import GitRepo

RESOLVED = "refs/patchmgr/resolved/"


def remember(repo: GitRepo, ref: str, commit: str) -> None:
    """Keep ``ref`` -> ``commit`` in the cached clone (a ref git cannot store under that name is not kept)."""
    try:
        repo.run("update-ref", "--no-deref", RESOLVED + ref, commit)
    except GitError:
        pass  # a name such as "main" beside "main/x": the cache only loses the offline fallback for it


def recalled(repo: GitRepo, ref: str) -> tuple[str, str] | None:
    """The commit the cache has for ``ref`` (remembered, or a tag it holds) and how it knows it; None if neither."""
    for full, how in ((RESOLVED + ref, "as the cache last resolved it"), (f"refs/tags/{ref}", "a tag the cache holds")):
        commit = repo.resolve(full)
        if commit and repo.has_commit(commit):
            return commit, how
    return None
