"""Check a target's patch series against its upstreams: the values that ``status`` reports."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from patchmgr.engine.results import CheckResult, TreeReader
from patchmgr.model.errors import PatchmgrError, UsageError
from patchmgr.model.manifest import Target, Upstream
from patchmgr.model.patchfile import PatchFile
from patchmgr.model.project import Project
from patchmgr.model.source_identity import SourceIdentity
from patchmgr.sources.cache_errors import CacheError
from patchmgr.sources.release import ReleaseSource
from patchmgr.sources.store import Store
from patchmgr.sources.upstream import GitSource, Sources

if TYPE_CHECKING:  # an annotation only: the installed-files code loads with --python, not for every status
    from patchmgr.history.backports import Landed
    from patchmgr.sources.environment import InstalledDist


@dataclass
class UpstreamStatus:
    upstream: Upstream
    ref: str  # what was asked for: the pin, or an --against ref
    commit: str | None
    origin: SourceIdentity | None  # where the results were read from (None: nothing could be read)
    results: list[CheckResult] = field(default_factory=list)
    error: str | None = None  # set when no source could provide the upstream
    hint: str | None = None
    notes: list[str] = field(default_factory=list)
    # what the results were read from, as values (no live reader travels on): the release that stood in for
    # git, or the installed distribution that ``--python`` checked; neither: the git commit ``commit``
    release: ReleaseSource | None = field(default=None, repr=False)
    installed: InstalledDist | None = field(default=None, repr=False)
    # the rule that chose ``ref`` (``status --newest-release``): "newest release candidate (track = prereleases)"
    chosen_by: str | None = None
    # patch id -> whether each pull request or commit it names is in ``commit``'s history (history.backports)
    backports: dict[str, tuple[Landed, ...]] = field(default_factory=dict)

    @property
    def source(self) -> str | None:
        """Where the results were read from, as every command shows it."""
        return None if self.origin is None else self.origin.description

    @property
    def available(self) -> bool:
        return self.error is None

    @property
    def ok(self) -> bool:
        """Every patch applies exactly and keeps its guards (a broken guard is not OK even when ``clean``)."""
        return self.available and all(r.ok for r in self.results)


@dataclass
class TargetStatus:
    target: Target
    upstreams: list[UpstreamStatus]
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(u.ok for u in self.upstreams)


def with_project_warnings(
    project: Project, statuses: list[TargetStatus], targets: list[Target], named: str | None
) -> list[TargetStatus]:
    """``statuses`` (of ``targets``) as new values that warn of the patch files no manifest lists and, for the
    one target ``--target`` names (``named``), of the other manifests that do not load (the list of an
    unreadable manifest is unknown: then no file is called unlisted)."""
    others, broken = project.readable_targets() if named else (targets, [])
    unlisted = [] if broken else project.unlisted_patches(others)
    warnings = [f"{p.relative_to(project.root)} is listed by no manifest" for p in unlisted]
    warnings += [f"{line} (--target {named} does not need it; `patchmgr lint` reports it)" for line in broken]
    return [replace(status, warnings=status.warnings + warnings) for status in statuses]


def check_target(
    project: Project,
    target: Target,
    sources: Sources,
    against: Mapping[str, str],
    only: Sequence[str] = (),
    newest_release: bool = False,
    meanwhile: Callable[[], object] | None = None,
    kept: bool = False,
) -> TargetStatus:
    """Check every upstream of ``target`` (or only those named in ``only``), at its pin or its ``against`` ref;
    with ``newest_release``, an upstream without an ``against`` ref at its newest release tag since the pin.
    ``meanwhile``: the caller's own work (loading its output code), done while the cached clones open.
    ``kept``: a status at the pin is read from the cache when nothing it was made from changed, and kept there
    when it was made without the network (``check/verdicts``)."""
    upstreams = [u for u in target.upstreams if not only or u.name in only]
    pinned = not newest_release
    recalled: dict[str, tuple[str | None, UpstreamStatus | None]] = {}
    if kept and pinned:
        from patchmgr.check.verdicts import recall

        recalled = {u.name: recall(project, u, sources, UpstreamStatus) for u in upstreams if u.name not in against}
    # the manifest's own Upstream value: the key holds all of it, so the kept one is equal
    done = {u.name: replace(s, upstream=u) for u in upstreams if (s := recalled.get(u.name, (None, None))[1])}
    # the cached clones' git processes start together, and the patches are parsed while they run; the checks
    # then run one after another, in order
    settle = sources.store.open_ahead(
        {
            u.name: u.commit if pinned and u.name not in against else None
            for u in upstreams
            if sources.urls(u) and u.name not in done
        }
    )
    try:
        if meanwhile:
            meanwhile()
        series = {u.name: read_ahead(project, u) for u in upstreams if u.name not in done}
    finally:
        settle()
    statuses = [
        done[u.name]
        if u.name in done
        else check_upstream(project, u, sources, against[u.name], series[u.name])
        if u.name in against
        else check_newest_release(project, u, sources, series[u.name])
        if newest_release
        else check_upstream(project, u, sources, None, series[u.name])
        for u in upstreams
    ]
    for status in statuses:
        name = recalled.get(status.upstream.name, (None, None))[0]
        if name is not None and status.upstream.name not in done and keepable(status):
            from patchmgr.check.verdicts import keep, lean

            keep(sources, name, replace(status, results=lean(status.results)))
    return TargetStatus(target, statuses)


def keepable(status: UpstreamStatus) -> bool:
    """Whether ``status`` (at the pin) was made from the cache alone, so a later run without changes would say
    the same: its git clone had the commit, and the release it compares with was there (or it has none)."""
    if not status.available or status.release is not None or status.origin is None or not status.origin.cached:
        return False
    if status.origin.unreachable is not None:
        return False
    if any(guard.error for result in status.results for guard in result.guards):
        return False  # a guard that could not be evaluated (too slow on this machine, now): checked again
    return not any(f" {DRIFT_UNCOMPARED}: " in note for note in status.notes)


def read_ahead(project: Project, upstream: Upstream) -> Callable[[], list[PatchFile]]:
    """The patches of ``upstream``, read now and handed over by the call returned; what reading them raised is
    raised by that call, where the check would have read them (after the upstreams before it)."""
    try:
        patches = project.patches(upstream)
    except Exception as exc:  # raised again, unchanged, by the call returned
        error = exc

        def fail() -> list[PatchFile]:
            raise error

        return fail
    return lambda: patches


def check_newest_release(
    project: Project, upstream: Upstream, sources: Sources, patches: Callable[[], list[PatchFile]] | None = None
) -> UpstreamStatus:
    """``upstream`` at the ref its ``track`` says comes next (``matrix``'s deciding column): its newest release tag
    (or release candidate) since its pin, or its branch tip; at the pin when no release is newer. Refs that cannot
    be listed leave it unchecked (unavailable), never checked at the pin."""
    from patchmgr.history.tracking import next_ref, track_label  # history code, loaded only when it is asked for

    try:
        chosen = next_ref(sources, upstream, sources.open_git(upstream, None).repo)
    except (UsageError, CacheError):
        raise
    except PatchmgrError as exc:
        return UpstreamStatus(
            upstream,
            "its newest release",
            None,
            None,
            error=f"its newest release cannot be found: {exc.message}",
            hint=exc.hint,
        )
    found = chosen.ref
    status = check_upstream(project, upstream, sources, found.name if found else None, patches)
    status.chosen_by = found.rule if found else f"the pin: no release is newer ({track_label(upstream)})"
    status.notes[:0] = [
        f"checked at {found.name} ({found.commit[:12]}): {found.rule}"
        if found
        else f"{chosen.none_newer or 'no release tag is newer than the pin'}: checked at the pin "
        f"({track_label(upstream)})",
        *chosen.notes,
    ]
    return status


def check_upstream(
    project: Project,
    upstream: Upstream,
    sources: Sources,
    ref: str | None,
    read: Callable[[], list[PatchFile]] | None = None,
) -> UpstreamStatus:
    """``upstream`` checked at ``ref`` (its pin when None); ``read`` hands over its patches when they were read
    ahead (``read_ahead``)."""
    patches = read() if read else project.patches(upstream)
    shown_ref = ref or upstream.commit
    try:
        source = sources.open(upstream, ref)
    except (UsageError, CacheError):
        raise  # bad input (a ref the upstream does not have), or a cache this machine cannot use: one error
    except PatchmgrError as exc:
        return UpstreamStatus(upstream, shown_ref, None, None, error=exc.message, hint=exc.hint)
    from patchmgr.history.at_ref import check_at_ref  # the engine: not loaded by a status read back (verdicts)

    results = check_at_ref(sources, upstream, source, patches, explain=ref is not None)
    from patchmgr.history.backports import backports_at  # history code: the references' look-up

    status = UpstreamStatus(
        upstream,
        shown_ref,
        source.commit,
        source.identity,
        results,
        release=source if isinstance(source, ReleaseSource) else None,
        backports=backports_at(upstream, source, patches),
    )
    if isinstance(source, ReleaseSource) and source.fallback_from:
        status.notes.append(f"git was out of reach, so the release stands in ({source.fallback_from})")
    if isinstance(source, GitSource) and ref is None and upstream.pypi and upstream.version:
        status.notes.append(release_drift(sources.store, upstream, upstream.pypi, upstream.version, source, patches))
    return status


DRIFT_UNCOMPARED = "not compared with the pin"  # the drift note of a release that could not be read


def drift(
    ours: TreeReader, theirs: TreeReader, patches: list[PatchFile], shipped: Callable[[str], bool]
) -> tuple[list[str], list[str]]:
    """The files the patches touch that ``ours`` ships, and those of them whose bytes differ in ``theirs``: the
    one comparison behind both drift notes (a release against the pin; an installation against the pin)."""
    paths = [p for p in sorted({p for patch in patches for p in patch.touched_paths}) if shipped(p)]
    return paths, [p for p in paths if ours.read(p) != theirs.read(p)]


def release_drift(
    store: Store, upstream: Upstream, pypi: str, version: str, source: GitSource, patches: list[PatchFile]
) -> str:
    """Compare the files the patches touch between the pinned commit and the pinned release (``upstream``'s
    ``pypi`` project at ``version``: the caller has them, narrowed to names that are set)."""
    try:
        release = store.releases.open(pypi, version, upstream.package_root)
    except PatchmgrError as exc:
        return f"release {version} {DRIFT_UNCOMPARED}: {exc.message}"
    shipped, differing = drift(release, source, patches, lambda path: release.release_path(path) is not None)
    if differing:
        return (
            f"release {version} differs from the pinned commit in {len(differing)} of the "
            f"{len(shipped)} files the patches touch: {', '.join(differing)}"
        )
    return f"release {version} matches the pinned commit in {every_touched_file(len(shipped))}"


def every_touched_file(count: int) -> str:
    """'the 1 file the patches touch' / 'all 3 files the patches touch': a note that reads as a sentence."""
    return "the 1 file the patches touch" if count == 1 else f"all {count} files the patches touch"
