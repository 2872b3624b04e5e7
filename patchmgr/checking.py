"""Check a target's patch series against its upstreams: the values that ``status`` reports."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from patchmgr.engine import CheckResult, State, check_series
from patchmgr.errors import PatchmgrError, UsageError
from patchmgr.gitio import merge_texts
from patchmgr.manifest import Target, Upstream
from patchmgr.project import Project
from patchmgr.patchfile import PatchFile
from patchmgr.releases import ReleaseSource
from patchmgr.sources import GitSource, open_source
from patchmgr.store import CacheError, Store


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
    reader: GitSource | ReleaseSource | None = field(default=None, repr=False)

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


def require_upstreams(targets: list[Target], *option_maps: Mapping[str, str]) -> None:
    """An option naming an upstream that no selected target has is a usage error, not a silent no-op."""
    known = {u.name for t in targets for u in t.upstreams}
    for names in option_maps:
        for name in names:
            if name not in known:
                where = ", ".join(t.name for t in targets)
                raise UsageError(f"no upstream {name!r} in target {where} (it has: {', '.join(sorted(known))})",
                                 "use an upstream name from the manifest")


def check_target(project: Project, target: Target, store: Store, overrides: Mapping[str, str],
                 against: Mapping[str, str], only: Sequence[str] = ()) -> TargetStatus:
    """Check every upstream of ``target`` (or only those named in ``only``)."""
    upstreams = [u for u in target.upstreams if not only or u.name in only]
    statuses = [check_upstream(project, u, store, overrides, against.get(u.name)) for u in upstreams]
    return TargetStatus(target, statuses)


def check_upstream(project: Project, upstream: Upstream, store: Store, overrides: Mapping[str, str],
                   ref: str | None) -> UpstreamStatus:
    patches = project.patches(upstream)
    shown_ref = ref or upstream.commit
    try:
        source = open_source(store, upstream, ref, overrides)
    except (UsageError, CacheError):
        raise  # bad input (a ref the upstream does not have), or a cache this machine cannot use: one error
    except PatchmgrError as exc:
        return UpstreamStatus(upstream, shown_ref, None, None, error=exc.message, hint=exc.hint)
    results = check_series(patches, source, merge_texts)
    if isinstance(source, GitSource) and ref is not None and source.commit != upstream.commit:
        from patchmgr.evidence import explain_upstream  # history code, loaded only when it can be needed
        explain_upstream(store, upstream, overrides, source, results)  # issue 6: name the carrying commit
    status = UpstreamStatus(upstream, shown_ref, source.commit, source.description, results, reader=source)
    if isinstance(source, ReleaseSource) and source.fallback_from:
        status.notes.append(f"git was out of reach, so the release stands in ({source.fallback_from})")
    if isinstance(source, GitSource) and ref is None and upstream.pypi and upstream.version:
        status.notes.append(release_drift(store, upstream, source, patches))
    return status


def release_drift(store: Store, upstream: Upstream, source: GitSource, patches: list[PatchFile]) -> str:
    """Compare the files the patches touch between the pinned commit and the pinned release."""
    try:
        release = store.releases.open(upstream.pypi, upstream.version, upstream.package_root)
    except PatchmgrError as exc:
        return f"release {upstream.version} not compared with the pin: {exc.message}"
    paths = sorted({p for patch in patches for p in patch.touched_paths})
    shipped = [p for p in paths if release.release_path(p) is not None]
    differing = [p for p in shipped if release.read(p) != source.read(p)]
    if differing:
        return (f"release {upstream.version} differs from the pinned commit in {len(differing)} of the "
                f"{len(shipped)} files the patches touch: {', '.join(differing)}")
    return f"release {upstream.version} matches the pinned commit in all {len(shipped)} files the patches touch"


def summary_counts(statuses: list[TargetStatus]) -> dict[str, int]:
    counts = {state.value: 0 for state in State}
    for target_status in statuses:
        for upstream_status in target_status.upstreams:
            for result in upstream_status.results:
                counts[result.state.value] += 1
    return counts
