"""After ``export``: the exported patches' guards on the edit checkout's committed tree.

The checkout's ``HEAD`` is the upstream (at the pin, or at the new base of an
``edit --onto``) with every patch of the series committed on it: exactly the
patched tree, read from git objects, so the work tree plays no part. Each patch
of the series as now written is read again, so a guard added or changed in the
checkout's commit messages is the one evaluated.
"""

from __future__ import annotations

from pathlib import Path

from patchmgr.engine.classify import patch_guards
from patchmgr.engine.results import GuardResult
from patchmgr.io.git import GitRepo
from patchmgr.model.errors import StateError
from patchmgr.model.project import Project
from patchmgr.sources.upstream import GitSource


def head_commit(repo: GitRepo, folder: Path, purpose: str) -> str:
    """HEAD's commit in an edit checkout: edit commits each patch on the pin, so one without it was broken by hand."""
    head = repo.resolve("HEAD")
    if head is None:
        raise StateError(f"{folder} has no HEAD commit {purpose}", "run patchmgr edit again")
    return head


def guards_at_head(project: Project, target: str, name: str, folder: Path) -> dict[str, list[GuardResult]]:
    """Patch id -> its guards evaluated on ``folder``'s HEAD, for each patch of the series that has guards."""
    upstream = project.target(target).upstream(name)  # read again: export may have changed the series
    with GitRepo(folder.resolve()) as repo:
        tree = GitSource(repo, head_commit(repo, folder, "to check the guards on"), str(folder))
        listing: list[list[str] | None] = []
        found = {patch.id: patch_guards(patch, tree, listing) for patch in project.patches(upstream)}
    return {patch_id: guards for patch_id, guards in found.items() if guards}
