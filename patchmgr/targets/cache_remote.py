"""The cache as a checkout's remote when no source can be reached (issue 27, item 3).

``apply --into`` and ``edit`` (with or without ``--onto``) fetch a checkout's commit from the upstream's
source. When none of its locations answers, the cached clone serves instead, but only when it holds every
file of that commit (``patchmgr fetch`` filled it, or earlier runs read them all): a blobless cache cannot
serve a blob it never fetched. The cache is opened through ``Store.repo``, so a clone that does not verify
(``sources.cache_trust``) is never used. Otherwise one error names the files the cache lacks, with the way
to fill it.
"""

from __future__ import annotations

from collections.abc import Sequence

from patchmgr.io.git import GitRepo
from patchmgr.model.errors import GitError, StateError
from patchmgr.sources.store import Store

SHOWN = 5  # the files an error names before "and N more"


def fill_hint(target: str, name: str) -> str:
    return (
        f"run `patchmgr fetch --target {target} --upstream {name}` while its source is reachable (it fills the "
        f"cache with every file of the pin), or pass --source {name}=PATH_OR_URL"
    )


def cache_lacks(store: Store, name: str, commit: str, absent: Sequence[str] = ()) -> str | None:
    """What the cache lacks to serve every file of ``commit`` (None: nothing); ``absent`` are files the source
    itself lacked when ``patchmgr fetch`` filled the cache (a checkout leaves them out)."""
    repo = store.repo(name)
    if not repo.has_commit(commit):
        return f"the cache does not hold commit {commit[:12]}"
    lacking = [path for path in repo.unfetched_files(commit) if path not in set(absent)]
    if not lacking:
        return None
    more = f" and {len(lacking) - SHOWN} more" if len(lacking) > SHOWN else ""
    return f"the cache lacks {len(lacking)} file(s) of {commit[:12]}: {', '.join(lacking[:SHOWN])}{more}"


def fetch_from_cache(
    repo: GitRepo, store: Store, name: str, commit: str, reason: str, target: str, absent: Sequence[str] = ()
) -> None:
    """Fetch ``commit`` into the checkout ``repo`` from the cached clone of ``name``, with a note; no source could
    be reached (``reason``). Raises ``StateError`` naming what the cache lacks; the checkout's ``origin`` is
    left pointing at the cache (the caller points it back at the upstream)."""
    lacks = cache_lacks(store, name, commit, absent)
    if lacks is not None:
        raise StateError(
            f"cannot check out {name} at {commit[:12]}: no source could provide it ({reason}), and {lacks}",
            fill_hint(target, name),
        )
    cache = str(store.repo_path(name))
    store.configure_remote(repo, cache)
    try:
        repo.run("fetch", "--quiet", "--no-tags", "--filter=blob:none", "origin", "--", commit)
    except GitError as exc:
        raise StateError(
            f"cannot check out {name} at {commit[:12]} from the cache ({cache}): {exc.message}; "
            f"no source could provide it ({reason})",
            fill_hint(target, name),
        ) from None
    store.note(
        f"{name} {commit[:12]}: checked out from the patchmgr cache ({cache}): no source could provide it ({reason})"
    )
