"""Move an upstream's pin to a new ref (``patchmgr bump``): refresh, drop what landed, rewrite the pin.

A bump refuses while any patch is ``conflict``, ``missing`` or ``nothing-to-delete`` (naming each),
while a guard of a patch it keeps is broken at the ref (model/guards.py),
and while a patch needs fuzz or a 3-way merge unless that was allowed
(``--allow-fuzz``, ``--allow-three-way``; a rewritten patch's ``Last-Update``
is set to today, as refresh does), so a
pin never moves to a commit its series does not apply to exactly. A patch
that is ``upstream`` leaves the series, its file removed, only on patch-id
evidence: an upstream commit whose change has the patch's own patch-id, named.
A patch that reads ``upstream`` only because its reverse applies (upstream
wrote the change its own way, or wrote something that merely looks like it)
is not dropped on that guess: the bump refuses and asks for a review, unless
``--keep`` keeps such patches. A patch whose own smoke tests all pass at the
ref without it (``--smoke``, ``smoke.absorption``: upstream by smoke) is dropped
only when the command line passes that evidence (``--drop-upstream-by-smoke``),
even where it conflicts at the ref; the manifest's ``patches`` line then names it
in a comment. A dropped patch's file and its smoke test leave together
(``maintain.leaving_tests``: a test file no other patch names). Only the ``commit``
and ``version`` lines (and ``patches`` when one is dropped) of the manifest change.

A refreshed patch whose file another target lists is not rewritten unasked
(``shared_files``): the bump refuses, or with ``--own-copy`` writes this target's
own copy and lists it in the series, or with ``--also-target NAME`` moves NAME
(the same pin and series) in the same transaction.

Everything is computed and validated first (the version, the refreshed
patches, the new manifest text); then the patch files, the removals and the
manifest are written in one journaled transaction: all of them, or none.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path

from patchmgr.maintain import manifest_edit
from patchmgr.maintain.leaving_tests import leaving_tests
from patchmgr.maintain.refresh import RefreshAction, RefreshedPatch, RefreshPlan, plan_refresh, share_rewrites
from patchmgr.maintain.shared_files import Sharing, manifest_changes, others, renamed
from patchmgr.model.errors import StateError, UsageError
from patchmgr.model.manifest import Target
from patchmgr.model.project import Project
from patchmgr.sources.upstream import Sources, release_version
from patchmgr.targets.project_files import write_files


class BumpAction(StrEnum):
    PLANNED = "planned"
    BUMPED = "bumped"
    REFUSED = "refused"
    UP_TO_DATE = "up-to-date"


@dataclass(frozen=True)
class BumpOutcome:
    target: Target
    plan: RefreshPlan
    action: BumpAction
    old_version: str | None
    new_version: str | None
    dropped: tuple[RefreshedPatch, ...] = ()
    kept: tuple[RefreshedPatch, ...] = ()  # upstream, but kept by --keep
    shared: dict[str, list[str]] = field(default_factory=dict)  # dropped patch id -> other targets listing it
    # dropped patch id -> the smoke test files removed with its file (none while another target lists the patch)
    tests_removed: Mapping[str, tuple[Path, ...]] = field(default_factory=dict)
    # upstream by their reverse only (no commit has their patch-id): the bump refuses until they are reviewed
    review: tuple[RefreshedPatch, ...] = ()
    by_smoke: Mapping[str, str] = field(default_factory=dict)  # patch id -> its smoke evidence, dropped on it
    smoke_failed: Mapping[str, str] = field(
        default_factory=dict
    )  # patch id -> the smoke test failing with it at the ref
    writes: dict[Path, bytes | None] = field(default_factory=dict, repr=False)  # the whole change, computed
    expected: dict[Path, bytes | None] = field(default_factory=dict, repr=False)  # what those files held

    @property
    def blockers(self) -> list[RefreshedPatch]:
        return [p for p in self.plan.patches if p.state.refused and p.patch.id not in self.by_smoke]

    @property
    def guard_blockers(self) -> list[RefreshedPatch]:
        """Patches the series keeps whose guards break at the ref: the pin must not move to a known-broken tree."""
        return self.plan.guards_broken

    @property
    def ok(self) -> bool:
        return self.action is not BumpAction.REFUSED


def plan_bump(
    project: Project,
    target: Target,
    name: str,
    sources: Sources,
    ref: str,
    keep: bool = False,
    allow_three_way: bool = False,
    version: str | None = None,
    allow_fuzz: bool = False,
    by_smoke: Mapping[str, str] | None = None,
    smoke_failed: Mapping[str, str] | None = None,
    sharing: Sharing | None = None,
) -> BumpOutcome:
    """What bumping ``name`` to ``ref`` would do, every byte of it computed and checked; writes nothing.

    ``by_smoke``: the patches to drop because their smoke tests all pass at ``ref`` without them (patch id -> that
    evidence, in words); ``smoke_failed``: the patches whose smoke tests fail with them at ``ref`` (patch id -> why),
    which refuse the bump as a broken guard does; ``sharing``: what to do with a refreshed patch whose file another
    target lists (``shared_files``: by default the bump refuses). (The command line has already rolled back an
    interrupted refresh, bump or export.)
    """
    manifest_edit.check_version(version, "that ref")
    upstream = target.upstream(name)
    new_version = version or release_version(upstream, ref)
    if upstream.version and new_version is None:
        raise UsageError(
            f"{ref!r} names no release version, and {upstream.name} pins version {upstream.version}",
            "pass --version X.Y.Z (the upstream's version at that ref)",
        )
    plan = plan_refresh(
        project, upstream, sources, ref, allow_three_way, target.name, allow_fuzz, sharing, decide_shared=False
    )
    by_smoke = dict(by_smoke or {})
    plan.patches = [
        replace(p, action=RefreshAction.UPSTREAM, reason=f"upstream by smoke at {ref}: {by_smoke[p.patch.id]}")
        if p.patch.id in by_smoke
        else p
        for p in plan.patches
    ]
    plan.patches = [
        replace(p, shared_with=manifest_edit.listed_elsewhere(project, target.name, upstream.name, p.patch.id))
        if p.patch.id in by_smoke and not p.shared_with
        else p
        for p in plan.patches
    ]
    outcome = BumpOutcome(
        target,
        plan,
        BumpAction.REFUSED,
        upstream.version,
        new_version if upstream.version or version else None,
        by_smoke=by_smoke,
        smoke_failed=dict(smoke_failed or {}),
    )
    if outcome.blockers or not plan.ok or outcome.guard_blockers or outcome.smoke_failed:
        return outcome
    if plan.commit == upstream.commit:
        return replace(outcome, action=BumpAction.UP_TO_DATE)
    landed = tuple(p for p in plan.patches if p.action is RefreshAction.UPSTREAM)
    if keep:
        outcome = replace(outcome, kept=landed)
    elif review := tuple(p for p in landed if p.carrier is None and p.patch.id not in by_smoke):
        return replace(outcome, review=review)
    else:
        moving = plan.movers
        shared = {p.patch.id: others(project, moving, upstream.name, p.patch.id) for p in landed} if moving else {}
        outcome = replace(outcome, dropped=landed, shared={pid: users for pid, users in shared.items() if users})
    share_rewrites(project, plan, "bump")  # a refreshed file another target lists: refused, or an own copy
    # a dropped patch's file and its smoke tests leave together (a shared one's file stays: another target lists it)
    leaving = leaving_tests(
        project, upstream.name, [p.patch for p in outcome.dropped if p.patch.id not in outcome.shared]
    )
    outcome = replace(outcome, tests_removed={pid: tuple(tests) for pid, tests in leaving.items()})
    writes, expected = _changes(project, outcome, leaving)
    return replace(outcome, writes=writes, expected=expected, action=BumpAction.PLANNED)


def _changes(
    project: Project, outcome: BumpOutcome, leaving: Mapping[str, Mapping[Path, bytes]]
) -> tuple[dict[Path, bytes | None], dict[Path, bytes | None]]:
    """Every file the bump writes (None: removes), and what each held when read; checks the new manifest.
    ``leaving``: each dropped patch's smoke test files, with what they hold, removed with it."""
    plan = outcome.plan
    upstream = plan.upstream
    writes, expected = plan.writes(), plan.expected()
    for dropped in outcome.dropped:
        if dropped.patch.id not in outcome.shared:  # another target still lists the file
            writes[dropped.patch.path] = None
            expected[dropped.patch.path] = dropped.patch.data
    for tests in leaving.values():
        for path, data in tests.items():
            writes[path] = None
            expected[path] = data
    gone = {p.patch.id for p in outcome.dropped}
    smoked = [p.patch.id for p in outcome.dropped if p.patch.id in outcome.by_smoke]
    comment = f"dropped {', '.join(smoked)} at {plan.ref}: upstream by smoke" if smoked else None
    series = renamed([pid for pid in upstream.patch_ids if pid not in gone], plan.copies)

    def edit(text: str, path: Path) -> str:
        if outcome.dropped or plan.copies:
            text = manifest_edit.series_text(text, path, upstream.name, series, comment if outcome.dropped else None)
        return manifest_edit.pin_text(text, path, upstream.name, plan.commit, plan.ref, outcome.new_version)

    moving = plan.movers
    if moving is None:  # plan_refresh was given the target: this is a bug
        raise StateError("the bump plan names no target", "this is a bug in patchmgr; please report it")
    planned = {plan.path_of(p) for p in plan.changed if p.patch.id in plan.copies}
    manifests, held = manifest_changes(project, moving, edit, planned)
    writes.update(manifests)
    expected.update(held)
    return writes, expected


def write_bump(outcome: BumpOutcome) -> BumpOutcome:
    """Carry out a planned bump: patch files, removals and the manifest, in one transaction."""
    if outcome.action is not BumpAction.PLANNED:
        raise StateError(f"nothing to write: the bump is {outcome.action}", "run patchmgr bump without --dry-run")
    plan = outcome.plan
    if plan.root is None:
        raise StateError("the bump plan names no project root", "this is a bug in patchmgr; please report it")
    write_files(plan.root, outcome.writes, outcome.expected)
    plan.written = [plan.path_of(p) for p in plan.changed]
    return replace(outcome, action=BumpAction.BUMPED)
