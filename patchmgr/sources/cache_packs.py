"""A cached clone's packs kept few: each lazy fetch of a partial clone leaves a pack behind, and every later git
process opens every pack's index (the fetch rate fell sixfold at 1,400 packs). A run that leaves more than
``PACK_LIMIT`` repacks the clone on its way out."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from patchmgr.model.errors import GitError, StateError
from patchmgr.sources.cache_errors import CacheLock

if TYPE_CHECKING:  # the repository comes opened: a status read back runs no git, and imports none of it
    from patchmgr.io.git import GitRepo

# packs a cached clone may hold before a run repacks it on its way out: each fetch into a partial clone leaves one
# (a blob fetched lazily, one), and git reads every pack's index in every process
PACK_LIMIT = 32


def keep_packs_few(lock: Path, repo: GitRepo) -> None:
    """Repack a cached clone whose fetches left more than ``PACK_LIMIT`` packs, under its lock (``lock``); never
    waits for it (a run that holds it is fetching, and repacks on its own way out). Best effort: packs are only
    slower."""
    if repo.pack_count() <= PACK_LIMIT:
        return
    try:
        with CacheLock(lock, 0.0, "it is repacking the cache"):
            if repo.pack_count() > PACK_LIMIT:  # another run may have repacked it first
                repo.repack()
    except (StateError, GitError, OSError):
        pass
