"""Smoke at a ref: each patch's tests run with and without it at the ref a command checked (``status --against``
or ``--newest-release``, ``bump``, ``export``, ``matrix``, each with ``--smoke``), and one verdict per patch
(``smoke.absorption``): proven, upstream (by smoke), partly upstream, failed, or not proven with its reason.

Each upstream is checked out at the ref in a scratch folder the way ``apply --into`` builds a checkout
(``targets.build``: the commit through the cache, or the release that stood in for it, then one commit per patch
with the bytes the check computed, so a patch that applies only with fuzz or a 3-way merge is in as the check
placed it, and one that does not apply at the ref is not in). The tests then run twice through
``smoke.runner.run_smoke`` (each upstream on its own Python and smoke environment): on that checkout, and on its
unpatched view, the ref itself. A test that passes there without its patch says the fix is there only when it
fails without the patch at the pin and passes with it there (else it does not detect the patch's bug), so an
upstream with such a test runs those tests at its pin too, with and without the patches, in a scratch checkout of
the pin with its whole series (unless the ref is the pin: ``smoke --both``, or a matrix whose deciding column is the
pin, take the runs there as those runs). The scratch folder is removed afterwards;
nothing of the project changes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from patchmgr.check.status import UpstreamStatus, check_upstream
from patchmgr.engine.results import CheckResult, State
from patchmgr.history.matrix import Matrix
from patchmgr.io import scratch
from patchmgr.model.errors import PatchmgrError
from patchmgr.model.manifest import Target, Upstream
from patchmgr.model.project import Project
from patchmgr.smoke.absorption import Absorption, RefVerdict, ref_verdict
from patchmgr.smoke.choice import UpstreamPython
from patchmgr.smoke.envs import Progress
from patchmgr.smoke.runner import run_smoke
from patchmgr.smoke.verdicts import PatchRun, PatchVerdict, SmokeReport, TestOutcome, Verdict
from patchmgr.sources.cache_errors import CacheError
from patchmgr.sources.upstream import Sources, release_version
from patchmgr.targets.build import build_checkout
from patchmgr.targets.trees import SmokeTree, checkout_tree

_PLACED = (State.CLEAN, State.OFFSET, State.FUZZ, State.THREE_WAY)  # in the scratch checkout as the check placed it


@dataclass
class RefSmoke:
    """Every selected patch's smoke verdict at the ref its upstream was checked at, and the two runs behind them."""

    target: str
    verdicts: list[RefVerdict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    patched: SmokeReport | None = None
    unpatched: SmokeReport | None = None
    at_pin: SmokeReport | None = None  # without the patches at the pins, where a test passed at the ref without one
    at_pin_patched: SmokeReport | None = None  # with them there, for the same patches

    @property
    def all_proven(self) -> bool:
        """Every patch proven (``smoke --both`` exits 0 on this alone, as ``smoke`` does)."""
        return bool(self.verdicts) and all(v.verdict is Absorption.PROVEN for v in self.verdicts)

    def with_verdict(self, verdict: Absorption) -> list[RefVerdict]:
        return [v for v in self.verdicts if v.verdict is verdict]

    def of(self, upstream: str, patch: str) -> RefVerdict | None:
        return next((v for v in self.verdicts if v.upstream == upstream and v.patch == patch), None)

    def evidence(self, drop: bool) -> tuple[dict[str, str], dict[str, str]]:
        """For ``bump``: the patches to drop as upstream by smoke (when ``drop``), and those whose tests fail with
        them; each patch id with its reason."""
        upstream = {v.patch: v.reason for v in self.with_verdict(Absorption.UPSTREAM)} if drop else {}
        return upstream, {v.patch: v.reason for v in self.with_verdict(Absorption.FAILED)}

    @property
    def ok(self) -> bool:
        """No patch fails its tests at the ref (a patch that is not proven, or upstream, is no failure)."""
        return not self.with_verdict(Absorption.FAILED)


@dataclass(frozen=True)
class SmokeOptions:
    """How the tests run (``smoke``'s own options): the device lanes, each test's time limit, progress."""

    device: str = "auto"
    timeout: float | None = None
    progress: Progress | None = None
    python: str | None = None  # the interpreter that runs the tests (``smoke --python``); None: each upstream's own


def smoke_at_refs(
    project: Project,
    target: Target,
    statuses: Sequence[UpstreamStatus],
    sources: Sources,
    options: SmokeOptions | None = None,
) -> RefSmoke:
    """Each patch of ``statuses`` (each upstream checked at a ref) smoke-tested there, with and without it."""
    smoke = RefSmoke(target.name)
    options = options or SmokeOptions()
    with scratch.folder("smoke-at-ref") as where:
        trees = [_scratch_tree(status, sources, Path(where), target.name, smoke.notes) for status in statuses]
        smoke.patched, smoke.unpatched = _both_runs(project, target, trees, options, smoke)
        at_pins = [_passing_without(smoke, s.upstream) for s in statuses if not _at_the_pin(s)]
        pin_left_out = _run_at_pins(project, target, at_pins, sources, Path(where) / "pins", options, smoke)
    for status in statuses:
        left_out = {r.patch.id: _not_applied(r, status.ref) for r in status.results}
        _judge(smoke, project, status.upstream, status.ref, left_out, None if _at_the_pin(status) else pin_left_out)
    return smoke


def smoke_checkout(
    project: Project,
    target: Target,
    upstream: Upstream,
    checkout: Path,
    at: tuple[str, str],
    left_out: Mapping[str, str],
    sources: Sources,
    options: SmokeOptions | None = None,
) -> RefSmoke:
    """The patches of an edit checkout (``export --smoke``: one commit per patch on the commit of ``at``, a (ref,
    commit) pair) smoke-tested there, with and without them; ``left_out``: the patches not in it, with why.
    ``sources``: where the pin is read, for the run without the patches there when a test passes without its
    patch in the checkout."""
    ref, base = at
    options = options or SmokeOptions()
    smoke = RefSmoke(
        target.name, notes=[f"{upstream.name}: smoke at {ref} ({base[:12]}) in the edit checkout {checkout}"]
    )
    smoke.patched, smoke.unpatched = _both_runs(
        project, target, [checkout_tree(upstream, checkout, base)], options, smoke
    )
    pinned, needed = base == upstream.commit, _passing_without(smoke, upstream)
    pin_left_out: dict[str, str] = {}
    if not pinned and needed.patch_ids:
        with scratch.folder("smoke-at-pin") as where:
            pin_left_out = _run_at_pins(project, target, [needed], sources, Path(where), options, smoke)
    _judge(smoke, project, upstream, ref, left_out, None if pinned else pin_left_out)
    return smoke


def smoke_both(project: Project, target: Target, trees: list[SmokeTree], options: SmokeOptions) -> RefSmoke:
    """``smoke --both``: the patches in ``trees`` (a checkout ``apply --into`` made, or an installed environment)
    tested with and without them at their pins, each with its verdict as at a ref: proven, failed, or not proven (a
    test that passes without its patch at the pin does not detect the bug there, so no test can say that the fix is
    upstream: ``its tests do not detect the bug at the pin``)."""
    smoke = RefSmoke(target.name)
    smoke.patched, smoke.unpatched = _both_runs(project, target, trees, options, smoke)
    for tree in trees:
        pinned = tree.upstream.version or tree.upstream.commit[:12]
        _judge(smoke, project, tree.upstream, pinned, {}, None)
    return smoke


def _both_runs(
    project: Project, target: Target, trees: list[SmokeTree], options: SmokeOptions, smoke: RefSmoke, where: str = ""
) -> tuple[SmokeReport, SmokeReport]:
    """The tests of ``trees`` run with the patches, then without them on the same interpreters; their notes kept."""
    pythons: dict[str, UpstreamPython] = {}  # chosen by the patched run, taken as they are by the unpatched one
    patched, unpatched = [
        run_smoke(
            project,
            target,
            trees,
            options.device,
            unpatched,
            options.python,
            _told(options, unpatched, where),
            options.timeout,
            pythons,
        )
        for unpatched in (False, True)
    ]
    smoke.notes += [note for note in dict.fromkeys(patched.notes + unpatched.notes) if note not in smoke.notes]
    return patched, unpatched


def _told(options: SmokeOptions, unpatched: bool, where: str = "") -> Progress | None:
    """The progress of one of the runs, each line saying which."""
    progress = options.progress
    if progress is None:
        return None
    run = ("without the patches" if unpatched else "with the patches") + where
    return lambda message: progress(f"{run}: {message}")


def _at_the_pin(status: UpstreamStatus) -> bool:
    """Whether ``status`` was checked at its pin's own commit: its run without the patches is the pin's."""
    return status.commit is not None and status.commit == status.upstream.commit


def _passing_without(smoke: RefSmoke, upstream: Upstream) -> Upstream:
    """``upstream`` with only its patches one of whose tests passed at the ref without them: only theirs need the
    run at the pin (none: no run there)."""
    run = smoke.unpatched
    passing = (
        {r.patch for r in run.results if r.upstream == upstream.name and r.result is TestOutcome.PASSED}
        if run
        else set()
    )
    return replace(upstream, patch_ids=tuple(p for p in upstream.patch_ids if p in passing))


def _run_at_pins(
    project: Project,
    target: Target,
    upstreams: Sequence[Upstream],
    sources: Sources,
    where: Path,
    options: SmokeOptions,
    smoke: RefSmoke,
) -> dict[str, str]:
    """The tests of ``upstreams``' patches (each narrowed to those a test of which passed at the ref without them)
    run with and without the patches at their pins, each in a scratch checkout of the pin with the upstream's whole
    series: those runs say whether a test that passes at the ref without its patch detects the patch's bug at all.
    Returns the patches (by upstream and id, ``upstream/id``) that the pin's checkout does not hold, with why."""
    upstreams = [upstream for upstream in upstreams if upstream.patch_ids]
    left_out: dict[str, str] = {}
    if not upstreams:
        return left_out
    trees = [_pin_tree(project, target, upstream, sources, where, smoke.notes, left_out) for upstream in upstreams]
    smoke.at_pin_patched, smoke.at_pin = _both_runs(project, target, trees, options, smoke, " at the pin")
    return left_out


def _pin_tree(
    project: Project,
    target: Target,
    upstream: Upstream,
    sources: Sources,
    where: Path,
    notes: list[str],
    left_out: dict[str, str],
) -> SmokeTree:
    """A scratch checkout of ``upstream``'s pin with its whole series (the target's, so that each patch sits on
    those before it, as apply puts it), or why there is none (its tests then did not run there); only the tests of
    ``upstream``'s (narrowed) patches run in it. ``left_out`` is given each patch that does not apply at the pin."""
    pin = upstream.commit[:12]
    series = next((u for u in target.upstreams if u.name == upstream.name), upstream)
    status = check_upstream(project, series, sources, None)
    if not status.available:
        return SmokeTree(upstream, None, f"{upstream.name} could not be read at its pin {pin}: {status.error}")
    try:
        built = build_checkout(status, sources, where, target.name)
    except CacheError:
        raise  # a cache that is not this user's stops every command
    except PatchmgrError as exc:  # the pin cannot be had here: what its tests would say there is not known
        return SmokeTree(upstream, None, f"{exc.message}; {exc.hint}" if exc.hint else exc.message)
    for result in status.results:
        if why := _not_applied(result, f"the pin {pin}"):
            left_out[f"{upstream.name}/{result.patch.id}"] = why
    notes.append(
        f"{upstream.name}: its smoke tests ran at the pin ({pin}) too, with and without the patches, in a scratch "
        "checkout: a test that passes at the ref without its patch counts only if it fails there without it and "
        "passes with it"
    )
    return checkout_tree(upstream, where / upstream.name, built.checkout_part().base_commit)


def _judge(
    smoke: RefSmoke,
    project: Project,
    upstream: Upstream,
    ref: str,
    left_out: Mapping[str, str],
    pin_left_out: Mapping[str, str] | None,
) -> None:
    """Each patch's verdict from the runs; ``left_out``: why a patch is not in the patched tree ("" or absent: it
    is); ``pin_left_out``: None when the runs at the ref are the pin's, else why a patch (``upstream/id``) is not in
    the pin's checkout (the runs at the pin, ``smoke.at_pin`` and ``smoke.at_pin_patched``, hold the rest)."""
    assert smoke.patched is not None and smoke.unpatched is not None
    patched, unpatched = smoke.patched, smoke.unpatched
    no_run = SmokeReport(smoke.target, unpatched=True)  # none ran at a pin: no test needed it
    for patch in project.patches(upstream):
        without = _run_of(unpatched, upstream.name, patch.id)
        pin, pin_with = without, None
        if pin_left_out is not None:
            not_run = "its tests did not run at the pin"
            pin = _run_of(smoke.at_pin or no_run, upstream.name, patch.id, not_run)
            pin_with = _run_of(smoke.at_pin_patched or no_run, upstream.name, patch.id, not_run)
            if why := pin_left_out.get(f"{upstream.name}/{patch.id}", ""):
                pin_with = PatchRun(replace(pin_with.verdict, verdict=Verdict.NOT_PROVEN, reason=why))
        with_patch = _run_of(patched, upstream.name, patch.id)
        smoke.verdicts.append(ref_verdict(ref, with_patch, without, pin, left_out.get(patch.id, ""), pin_with))


def smoke_at_ref(
    project: Project,
    target: Target,
    upstream: Upstream,
    sources: Sources,
    ref: str,
    options: SmokeOptions | None = None,
) -> RefSmoke:
    """``upstream``'s patches smoke-tested at ``ref`` (``bump --smoke``), checked there as ``status --against``
    checks them."""
    return smoke_at_refs(project, target, [check_upstream(project, upstream, sources, ref)], sources, options)


def smoke_matrices(
    project: Project, target: Target, matrices: Sequence[Matrix], sources: Sources, options: SmokeOptions | None = None
) -> RefSmoke:
    """``matrix --smoke``: each upstream's patches smoke-tested at the column that decides the matrix's verdict (the
    newest release tag, or the tip with track = branch, else the pin), checked there as ``status --against`` does."""
    statuses = []
    for matrix in matrices:
        if matrix.error is not None or not matrix.columns:
            continue
        column = matrix.columns[matrix.verdict_column]
        status = check_upstream(project, matrix.upstream, sources, column.commit)
        statuses.append(replace(status, ref=column.name))
    return smoke_at_refs(project, target, statuses, sources, options)


def _scratch_tree(status: UpstreamStatus, sources: Sources, scratch: Path, target: str, notes: list[str]) -> SmokeTree:
    upstream = status.upstream
    if not status.available:
        return SmokeTree(upstream, None, f"{upstream.name} could not be read at {status.ref}: {status.error}")
    built = build_checkout(status, sources, scratch, target)
    placed = [f"{r.patch.id} ({r.state.value})" for r in status.results if r.state in (State.FUZZ, State.THREE_WAY)]
    left = [f"{r.patch.id} ({r.state.value})" for r in status.results if r.state not in _PLACED]
    said = f"{upstream.name}: smoke at {status.ref} ({(status.commit or built.checkout_part().base_commit)[:12]})"
    said += f" in a scratch checkout, {len(status.results) - len(left)} of {len(status.results)} patches applied"
    said += f"; as the check placed them: {', '.join(placed)}" if placed else ""
    said += f"; not applied there: {', '.join(left)}" if left else ""
    notes.append(said)
    # the version of the code under test (not the pin's) chooses the smoke environment (smoke-env per versions)
    tested = replace(upstream, version=release_version(upstream, status.ref))
    return checkout_tree(tested, scratch / upstream.name, built.checkout_part().base_commit)


def _run_of(run: SmokeReport, upstream: str, patch: str, missing: str = "the smoke run gave it no verdict") -> PatchRun:
    """One patch's verdict and results in ``run`` (``missing``: the reason when the run has none of it)."""
    found = (v for v in run.verdicts if v.upstream == upstream and v.patch == patch)
    verdict = next(found, PatchVerdict(patch, upstream, Verdict.NOT_PROVEN, missing))
    return PatchRun(verdict, tuple(r for r in run.results if r.upstream == upstream and r.patch == patch))


def _not_applied(result: CheckResult, ref: str) -> str:
    if result.state in _PLACED:
        return ""
    return f"it does not apply at {ref} ({result.state.value}), so the scratch checkout does not hold it"
