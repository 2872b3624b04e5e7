"""Move an upstream's pin to a new ref (``patchmgr bump``): refresh, drop what landed, rewrite the pin.

A bump refuses while any patch is ``conflict`` or ``missing`` (naming each),
and while a patch needs fuzz or a 3-way merge unless that was allowed, so a
pin never moves to a commit its series does not apply to exactly. A patch
that is ``upstream`` leaves the series, its file removed, with the commit that
carries it named, unless it is kept. Only the ``commit`` and ``version`` lines
(and ``patches`` when one is dropped) of the manifest change.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from patchmgr import manifest_edit
from patchmgr.engine import State
from patchmgr.errors import StateError, UsageError
from patchmgr.manifest import Target
from patchmgr.project import Project
from patchmgr.refresh import RefreshedPatch, RefreshPlan, plan_refresh, write_refresh
from patchmgr.sources import release_version
from patchmgr.store import Store


@dataclass
class BumpOutcome:
    target: Target
    plan: RefreshPlan
    action: str  # "planned" | "bumped" | "refused" | "up-to-date"
    old_version: str | None = None
    new_version: str | None = None
    dropped: list[RefreshedPatch] = field(default_factory=list)
    kept: list[RefreshedPatch] = field(default_factory=list)  # upstream, but kept by --keep
    shared: dict[str, list[str]] = field(default_factory=dict)  # dropped patch id -> other targets listing it

    @property
    def blockers(self) -> list[RefreshedPatch]:
        return [p for p in self.plan.patches if p.state in (State.CONFLICT, State.MISSING)]

    @property
    def ok(self) -> bool:
        return self.action != "refused"


def plan_bump(project: Project, target: Target, name: str, store: Store, overrides: Mapping[str, str], ref: str,
              keep: bool = False, allow_three_way: bool = False, version: str | None = None) -> BumpOutcome:
    """What bumping ``name`` to ``ref`` would do; writes nothing."""
    upstream = target.upstream(name)
    plan = plan_refresh(project, upstream, store, overrides, ref, allow_three_way, target.name)
    new_version = version or release_version(upstream, ref)
    if upstream.version and new_version is None:
        raise UsageError(f"{ref!r} names no release version, and {upstream.name} pins version {upstream.version}",
                         "pass --version X.Y.Z (the upstream's version at that ref)")
    outcome = BumpOutcome(target, plan, "refused", upstream.version, new_version if upstream.version or version
                          else None)
    if outcome.blockers or not plan.ok:
        return outcome
    if plan.commit == upstream.commit:
        outcome.action = "up-to-date"
        return outcome
    landed = [p for p in plan.patches if p.action == "upstream"]
    if keep:
        outcome.kept = landed
    else:
        outcome.dropped = landed
        outcome.shared = {p.patch.id: p.shared_with for p in landed if p.shared_with}
    outcome.action = "planned"
    return outcome


def write_bump(outcome: BumpOutcome) -> BumpOutcome:
    """Carry out a planned bump: patch files, then the manifest's series and pin lines."""
    if outcome.action != "planned":
        raise StateError(f"nothing to write: the bump is {outcome.action}", "run patchmgr bump without --dry-run")
    plan, target = outcome.plan, outcome.target
    upstream = plan.upstream
    write_refresh(plan)
    for dropped in outcome.dropped:
        if dropped.patch.id not in outcome.shared:  # another target still lists the file
            dropped.patch.path.unlink()
    if outcome.dropped:
        gone = {p.patch.id for p in outcome.dropped}
        manifest_edit.set_series(target.path, upstream.name, [pid for pid in upstream.patch_ids if pid not in gone])
    manifest_edit.set_pin(target.path, upstream.name, plan.commit, plan.ref, outcome.new_version)
    outcome.action = "bumped"
    return outcome
