"""Evidence for ``upstream``: name the upstream commit that carries a patch's change.

A commit between the pin and the ref whose change to the patch's files has
the patch's own patch-id (``git patch-id --stable``) carries it: the patch is
``upstream`` then, even where later commits edited those lines again so that
its reverse no longer applies. That commit is the result's ``carrier``, and
it is the only evidence on which ``bump`` drops a patch. A patch whose
reverse applies at its own place (the engine's ``upstream``) without such a
commit is named by the first commit of the walk where it became ``upstream``,
and has no carrier. Both only look at commits on the first-parent line that
touch the patch's files.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from patchmgr.engine.results import CheckResult, State
from patchmgr.history.walk import Walk, find_carrier, pr_number
from patchmgr.model.errors import PatchmgrError
from patchmgr.model.manifest import Upstream
from patchmgr.sources.upstream import GitSource, Sources


@dataclass(frozen=True)
class Evidence:
    """Why a patch is ``upstream``: ``carrier`` is the commit with its patch-id (None: its reverse applies)."""

    text: str
    carrier: str | None = None


def find_evidence(
    sources: Sources, upstream: Upstream, source: GitSource, results: list[CheckResult]
) -> dict[int, Evidence]:
    """Evidence for the results (by index) that do not apply at ``source`` (a ref past the pin)."""
    pending = [i for i, r in enumerate(results) if not r.state.applies]
    if not pending:
        return {}
    repo, to = source.repo, source.commit
    try:
        if not repo.has_commit(upstream.commit):
            sources.ensure_commit(upstream, upstream.commit)
    except PatchmgrError:
        return {}  # without the pin there is no range to search; the engine's state stands
    base = repo.merge_base(upstream.commit, to)
    if base is None or base == to:
        return {}
    series = [r.patch for r in results]
    repo.prefetch_blobs(base, to, sorted({p for r in results[: max(pending) + 1] for p in r.patch.touched_paths}))
    walk = None
    found: dict[int, Evidence] = {}
    for index in pending:
        result = results[index]
        carrier = find_carrier(repo, base, to, result.patch)
        if carrier is not None:
            found[index] = Evidence(
                f"upstream commit {carrier.sha} carries this change (same patch-id): " + _named(carrier.subject),
                carrier.sha,
            )
        elif result.state is State.UPSTREAM:
            walk = walk or Walk(repo, base, to, source.location, series[: max(pending) + 1])
            first = walk.history(index, result.state, None).first_commit
            if first is not None and first.state is State.UPSTREAM:
                found[index] = Evidence(
                    f"the reverse of the patch applies from upstream commit {first.commit} on, "
                    "but no upstream commit has its patch-id: " + _named(first.subject)
                )
    return found


def explain_upstream(
    sources: Sources, upstream: Upstream, source: GitSource, results: list[CheckResult]
) -> list[CheckResult]:
    """The results, with those that do not apply at ``source`` replaced by ``upstream`` ones where evidence names
    the commit; new values, the engine's results are left as they are."""
    found = find_evidence(sources, upstream, source, results)
    return [_explained(result, found[index]) if index in found else result for index, result in enumerate(results)]


def _explained(result: CheckResult, evidence: Evidence) -> CheckResult:
    if evidence.carrier is None:
        return replace(result, state=State.UPSTREAM, evidence=evidence.text)
    # a distant look-alike no longer matters: the patch's own change landed
    return replace(result, state=State.UPSTREAM, evidence=evidence.text, carrier=evidence.carrier, notes=[])


def _named(subject: str) -> str:
    number = pr_number(subject)
    return f'"{subject}"' + (f" (PR #{number})" if number and f"#{number}" not in subject else "")
