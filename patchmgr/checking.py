"""Check a target's patch series against its upstreams: the values that ``status`` reports."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from patchmgr.engine import CheckResult, State, check_series
from patchmgr.errors import PatchmgrError, UsageError
from patchmgr.gitio import merge_texts
from patchmgr.manifest import Target, Upstream
from patchmgr.project import Project
from patchmgr.sources import open_git_source
from patchmgr.store import Store


@dataclass
class UpstreamStatus:
    upstream: Upstream
    ref: str  # what was asked for: the pin, or an --against ref
    commit: str | None
    source: str | None
    results: list[CheckResult] = field(default_factory=list)
    error: str | None = None  # set when no source could provide the upstream
    hint: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def available(self) -> bool:
        return self.error is None

    @property
    def ok(self) -> bool:
        return self.available and all(r.state.applies for r in self.results)


@dataclass
class TargetStatus:
    target: Target
    upstreams: list[UpstreamStatus]
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(u.ok for u in self.upstreams)


def check_target(project: Project, target: Target, store: Store, overrides: Mapping[str, str],
                 against: Mapping[str, str]) -> TargetStatus:
    for name in list(overrides) + list(against):
        target.upstream(name)  # an unknown upstream name is a usage error, not a silent no-op
    statuses = [check_upstream(project, u, store, overrides, against.get(u.name)) for u in target.upstreams]
    return TargetStatus(target, statuses)


def check_upstream(project: Project, upstream: Upstream, store: Store, overrides: Mapping[str, str],
                   ref: str | None) -> UpstreamStatus:
    patches = project.patches(upstream)
    shown_ref = ref or upstream.commit
    try:
        source = open_git_source(store, upstream, ref, overrides)
    except UsageError:
        raise
    except PatchmgrError as exc:
        return UpstreamStatus(upstream, shown_ref, None, None, error=exc.message, hint=exc.hint)
    results = check_series(patches, source, merge_texts)
    return UpstreamStatus(upstream, shown_ref, source.commit, source.description, results)


def summary_counts(statuses: list[TargetStatus]) -> dict[str, int]:
    counts = {state.value: 0 for state in State}
    for target_status in statuses:
        for upstream_status in target_status.upstreams:
            for result in upstream_status.results:
                counts[result.state.value] += 1
    return counts
