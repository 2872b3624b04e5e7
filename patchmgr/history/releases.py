"""Release tags of an upstream: which are releases, which are newer than the pin, and the newest of them.

One ``git ls-remote`` of the upstream's source lists its tags and the branch its HEAD names. A tag is a release
when its ``TagScheme`` (the manifest's ``tag-pattern``, or ``matrix --refs``; ``model.tag_scheme``) reads a version
from it; versions are ordered as versions, never as text. A tag is newer than the pin (or a ``--since`` ref) when
the pin does not contain it, it descends from where the pin's line leaves the main line (the pin itself when it
is on the main line; a release branch's fork point), and, where both name one, its version is higher: a tag the
pin already contains, or one of an older release line, is never newer, whatever its version. ``choose`` is that
one rule: ``matrix``
makes its columns of what it chooses, and ``status --newest-release`` checks each upstream at the newest of them
(``tracking``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from packaging.version import Version

from patchmgr.io.git import GitRepo
from patchmgr.model.errors import GitError, PatchmgrError, SourceError, UsageError
from patchmgr.model.manifest import Track, Upstream, url_problem
from patchmgr.model.tag_scheme import DEFAULT_SCHEME, TagScheme, parse_version, release_like
from patchmgr.model.urls import as_local_path, mask_url
from patchmgr.sources.refs import NotACommit, validate_ref
from patchmgr.sources.upstream import Sources


def tag_version(name: str) -> Version | None:
    """The version a tag names with no tag-pattern (``v0.5.1``, ``0.5.1``, ``V_9_9_P2``), or None."""
    return DEFAULT_SCHEME.version(name)


def final_version(name: str) -> Version | None:
    """The version of a tag that names a final release (not a pre- or dev-release candidate), else None."""
    return DEFAULT_SCHEME.final(name)


def is_release(name: str) -> bool:
    """A tag that names a final release: a version (a patch level too), not a pre- or dev-release candidate."""
    return final_version(name) is not None


@dataclass(frozen=True)
class RemoteRefs:
    """What the upstream's source offers: its tags (name -> commit, peeled) and the branch its HEAD names."""

    tags: dict[str, str]
    head_branch: str | None  # "main"; None when HEAD is detached or absent
    head: str | None  # the commit of HEAD
    branches: dict[str, str] = field(default_factory=dict)  # the manifest's ``branch``, when the source has it


def remote_refs(sources: Sources, upstream: Upstream) -> RemoteRefs:
    """The tags and HEAD of the first of the upstream's sources that answers, in one ``git ls-remote``."""
    urls = sources.urls(upstream)
    if not urls:
        raise SourceError(f"{upstream.name} has no git URL", f"pass --source {upstream.name}=PATH_OR_URL")
    repo = sources.store.repo(upstream.name)
    errors = []
    for url in urls:
        problem = url_problem(url, from_command_line=sources.given(upstream.name))
        if problem:
            errors.append(f"refusing source {mask_url(url)!r}: {mask_url(problem)}")
            continue
        local = as_local_path(url)
        try:
            # asked directly, not through the cache's origin: nothing in the cache is written
            where = str(local.resolve()) if local else url
            branch = [f"refs/heads/{upstream.branch}"] if upstream.branch else []
            out = repo.run("ls-remote", "--symref", "--", where, "HEAD", "refs/tags/*", *branch)
        except GitError as exc:
            errors.append(f"{mask_url(url)}: {exc.message}")
            continue
        return _parse_ls_remote(out)
    raise SourceError(
        f"cannot list the tags of {upstream.name}: " + "; ".join(errors),
        f"pass a reachable clone with --source {upstream.name}=PATH_OR_URL",
    )


def _parse_ls_remote(out: str) -> RemoteRefs:
    tags: dict[str, str] = {}
    peeled: dict[str, str] = {}
    branches: dict[str, str] = {}
    head_branch = head = None
    for line in out.split("\n"):  # git's separator: a name may hold what str.splitlines also splits on
        left, _, ref = line.partition("\t")
        if left.startswith("ref: "):
            if ref == "HEAD" and left[5:].startswith("refs/heads/"):
                head_branch = left[5 + len("refs/heads/") :]
            continue
        if ref == "HEAD":
            head = left
        elif ref.startswith("refs/heads/"):
            branches[ref[len("refs/heads/") :]] = left
        elif ref.startswith("refs/tags/"):
            name = ref[len("refs/tags/") :]
            if name.endswith("^{}"):
                peeled[name[:-3]] = left
            else:
                tags[name] = left
    return RemoteRefs({name: peeled.get(name, sha) for name, sha in tags.items()}, head_branch, head, branches)


def version_order(name: str) -> tuple[int, Version, str]:
    """A tag's place among tags by version (no tag-pattern): versions in their order, then names that are none."""
    return DEFAULT_SCHEME.order(name)


def choose_tags(
    refs: RemoteRefs,
    scheme: TagScheme,
    by_pattern: bool,
    since_version: Version | None,
    prereleases: bool = False,
    include_older: bool = False,
) -> list[str]:
    """Tag names for the columns, oldest version first: those ``scheme`` matches (``by_pattern``: any such tag, as
    ``--refs`` asks), or else its release tags (with ``prereleases``, release candidates too); of a higher version
    than ``since_version`` unless ``include_older`` (a tag that names no version, and every tag when
    ``since_version`` is None, is left to the caller, which compares by history)."""
    if by_pattern:
        names = [n for n in refs.tags if scheme.matches(n)]
    else:
        version_of = scheme.version if prereleases else scheme.final
        names = [n for n in refs.tags if version_of(n) is not None]
    if since_version is not None and not include_older:
        names = [n for n in names if (version := scheme.version(n)) is None or version > since_version]
    return sorted(names, key=scheme.order)


class TagResolver:
    """Resolving tags' commits in the cache: fetched only when the cache lacks them."""

    def __init__(self, sources: Sources, upstream: Upstream, repo: GitRepo) -> None:
        self.sources, self.upstream, self.repo = sources, upstream, repo

    def commit_of(self, ref: str, advertised: str | None) -> str:
        if advertised and self.repo.has_commit(advertised):
            return advertised
        fetched = self.sources.resolve_ref(self.upstream, ref)
        self.repo = fetched.repo
        return fetched.commit


def _since(
    refs: RemoteRefs, upstream: Upstream, since: str | None, resolver: TagResolver, scheme: TagScheme
) -> tuple[Version | None, str]:
    """The version the columns must be higher than (None: history alone decides), and the commit they must
    descend from: the pin's (the version of its tag, else the manifest's ``version``), or ``--since``'s."""
    if since is None:
        on_pin = [v for n, sha in refs.tags.items() if sha == upstream.commit and (v := scheme.version(n)) is not None]
        version = max(on_pin) if on_pin else parse_version(upstream.version) if upstream.version else None
        return version, upstream.commit
    if since in refs.tags:
        version = scheme.version(since) or DEFAULT_SCHEME.version(since)
        return version, resolver.commit_of(f"refs/tags/{since}", refs.tags[since])
    return None, resolver.commit_of(since, None)  # a branch or commit: unknown is UnknownRef, exit 2


def pin_name(refs: RemoteRefs, upstream: Upstream, scheme: TagScheme | None = None) -> str:
    """The pin's tag (of those ``scheme`` reads a version from, the lowest version naming its commit; else any
    tag naming it), else its short commit id."""
    scheme = scheme or TagScheme(upstream.tag_pattern)
    named = [n for n, sha in refs.tags.items() if sha == upstream.commit]
    versioned = [n for n in named if scheme.version(n) is not None]
    return min(versioned or named, key=scheme.order) if named else upstream.commit[:12]


@dataclass(frozen=True)
class TagChoice:
    """Which tags follow the pin (``matrix --refs/--since/--include-older``): those matching ``pattern`` (else the
    release tags the upstream's ``track`` follows), newer than ``since`` (a tag, branch or commit; default: the
    pin) unless ``include_older``."""

    pattern: str | None = None
    since: str | None = None
    include_older: bool = False


RELEASES_SINCE_PIN = TagChoice()  # the release tags its track follows, since the pin


@dataclass(frozen=True)
class Chosen:
    """The tags a ``TagChoice`` chose (tag, commit; in time order: commit date, then version), the scheme that read
    their versions, what was left out and why (``notes``), and, when none was chosen, the sentence that says so."""

    tags: tuple[tuple[str, str], ...]
    scheme: TagScheme
    notes: tuple[str, ...] = ()
    none_newer: str | None = None


def _line_base(refs: RemoteRefs, upstream: Upstream, resolver: TagResolver, start: str) -> str:
    """Where the line of ``start`` leaves the source's main line (the manifest's ``branch``, else the branch its
    HEAD names): ``start`` itself when it is on the main line, its fork point when it is on a release branch.
    Upstreams tag each release on a branch of its own (Megatron-LM's core_r0.13.0, openssh's V_10_0), so no later
    release descends from an earlier release's tag: a newer one descends from that fork point (a release line
    that left the main line later), while an older release line, and the history ``start`` has, do not."""
    if upstream.branch and upstream.branch in refs.branches:
        ref, advertised = f"refs/heads/{upstream.branch}", refs.branches[upstream.branch]
    elif refs.head is not None:
        ref, advertised = (f"refs/heads/{refs.head_branch}" if refs.head_branch else "HEAD"), refs.head
    else:
        return start
    try:
        main = resolver.commit_of(ref, advertised)
    except PatchmgrError:  # the main line cannot be fetched: only the start's own descendants are newer
        return start
    return resolver.repo.merge_base(start, main) or start


def _shown(names: Sequence[str], scheme: TagScheme, most: int = 3) -> str:
    """The highest versions of ``names`` first, at most ``most`` of them, then how many more."""
    ordered = sorted(names, key=scheme.order, reverse=True)
    more = f" and {len(ordered) - most} more" if len(ordered) > most else ""
    return ", ".join(ordered[:most]) + more


def _no_release_tag(refs: RemoteRefs, upstream: Upstream, scheme: TagScheme) -> SourceError | str | None:
    """When no tag of the source names a version by ``scheme``: with a ``tag-pattern``, a SourceError (the rule
    the upstream is followed by matches nothing: never "no release is newer", an all-clear) naming the tags that
    look like releases; with none, a note naming them when there are any; else None."""
    if any(scheme.version(n) is not None for n in refs.tags):
        return None
    pattern, looking = release_like(refs.tags)
    looks = f"tags that look like releases: {', '.join(looking)}" if looking else ""
    if upstream.tag_pattern is None:
        if not looking:
            return None
        return f'no tag of {upstream.name} names a version as v1.2.3 does ({looks}): set tag-pattern = "{pattern}"'
    matched = sum(1 for n in refs.tags if scheme.matches(n))
    said = f"matches {matched} tag(s), none naming a version after {scheme.prefix!r}" if matched else "matches no tag"
    return SourceError(
        f"tag-pattern {upstream.tag_pattern!r} of {upstream.name} {said}: its releases cannot be found",
        (f'{looks}: set tag-pattern = "{pattern}"' if looking else "its source has no tag that looks like a release")
        + ' (or follow its branch: track = "branch")',
    )


def _newer(
    refs: RemoteRefs,
    upstream: Upstream,
    resolver: TagResolver,
    found: list[tuple[str, str]],
    start_commit: str,
    start_version: Version | None,
    scheme: TagScheme,
    since: str | None,
    notes: list[str],
) -> list[tuple[str, str]]:
    """Of the (tag, commit) ``found``, those newer than the start (the pin, or ``since``): not in its history, and
    descending from where its line leaves the main line (``_line_base``). ``notes`` says which tags of a higher
    version were left out, and why, when the start names a version (``found`` then holds only higher ones)."""
    base = _line_base(refs, upstream, resolver, start_commit)
    repo, start = resolver.repo, since or "the pin"
    contained = sorted(n for n, c in found if c == start_commit or repo.reaches(start_commit, c))
    elsewhere = sorted(n for n, c in found if n not in contained and not repo.reaches(c, base))
    if start_version is not None and contained:
        notes.append(
            f"left out, though of a higher version than {start}: {_shown(contained, scheme)}, which {start} "
            "already contains (older commits)"
        )
    if start_version is not None and elsewhere:
        notes.append(
            f"left out, though of a higher version than {start}: {_shown(elsewhere, scheme)}, on a release line "
            f"that leaves the main line before {start} (an older line)"
        )
    return [(n, c) for n, c in found if n not in contained and n not in elsewhere]


def choose(refs: RemoteRefs, upstream: Upstream, resolver: TagResolver, choice: TagChoice) -> Chosen:
    """The tags ``choice`` chooses, the one rule of ``matrix``'s columns and ``status --newest-release``: those
    its scheme (``--refs``, else the ``tag-pattern``) reads a release version from (release candidates too with
    ``track = "prereleases"``; any tag it matches with ``--refs``), and, unless ``include_older``, newer than the
    pin (or ``--since``): the pin does not contain it, it descends from where the pin's line leaves the main line
    (``_line_base``: the pin itself on the main line), and when both name a version, its version is higher. Any
    other tag is never newer, whatever its version: one the pin already contains (an older commit) or one of a
    release line older than the pin's is left out, with a note. The pin's own tag is left out."""
    scheme = TagScheme(choice.pattern if choice.pattern is not None else upstream.tag_pattern)
    notes: list[str] = []
    problem = _no_release_tag(refs, upstream, scheme) if choice.pattern is None else None
    if isinstance(problem, SourceError) and upstream.track is not Track.BRANCH:
        raise problem  # a branch follower decides by its tip: its tags are only shown
    if problem is not None:
        notes.append(problem if isinstance(problem, str) else problem.message)
    since_version, since_commit = _since(refs, upstream, choice.since, resolver, scheme)
    prereleases = upstream.track is Track.PRERELEASES
    names = choose_tags(refs, scheme, choice.pattern is not None, since_version, prereleases, choice.include_older)
    found = []
    for name in names:
        if not refs.tags[name].strip("0"):
            notes.append(f"tag {name!r} left out: its source lists it with no object (a broken ref)")
            continue
        try:
            validate_ref(name)
        except UsageError:
            notes.append(f"tag {name!r} left out: not a name git accepts on the command line")
            continue
        try:
            commit = resolver.commit_of(f"refs/tags/{name}", refs.tags[name])
        except NotACommit as exc:
            notes.append(f"tag {name!r} left out: it names a {exc.kind}, not a commit")
            continue
        except UsageError as exc:  # every source was reached, and none serves it (a name git lists, not fetches)
            notes.append(f"tag {name!r} left out: {exc.message}")
            continue
        if commit == upstream.commit:
            continue  # the pin's own tag
        found.append((name, commit))
    if not choice.include_older and found:
        found = _newer(refs, upstream, resolver, found, since_commit, since_version, scheme, choice.since, notes)
    repo = resolver.repo
    times = repo.commit_times([since_commit, *(commit for _name, commit in found)]) if found else {}
    found.sort(key=lambda item: (times.get(item[1], 0), scheme.order(item[0])))
    pattern = choice.pattern
    shown_start = choice.since or ("the pin (" + str(upstream.version or since_version or upstream.commit[:12]) + ")")
    none_newer = None
    if pattern is not None and not names:
        none_newer = f"no tag of {upstream.name} matches {pattern!r}"
    elif pattern is not None and not found:
        none_newer = f"no tag of {upstream.name} matching {pattern!r} is newer than {shown_start}"
    elif pattern is None and not found and upstream.track is not Track.BRANCH:  # a branch follower awaits none
        what = "release tag or release candidate" if prereleases else "release tag"
        matching = f" matching {upstream.tag_pattern!r}" if upstream.tag_pattern else ""
        none_newer = f"no {what}{matching} of {upstream.name} is newer than {shown_start}"
    return Chosen(tuple(found), scheme, tuple(notes), none_newer)
