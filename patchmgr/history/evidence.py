"""Evidence for ``upstream``: name the upstream commit that carries a patch's change.

A commit between the pin and the ref that carries the patch (``carriers.find_carriers``: its change to the
patch's files has the patch's own patch-id, or the patch's ``Origin``/``Applied-Upstream``/``Bug`` names it
and the ref reaches it) makes the patch ``upstream`` at the ref, even where later commits edited those lines
again so that its reverse no longer applies (``changed since``). That commit is the result's ``carrier``, and
it is the only evidence on which ``bump`` drops a patch. A patch without one that the history walk
(``walk.Walk``, as ``bisect`` walks it) shows turning ``upstream`` at a commit, its reverse applying there at
its own place, is named by that commit and has no carrier; so whatever ``bisect`` finds, ``status`` says.
The carriers of all the patches come from one pass over the range; the walk only looks at commits on the
first-parent line that touch the patch's files.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from patchmgr.engine.results import CheckResult, State
from patchmgr.history.carriers import find_carriers
from patchmgr.history.walk import Walk, pr_number
from patchmgr.model.errors import PatchmgrError
from patchmgr.model.manifest import Upstream
from patchmgr.sources.upstream import GitSource, Sources


@dataclass(frozen=True)
class Evidence:
    """Why a patch is ``upstream``: ``carrier`` is the commit that carries it (None: the walk saw its reverse
    apply from a commit on); ``changed_since``: its reverse no longer applies at the ref."""

    text: str
    carrier: str | None = None
    changed_since: bool = False


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
    carriers = find_carriers(repo, upstream, base, to, series, pending)
    walk = None
    found: dict[int, Evidence] = {}
    for index in pending:
        result = results[index]
        changed = result.state is not State.UPSTREAM  # the engine's: its reverse does not apply at the ref
        carrier = carriers.get(index)
        if carrier is not None:
            found[index] = Evidence(
                f"upstream commit {carrier.sha} carries this change ({carrier.how}): " + _named(carrier.subject),
                carrier.sha,
                changed,
            )
            continue
        walk = walk or Walk(repo, base, to, source.location, series[: max(pending) + 1])
        first = walk.history(index, result.state, None).first_commit
        if first is not None and first.state is State.UPSTREAM:
            found[index] = Evidence(
                f"the reverse of the patch applies from upstream commit {first.commit} on"
                + (", and its lines changed since" if changed else "")
                + ", but no upstream commit has its patch-id: "
                + _named(first.subject),
                changed_since=changed,
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
    # a distant look-alike no longer matters where a commit carries the patch's own change
    return replace(
        result,
        state=State.UPSTREAM,
        evidence=evidence.text,
        carrier=evidence.carrier,
        changed_since=evidence.changed_since,
        notes=[] if evidence.carrier else result.notes,
    )


def _named(subject: str) -> str:
    number = pr_number(subject)
    return f'"{subject}"' + (f" (PR #{number})" if number and f"#{number}" not in subject else "")
