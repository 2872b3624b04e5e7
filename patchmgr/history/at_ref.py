"""The series checked at a ref: the one path every command takes to say what a patch's state is there.

``status`` (at the pin or ``--against``), ``refresh``, ``edit --onto``, ``import`` and ``matrix`` all ask the same
question: each patch on top of the ones before it (the engine, which names an earlier patch that a failing one
needs: ``knock_on``), its ``Guard:`` headers on the series applied as far as it applies, a deletion-only patch's
``upstream`` held to its history (``deletions``), then, at a git ref other than the pin, the patches that do not
apply there explained by the upstream commit that carries them (``evidence.explain_upstream``). The answer is one
``CheckResult`` per patch, whose ``ok`` says what every command means by OK: it applies exactly and keeps its
guards.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

from patchmgr.engine.classify import Overlay, check_series
from patchmgr.engine.results import CheckResult, Merge3, State, TreeReader
from patchmgr.history.deletions import judge_deletions
from patchmgr.io.git_merge import merge_texts
from patchmgr.model.manifest import Upstream
from patchmgr.model.patchfile import PatchFile
from patchmgr.sources.upstream import GitSource, Sources

if TYPE_CHECKING:
    from patchmgr.history.evidence import Found


def check_at_ref(
    sources: Sources, upstream: Upstream, source: TreeReader, patches: Iterable[PatchFile], explain: bool = True
) -> list[CheckResult]:
    """``patches`` checked at ``source``, guards included; with ``explain``, at a git commit other than
    ``upstream``'s pin, those that do not apply are named ``upstream`` where a commit carries them. ``explain``
    is off only for a caller that explains many refs at once (``matrix``) through the same evidence."""
    patches = list(patches)
    if isinstance(source, GitSource):  # one fetch for what a partial clone lacks, not one per file read
        source.prefetch(path for patch in patches for path in patch.touched_paths)
    if not (explain and isinstance(source, GitSource) and source.commit != upstream.commit):
        return judged(sources, upstream, source, patches, merge_texts)
    # the history walk, loaded only when it can be needed (``status`` at the pin never needs it)
    from patchmgr.history.evidence import Found

    series, known = list(patches), Found()
    kept = list(range(len(series)))
    results = _explained(sources, upstream, source, series, known, kept)
    # A patch that evidence names ``upstream`` is one that ``bump`` drops, yet the engine may have merged it in
    # (``three-way``, ``fuzz``), and the patches after it were then checked on bytes the bumped series will never
    # have. So the series is checked again without it, until no such patch is left: every verdict is made
    # against the tree the series will have, as git replaying it without the dropped patches sees it.
    settled: dict[int, CheckResult] = {}
    while dropped := {k for k, r in zip(kept, results, strict=True) if r.state is State.UPSTREAM and r.files}:
        settled.update({k: replace(r, files={}) for k, r in zip(kept, results, strict=True) if k in dropped})
        kept = [k for k in kept if k not in dropped]
        known = known.for_another_series(min(dropped))
        results = _explained(sources, upstream, source, [series[k] for k in kept], known, kept)
    by_index = {**settled, **dict(zip(kept, results, strict=True))}
    return [by_index[k] for k in range(len(series))]


def _explained(
    sources: Sources, upstream: Upstream, source: GitSource, series: list[PatchFile], known: Found, positions: list[int]
) -> list[CheckResult]:
    """``series`` checked at ``source`` and explained; ``positions``: each patch's index in the whole series
    (what ``known`` is keyed by)."""
    from patchmgr.history.evidence import explain_upstream

    # A 3-way merge (a git process per file) is most of a check past the pin, and wasted on a patch that a
    # commit carries: it reads upstream whatever the merge makes of it. So the series is checked without
    # merges first, and again with them (the evidence found kept) only when a conflict is left unexplained.
    results = explain_upstream(sources, upstream, source, judged(sources, upstream, source, series), known, positions)
    if any(r.state is State.CONFLICT for r in results):
        merged = judged(sources, upstream, source, series, merge_texts)
        results = explain_upstream(sources, upstream, source, merged, known, positions)
    return results


def judged(
    sources: Sources, upstream: Upstream, source: TreeReader, patches: Iterable[PatchFile], merge3: Merge3 | None = None
) -> list[CheckResult]:
    """The engine's results, with a deletion-only patch ``upstream`` only where history shows its lines removed
    (``deletions``): every command, ``matrix``'s columns older than the pin too, reads it so."""
    return judge_deletions(sources, upstream, source, check_series(patches, source, merge3))


def preimages(results: Iterable[CheckResult], source: TreeReader) -> list[dict[str, bytes | None]]:
    """What each patch's files held before it, the series before it applied as far as it applies (the bytes a
    rewrite of the patch turns into its result's ``files``)."""
    overlay = Overlay(source)
    found = []
    for result in results:
        found.append({path: overlay.read(path) for path in result.patch.touched_paths})
        overlay.update(result.files)
    return found
