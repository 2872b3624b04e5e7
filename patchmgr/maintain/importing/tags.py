"""The upstream's tags for the base search: listed once (``git ls-remote``), their commits fetched only on need.

A patch is often made at a release (``git diff`` in a clone checked out at ``v0.4.2``), and a release tag
often sits off the searched branch's first-parent line (on a release branch). ``Tags`` gives the tags whose
commits the cache already holds (free), or, asked to, fetches the others too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from patchmgr.history.releases import is_release, remote_refs, tag_version
from patchmgr.io.git import GitRepo
from patchmgr.model.errors import PatchmgrError, UsageError
from patchmgr.model.manifest import Upstream
from patchmgr.sources.refs import validate_ref
from patchmgr.sources.upstream import Sources


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
    _listed: dict[str, str] | None = None
    _fetched: bool = False
    notes: list[str] = field(default_factory=list)

    def _list(self) -> dict[str, str]:
        if self._listed is None:
            try:
                self._listed = dict(remote_refs(self.sources, self.upstream).tags)
            except PatchmgrError as exc:
                self.notes.append(f"the tags of {self.upstream.name} could not be listed: {exc}")
                self._listed = {}
        return self._listed

    def held(self) -> list[tuple[str, str]]:
        """(name, commit) of the tags whose commits the cache holds, release tags first, newest first."""
        tags = self._list()
        return [(n, tags[n]) for n in newest_first(list(tags)) if self.repo.has_commit(tags[n])]

    def all(self) -> list[tuple[str, str]]:
        """(name, commit) of every tag, the missing commits fetched (trees only, as the cache always is)."""
        tags = self._list()
        if not self._fetched:
            self._fetched = True
            for name in newest_first(list(tags)):
                if self.repo.has_commit(tags[name]):
                    continue
                try:
                    validate_ref(name)
                    fetched = self.sources.resolve_ref(self.upstream, f"refs/tags/{name}")
                except (PatchmgrError, UsageError) as exc:
                    self.notes.append(f"tag {name} left out of the search: {exc}")
                    continue
                tags[name] = fetched.commit
        return [(n, tags[n]) for n in newest_first(list(tags)) if self.repo.has_commit(tags[n])]
