"""Release tags of an upstream: which are releases, which are newer than the pin, and the newest of them.

One ``git ls-remote`` of the upstream's source lists its tags and the branch its HEAD names. A tag is
"since" the pin (or a ``--since`` tag) by version when the starting point has one (the manifest's
``version``, or a version tag on the pin); otherwise by history: the starting point does not contain
it and it was not committed earlier (a tag of an older release branch is neither). ``matrix`` makes its
columns of these tags; ``status --newest-release`` checks each upstream at the newest.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field

from packaging.version import InvalidVersion, Version

from patchmgr.io.git import GitRepo
from patchmgr.model.errors import GitError, SourceError, UsageError
from patchmgr.model.manifest import Track, Upstream, url_problem
from patchmgr.model.urls import as_local_path, mask_url
from patchmgr.sources.refs import NotACommit, validate_ref
from patchmgr.sources.upstream import Sources

_VERSION_TAG = re.compile(r"^[vV]?(\d.*)$")


def tag_version(name: str) -> Version | None:
    """The version a tag names (``v0.5.1``, ``0.5.1``), or None."""
    match = _VERSION_TAG.match(name)
    if not match:
        return None
    try:
        return Version(match.group(1))
    except InvalidVersion:
        return None


def final_version(name: str) -> Version | None:
    """The version of a tag that names a final release (not a pre- or dev-release candidate), else None."""
    version = tag_version(name)
    return version if version is not None and not version.is_prerelease and not version.is_devrelease else None


def is_release(name: str) -> bool:
    """A tag that names a final release: a version, not a pre-, dev- or post-release candidate."""
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
    """A tag's place among tags by version: versions in their order, then names that are no version."""
    version = tag_version(name)
    return (0, version, name) if version is not None else (1, Version("0"), name)


def choose_tags(
    refs: RemoteRefs,
    pattern: str | None,
    since_version: Version | None,
    prereleases: bool = False,
    tag_pattern: str | None = None,
    include_older: bool = False,
) -> list[str]:
    """Tag names for the columns, oldest version first: those matching ``pattern`` (any tag), or else the release
    tags (with ``prereleases``, release candidates too) that match ``tag_pattern``; newer than ``since_version``
    unless ``include_older`` (a tag that names no version, and every tag when ``since_version`` is None, is left
    to the caller, which compares by history)."""
    if pattern is not None:
        names = [n for n in refs.tags if fnmatch.fnmatchcase(n, pattern)]
    else:
        version_of = tag_version if prereleases else final_version
        names = [
            n
            for n in refs.tags
            if version_of(n) is not None and (tag_pattern is None or fnmatch.fnmatchcase(n, tag_pattern))
        ]
    if since_version is not None and not include_older:
        names = [n for n in names if (version := tag_version(n)) is None or version > since_version]
    return sorted(names, key=version_order)


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
    refs: RemoteRefs, upstream: Upstream, since: str | None, resolver: TagResolver
) -> tuple[Version | None, str]:
    """The version the columns must be newer than (None: compare by ancestry), and the commit to start from."""
    if since is None:
        version = tag_version(upstream.version) if upstream.version else None
        if version is None:
            version = next(
                (
                    tag_version(n)
                    for n, sha in refs.tags.items()
                    if sha == upstream.commit and tag_version(n) is not None
                ),
                None,
            )
        return version, upstream.commit
    if since in refs.tags:
        return tag_version(since), resolver.commit_of(f"refs/tags/{since}", refs.tags[since])
    return None, resolver.commit_of(since, None)  # a branch or commit: unknown is UnknownRef, exit 2


def _later(repo: GitRepo, commit: str, start: str, start_time: int, commit_time: int) -> bool:
    """With no version to compare, a tag is "since" the starting point when the start does not contain it and it
    was not committed before it: a tag of an older release branch is neither, though the start does not contain it."""
    return commit_time >= start_time and not repo.run_ok("merge-base", "--is-ancestor", commit, start)


def pin_name(refs: RemoteRefs, upstream: Upstream) -> str:
    """The pin's tag (the lowest version naming its commit), else its short commit id."""
    return next(
        (n for n in sorted(refs.tags, key=version_order) if refs.tags[n] == upstream.commit), upstream.commit[:12]
    )


@dataclass(frozen=True)
class TagChoice:
    """Which tags follow the pin (``matrix --refs/--since/--include-older``): those matching ``pattern`` (else the
    release tags the upstream's ``track`` follows), newer than ``since`` (a tag, branch or commit; default: the
    pin) unless ``include_older``."""

    pattern: str | None = None
    since: str | None = None
    include_older: bool = False


RELEASES_SINCE_PIN = TagChoice()  # the release tags its track follows, since the pin


def release_tags(
    refs: RemoteRefs, upstream: Upstream, resolver: TagResolver, choice: TagChoice, notes: list[str] | None = None
) -> list[tuple[str, str]]:
    """(tag, commit) of the tags ``choice`` chooses, in time order (commit date, then version); the pin's own tag
    is left out. ``notes`` gets what was left out and why."""
    notes = notes if notes is not None else []
    since_version, since_commit = _since(refs, upstream, choice.since, resolver)
    prereleases = upstream.track is Track.PRERELEASES
    names = choose_tags(refs, choice.pattern, since_version, prereleases, upstream.tag_pattern, choice.include_older)
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
    times = resolver.repo.commit_times([since_commit, *(commit for _name, commit in found)]) if found else {}
    if not choice.include_older:  # a tag with no version to compare (or any, when the start has none): by history
        start_time = times.get(since_commit, 0)
        found = [
            (name, commit)
            for name, commit in found
            if (since_version is not None and tag_version(name) is not None)
            or _later(resolver.repo, commit, since_commit, start_time, times.get(commit, 0))
        ]
    found.sort(key=lambda item: (times.get(item[1], 0), version_order(item[0])))
    pattern = choice.pattern
    if pattern is not None and not names:
        notes.append(f"no tag of {upstream.name} matches {pattern!r}")
    elif pattern is not None and not found:
        start = choice.since or ("the pin (" + str(upstream.version or upstream.commit[:12]) + ")")
        notes.append(f"no tag of {upstream.name} matching {pattern!r} is newer than {start}")
    elif pattern is None and not found and upstream.track is not Track.BRANCH:  # a branch follower awaits none
        what = "release tag or release candidate" if prereleases else "release tag"
        matching = f" matching {upstream.tag_pattern!r}" if upstream.tag_pattern else ""
        notes.append(
            f"no {what}{matching} of {upstream.name} is newer than "
            f"{choice.since or ('the pin (' + str(upstream.version or upstream.commit[:12]) + ')')}"
        )
    return found
