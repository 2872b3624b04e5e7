"""The upstream's tags and branches for the base search: tags listed once (``git ls-remote``), every branch
and tag fetched only on need, in one fetch.

A patch is often made at a release (``git diff`` in a clone checked out at ``v0.4.2``), and a release tag
often sits off the searched branch's first-parent line (on a release branch); a patch made on a branch
(MindSpeed's ``dev``) has its preimage blobs on no tag and not on the default branch. ``Tags`` gives the tags
whose commits the cache already holds (free), or, asked to, fetches every branch and tag (``every``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from patchmgr.history.releases import RemoteRefs, is_release, remote_refs, tag_version
from patchmgr.io.git import GitRepo
from patchmgr.model.errors import PatchmgrError, UsageError
from patchmgr.model.manifest import Upstream
from patchmgr.sources.upstream import Sources

BRANCHES, REMOTES, TAGS = "refs/patchmgr/heads/", "refs/patchmgr/remotes/", "refs/tags/"


class RefKind(StrEnum):
    BRANCH = "branch"
    TAG = "tag"


@dataclass(frozen=True)
class Ref:
    """A branch or tag of the upstream, as the cache holds it: its commit, and that commit's time."""

    kind: RefKind
    name: str
    commit: str
    time: int

    @property
    def rank(self) -> tuple[bool, bool, int]:
        """Branches first, and of them development lines (a name without a digit: dev, main) before release
        branches, which fork off them; release tags before other tags; then the newest tip."""
        if self.kind is RefKind.BRANCH:
            return (False, any(ch.isdigit() for ch in self.name), -self.time)
        return (True, not is_release(self.name), -self.time)


def cached_refs(repo: GitRepo, contains: str | None = None) -> list[Ref]:
    """The upstream's branches and tags the cache holds (those whose history has ``contains``), best first."""
    fields = "%(refname)%00%(objectname)%00%(*objectname)%00%(committerdate:unix)%00%(*committerdate:unix)"
    args = ["--contains", contains] if contains else []
    out = repo.run("for-each-ref", f"--format={fields}", *args, BRANCHES, REMOTES, TAGS)
    refs = []
    for line in filter(None, out.split("\n")):
        name, commit, peeled, time, peeled_time = line.split("\0")
        kind = RefKind.TAG if name.startswith(TAGS) else RefKind.BRANCH
        short = name.removeprefix(TAGS).removeprefix(BRANCHES)
        if name.startswith(REMOTES):  # a local clone's origin/dev: its branch dev
            short = name.removeprefix(REMOTES).partition("/")[2]
            if short == "HEAD":
                continue
        refs.append(Ref(kind, short, peeled or commit, int(peeled_time or time or 0)))
    return sorted(refs, key=lambda ref: ref.rank)


def newest_first(names: list[str]) -> list[str]:
    versions = {n: version for n in names if (version := tag_version(n)) is not None}
    released = sorted((n for n in names if n in versions and is_release(n)), key=versions.__getitem__, reverse=True)
    versioned = sorted(
        (n for n in names if n in versions and not is_release(n)), key=versions.__getitem__, reverse=True
    )
    rest = sorted(n for n in names if n not in versions)
    return released + versioned + rest


@dataclass
class Tags:
    sources: Sources
    upstream: Upstream
    repo: GitRepo
    _remote: RemoteRefs | None = None
    _fetched: bool = False
    notes: list[str] = field(default_factory=list)

    def _list(self) -> dict[str, str]:
        if self._remote is None:
            try:
                self._remote = remote_refs(self.sources, self.upstream)
            except PatchmgrError as exc:
                self.notes.append(f"the tags of {self.upstream.name} could not be listed: {exc}")
                self._remote = RemoteRefs({}, None, None)
        return self._remote.tags

    def head_branch(self) -> str | None:
        """The branch the upstream's HEAD names (the default branch), when its source says."""
        self._list()
        return self._remote.head_branch if self._remote else None

    def every(self) -> list[Ref]:
        """Every branch and tag of the upstream, fetched once (commits and trees), best first."""
        if not self._fetched:
            self._fetched = True
            try:
                self.sources.store.fetch_every_ref(self.upstream.name, self.sources.urls(self.upstream))
            except (PatchmgrError, UsageError) as exc:
                self.notes.append(f"the branches and tags of {self.upstream.name} could not be fetched: {exc}")
        return cached_refs(self.repo)

    def held(self) -> list[tuple[str, str]]:
        """(name, commit) of every tag listed, release tags first, newest first: to compare commits with, never to
        read (a commit the cache lacks is not looked up: in a partial clone that would fetch it, one by one)."""
        tags = self._list()
        return [(n, tags[n]) for n in newest_first(list(tags))]

    def all(self) -> list[tuple[str, str]]:
        """(name, commit) of every tag, their commits fetched with every branch in one fetch (trees only, as the
        cache always is)."""
        tags = self._list()
        if tags:
            self.every()
        return [(n, tags[n]) for n in newest_first(list(tags)) if self.repo.has_commit(tags[n])]
