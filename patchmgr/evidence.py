"""Evidence for ``upstream``: name the upstream commit that carries a patch's change.

A commit between the pin and the ref whose change to the patch's files has
the patch's own patch-id (``git patch-id --stable``) carries it: the patch is
``upstream`` then, even where later commits edited those lines again so that
its reverse no longer applies. A patch whose reverse applies without such a
commit is named by the first commit of the walk where it became ``upstream``.
Both only look at commits on the first-parent line that touch the patch's files.
"""

from __future__ import annotations

from collections.abc import Mapping

from patchmgr.engine import CheckResult, State
from patchmgr.errors import PatchmgrError
from patchmgr.history import Walk, find_carrier, pr_number
from patchmgr.manifest import Upstream
from patchmgr.sources import GitSource, urls_for
from patchmgr.store import Store


def explain_upstream(store: Store, upstream: Upstream, overrides: Mapping[str, str], source: GitSource,
                     results: list[CheckResult]) -> None:
    """Set ``state``/``evidence`` of the results that do not apply at ``source`` (a ref past the pin)."""
    pending = [i for i, r in enumerate(results) if not r.state.applies]
    if not pending:
        return
    repo, to = source.repo, source.commit
    try:
        if not repo.has_commit(upstream.commit):
            store.ensure_commit(upstream.name, upstream.commit, urls_for(upstream, overrides))
    except PatchmgrError:
        return  # without the pin there is no range to search; the engine's state stands
    base = repo.merge_base(upstream.commit, to)
    if base is None or base == to:
        return
    series = [r.patch for r in results]
    repo.prefetch_blobs(base, to, sorted({p for r in results[: max(pending) + 1] for p in r.patch.touched_paths}))
    walk = None
    for index in pending:
        result = results[index]
        carrier = find_carrier(repo, base, to, result.patch)
        if carrier is not None:
            result.state = State.UPSTREAM
            result.evidence = f"upstream commit {carrier.sha} carries this change (same patch-id): " + _named(
                carrier.subject)
        elif result.state is State.UPSTREAM:
            walk = walk or Walk(repo, base, to, source.location, series[: max(pending) + 1])
            first = walk.history(index, result.state, None).first_commit
            if first is not None and first.state is State.UPSTREAM:
                result.evidence = (f"the reverse of the patch applies from upstream commit {first.commit} on: "
                                   + _named(first.subject))


def _named(subject: str) -> str:
    number = pr_number(subject)
    return f'"{subject}"' + (f" (PR #{number})" if number and f"#{number}" not in subject else "")
