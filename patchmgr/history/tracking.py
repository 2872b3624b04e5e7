"""Which refs follow an upstream's pin, by how it releases (its manifest's ``track``), and why each was chosen.

``track = "releases"`` (the default): its release tags newer than the pin; the newest decides. ``"prereleases"``:
its release candidates too (v0.25.1rc1); the newest of all decides. ``"branch"``: it tags no releases to wait
for, so the tip of its ``branch`` (else the branch its source's HEAD names) decides. ``tag-pattern`` keeps only
the tags it matches. ``matrix`` makes its columns of these refs, and ``status --newest-release`` checks each
upstream at the one that decides; each ref carries the rule that chose it, as every report says it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from patchmgr.history.releases import (
    RELEASES_SINCE_PIN,
    RemoteRefs,
    TagChoice,
    TagResolver,
    choose,
    pin_name,
    remote_refs,
)
from patchmgr.io.git import GitRepo
from patchmgr.model.errors import SourceError
from patchmgr.model.manifest import Track, Upstream
from patchmgr.model.tag_scheme import TagScheme
from patchmgr.sources.upstream import Sources


@dataclass(frozen=True)
class ChosenRef:
    """A ref that follows the pin: its name (a tag, a branch), its commit and the rule that chose it."""

    name: str
    commit: str
    rule: str


@dataclass(frozen=True)
class TrackedRefs:
    """The refs of one upstream that ``matrix`` shows: the pin's name, the tags after it, the branch tip."""

    pin: str
    tags: tuple[ChosenRef, ...]
    tip: ChosenRef | None
    next: ChosenRef | None  # the one that decides (None: the pin)


def track_label(upstream: Upstream) -> str:
    return f"track = {upstream.track.value}"


def tag_rule(upstream: Upstream, name: str, newest: bool, scheme: TagScheme) -> str:
    """``newest release candidate (track = prereleases)``, ``release newer than the pin (track = releases)``."""
    version = scheme.version(name)
    what = "release candidate" if version is not None and version.is_prerelease else "release"
    matching = f", tag-pattern {upstream.tag_pattern!r}" if upstream.tag_pattern else ""
    lead = f"newest {what}" if newest else f"{what} newer than the pin"
    return f"{lead} ({track_label(upstream)}{matching})"


def deciding(tags: Sequence[str], has_tip: bool, track: Track, scheme: TagScheme) -> int:
    """The position, among the pin (0), ``tags`` (in time order) and the tip, of the ref that decides: the tip for
    ``branch``; else the newest tag by version as ``scheme`` reads it, never by name (for ``releases`` the newest
    final release, any tag when none is one); else the pin: an upstream that is followed by its releases and has
    none newer is judged where it stands, not by unreleased work on its branch (shown, but deciding nothing). The
    one rule of ``matrix``'s verdict column and ``status --newest-release`` (``next_ref``)."""
    if track is Track.BRANCH and has_tip:
        return len(tags) + 1
    candidates = list(range(len(tags)))
    if track is Track.RELEASES:
        candidates = [i for i in candidates if scheme.final(tags[i]) is not None] or candidates
    return max(candidates, key=lambda i: scheme.order(tags[i])) + 1 if candidates else 0


def branch_tip(refs: RemoteRefs, upstream: Upstream, resolver: TagResolver) -> ChosenRef | None:
    """The tip of the manifest's ``branch`` (a SourceError when the source has no such branch), else of the branch
    the source's HEAD names; None when it names none."""
    decides = " (track = branch)" if upstream.track is Track.BRANCH else ""
    if upstream.branch:
        advertised = refs.branches.get(upstream.branch)
        if advertised is None:
            raise SourceError(
                f"the source of {upstream.name} has no branch {upstream.branch!r} (the manifest's branch)",
                f"set branch to one of its branches: `git ls-remote --heads URL` lists them ({track_label(upstream)})",
            )
        commit = resolver.commit_of(f"refs/heads/{upstream.branch}", advertised)
        why = decides or ", the manifest's branch"
        return ChosenRef(upstream.branch, commit, f"tip of branch {upstream.branch}{why}")
    if refs.head is None:
        return None
    branch = refs.head_branch or "HEAD"
    commit = resolver.commit_of(f"refs/heads/{branch}" if refs.head_branch else "HEAD", refs.head)
    return ChosenRef(branch, commit, f"tip of {branch}, the branch its source's HEAD names{decides}")


def tracked_refs(
    refs: RemoteRefs, upstream: Upstream, resolver: TagResolver, choice: TagChoice, notes: list[str] | None = None
) -> TrackedRefs:
    """The pin's name, the tags after it (those ``choice`` chooses: ``--refs``, ``--since``, or those its
    ``track`` follows) and the branch tip, each with the rule that chose it; ``next`` is the one that decides."""
    notes = notes if notes is not None else []
    chosen = choose(refs, upstream, resolver, choice)
    notes += [*chosen.notes, *([chosen.none_newer] if chosen.none_newer else [])]
    found, scheme = chosen.tags, chosen.scheme
    pattern, since = choice.pattern, choice.since
    tip = branch_tip(refs, upstream, resolver)
    if tip is None:
        notes.append(f"the source of {upstream.name} names no HEAD branch: no tip column")
    position = deciding([name for name, _ in found], tip is not None, upstream.track, scheme)

    def rule(name: str, index: int) -> str:
        if pattern is not None:
            return f"matches --refs {pattern!r}" + (", the newest" if index + 1 == position else "")
        if since is not None:
            return f"release newer than {since}" + (", the newest" if index + 1 == position else "")
        return tag_rule(upstream, name, index + 1 == position, scheme)

    tags = tuple(ChosenRef(name, commit, rule(name, i)) for i, (name, commit) in enumerate(found))
    chosen_ref = [None, *tags, tip][position] if position else None
    return TrackedRefs(pin_name(refs, upstream, scheme), tags, tip, chosen_ref)


@dataclass(frozen=True)
class NextRef:
    """What ``next_ref`` found: the ref that decides (None: the pin), the tags left out and why, and, when no
    release is newer, the sentence that says so (naming the tag-pattern it followed)."""

    ref: ChosenRef | None
    notes: tuple[str, ...] = ()
    none_newer: str | None = None


def next_ref(sources: Sources, upstream: Upstream, repo: GitRepo) -> NextRef:
    """The ref its ``track`` says comes next after the pin, chosen as ``matrix`` chooses its deciding column (one
    ``choose``, one ``deciding``): the newest release (or release candidate) tag since the pin, or the branch tip;
    the pin when no release is newer. A source whose refs cannot be listed, or whose tags the ``tag-pattern``
    finds no release among, is a SourceError."""
    refs = remote_refs(sources, upstream)
    resolver = TagResolver(sources, upstream, repo)
    if upstream.track is Track.BRANCH:
        tip = branch_tip(refs, upstream, resolver)
        if tip is None:
            raise SourceError(
                f"the source of {upstream.name} names no HEAD branch to follow ({track_label(upstream)})",
                'name the branch in the manifest: branch = "main"',
            )
        return NextRef(tip)
    chosen = choose(refs, upstream, resolver, RELEASES_SINCE_PIN)
    position = deciding([name for name, _ in chosen.tags], False, upstream.track, chosen.scheme)
    if not position:
        return NextRef(None, chosen.notes, chosen.none_newer)
    name, commit = chosen.tags[position - 1]
    return NextRef(ChosenRef(name, commit, tag_rule(upstream, name, True, chosen.scheme)), chosen.notes)
