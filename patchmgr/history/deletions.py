"""Deletion-only changes at a ref: ``upstream`` only where history shows their lines there, then removed.

A patch whose every hunk only removes lines (a file it deletes included) has a reverse that only inserts, and
an insertion applies wherever its context is: ``git apply -R --check`` passes and ``git apply --check`` fails
alike where upstream removed the lines and where they never were (a commit older than the pin, a branch that
parted from the pin's line before they came). For such a patch the engine's ``upstream`` (its reverse applies)
says only that the context is there and the lines are not. So at a git commit it stands only where the lines
were there when the two lines of history parted (the series, this patch included, applies at the merge base of
the pin and the ref) and the ref lacks them: a commit on the way from there removed them (``evidence`` names
it). Elsewhere the patch is ``nothing-to-delete``, saying why: the ref is the pin or older than it, the merge
base lacks the lines too, the patch does not apply at the merge base either, or the tree has no history (a
release).

A patch with any hunk that adds a line is left to the engine: those lines found at the patch's own place
(``classify.check_patch``'s rule) are the evidence that its change is there, its deletions a part of it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace

from patchmgr.engine.classify import check_series
from patchmgr.engine.results import CheckResult, State, TreeReader
from patchmgr.io.git_merge import merge_texts
from patchmgr.model.diff import Hunk
from patchmgr.model.errors import PatchmgrError
from patchmgr.model.manifest import Upstream
from patchmgr.model.patchfile import PatchFile
from patchmgr.sources.upstream import GitSource, Sources

NOTHING = "nothing to delete"
NOT_THERE = "the lines it deletes are not there"
NO_HISTORY = f"{NOT_THERE}, and this tree has no history to tell whether upstream removed them or they never were"


def deletes_only(patch: PatchFile) -> bool:
    """Whether every change of ``patch`` removes lines and adds none: hunks of ``-`` lines, deleted files."""
    return bool(patch.files) and all(
        diff.kind == "delete" or (diff.kind == "modify" and diff.hunks and not any(_adds(h) for h in diff.hunks))
        for diff in patch.files
    )


def _adds(hunk: Hunk) -> bool:
    """Whether ``hunk`` writes a line it did not find (a hunk that only removes keeps a part of its old lines)."""
    return bool(Counter(hunk.new_lines) - Counter(hunk.old_lines))


def judge_deletions(
    sources: Sources, upstream: Upstream, source: TreeReader, results: Sequence[CheckResult]
) -> list[CheckResult]:
    """The results, with each deletion-only patch that reads ``upstream`` only by its reverse (no carrier) made
    ``nothing-to-delete`` where history does not show upstream removing its lines; new values."""
    pending = [
        i for i, r in enumerate(results) if r.state is State.UPSTREAM and not r.carrier and deletes_only(r.patch)
    ]
    if not pending:
        return list(results)
    if isinstance(source, GitSource):
        why = _in_history(sources, upstream, source, [r.patch for r in results], pending)
    else:
        why = dict.fromkeys(pending, NO_HISTORY)
    return [
        replace(r, state=State.NOTHING_TO_DELETE, evidence=f"{why[i]}: {NOTHING}") if i in why else r
        for i, r in enumerate(results)
    ]


def held_to_base(results: Sequence[CheckResult], at_base: Callable[[], Sequence[State]] | None) -> list[State]:
    """The states of ``results``, checked at a commit of a walk from a base (``history.walk``), held to the rule
    above: a deletion-only patch that reads ``upstream`` is ``nothing-to-delete`` unless it applied at the base
    (``at_base`` gives the states there, asked only for such a patch; None where the commit is the base)."""
    states = [r.state for r in results]
    base: Sequence[State] | None = None
    for index, result in enumerate(results):
        if result.state is not State.UPSTREAM or not deletes_only(result.patch):
            continue
        if at_base is not None and base is None:
            base = at_base()
        if base is None or not (base[index].applies or base[index] is State.FUZZ):
            states[index] = State.NOTHING_TO_DELETE
    return states


def _in_history(
    sources: Sources, upstream: Upstream, source: GitSource, series: list[PatchFile], pending: list[int]
) -> dict[int, str]:
    """Why each of ``pending`` is not ``upstream`` at ``source`` (by index); a patch whose lines the merge base
    has is left out: a commit on the way to the ref removed them."""
    repo, to, pin = source.repo, source.commit, upstream.commit
    if to == pin:
        return dict.fromkeys(pending, f"{NOT_THERE}, not even at the pin it was made for")
    try:
        if not repo.has_commit(pin):
            sources.ensure_commit(upstream, pin)
    except PatchmgrError:
        return dict.fromkeys(pending, f"{NO_HISTORY} (the pin {pin[:12]} could not be fetched)")
    base = repo.merge_base(pin, to)
    if base is None:
        return dict.fromkeys(pending, f"{NO_HISTORY} (the pin {pin[:12]} and {to[:12]} share no history)")
    if base == to:
        return dict.fromkeys(
            pending,
            f"{NOT_THERE}, and never were in this history: {to[:12]} is older than the pin {pin[:12]}, so no "
            "upstream commit on the way to it removed them",
        )
    at_base = check_series(series[: max(pending) + 1], GitSource(repo, base, source.location), merge_texts)
    why = {}
    parted = f"the merge base {base[:12]} of the pin and {to[:12]}"
    for index in pending:
        state = at_base[index].state
        if state.applies or state is State.FUZZ:
            continue  # the lines were there where the lines of history parted; the ref lost them since
        if state is State.UPSTREAM:
            why[index] = f"{NOT_THERE}, and never were on this line of history: {parted} lacks them too"
        else:
            why[index] = (
                f"{NOT_THERE}, and history cannot tell whether upstream removed them: the patch is "
                f"{state.value} at {parted} as well"
            )
    return why
