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

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from patchmgr.engine.results import CheckResult, State
from patchmgr.history.carriers import Carrier, find_carriers
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


@dataclass
class Found:
    """What one series' evidence search at one ref has found so far, for a second look at the same ref
    (``at_ref``): each patch's carrier (None: none), and the walk's evidence by patch and state there, keyed by
    the patch's index in the whole series."""

    carriers: dict[int, Carrier | None] = field(default_factory=dict)
    walked: dict[tuple[int, State], Evidence | None] = field(default_factory=dict)

    def for_another_series(self, same_before: int) -> Found:
        """What still holds when patches from index ``same_before`` on are left out of the series: a carrier is
        the patch's own (its patch-id, the commits it names), and the walk of a patch applied only the patches
        before it, so only the walks of the patches after the first one left out are walked again."""
        return Found(self.carriers, {key: found for key, found in self.walked.items() if key[0] < same_before})


def find_evidence(
    sources: Sources,
    upstream: Upstream,
    source: GitSource,
    results: list[CheckResult],
    known: Found | None = None,
    positions: Sequence[int] | None = None,
) -> dict[int, Evidence]:
    """Evidence for the results (by index) that do not apply at ``source`` (a ref past the pin); ``known``: what
    an earlier search of the same series at the same ref found (and this one adds to), keyed by ``positions``
    (each result's index in the series ``known`` was made for; by default its index in ``results``)."""
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
    known = known if known is not None else Found()
    at = list(positions) if positions is not None else list(range(len(results)))
    if unsearched := [i for i in pending if at[i] not in known.carriers]:
        carried = find_carriers(repo, upstream, base, to, series, unsearched)
        known.carriers.update({at[i]: carried.get(i) for i in unsearched})
    walk = None
    found: dict[int, Evidence] = {}
    for index in pending:
        result = results[index]
        changed = result.state is not State.UPSTREAM  # the engine's: its reverse does not apply at the ref
        carrier = known.carriers[at[index]]
        if carrier is not None:
            found[index] = Evidence(
                f"upstream commit {carrier.sha} carries this change ({carrier.how}): " + _named(carrier.subject),
                carrier.sha,
                changed,
            )
            continue
        if (at[index], result.state) not in known.walked:
            # only whether the patch turns upstream is asked: knock-on blame never makes nor unmakes that
            walk = walk or Walk(repo, base, to, source.location, series[: max(pending) + 1], blame=False)
            known.walked[(at[index], result.state)] = _walked(walk, index, result.state)
        if (evidence := known.walked[(at[index], result.state)]) is not None:
            found[index] = evidence
    return found


def _walked(walk: Walk, index: int, state: State) -> Evidence | None:
    """The walk's evidence for patch ``index`` (``state`` at the ref): the commit where it turned upstream."""
    first = walk.history(index, state, None).first_commit
    if first is None or first.state is not State.UPSTREAM:
        return None
    changed = state is not State.UPSTREAM
    return Evidence(
        f"the reverse of the patch applies from upstream commit {first.commit} on"
        + (", and its lines changed since" if changed else "")
        + ", but no upstream commit has its patch-id: "
        + _named(first.subject),
        changed_since=changed,
    )


def explain_upstream(
    sources: Sources,
    upstream: Upstream,
    source: GitSource,
    results: list[CheckResult],
    known: Found | None = None,
    positions: Sequence[int] | None = None,
) -> list[CheckResult]:
    """The results, with those that do not apply at ``source`` replaced by ``upstream`` ones where evidence names
    the commit; new values, the engine's results are left as they are (``known``, ``positions``: as
    ``find_evidence``)."""
    found = find_evidence(sources, upstream, source, results, known, positions)
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
