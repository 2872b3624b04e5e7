"""Where an upstream's files come from at a ref: a cached git clone, or a PyPI release.

A source is a ``TreeReader`` plus the facts a report needs: which commit (None
for a release), and a description of where the bytes came from. Git is tried
first; a release stands in only when no git source answers, and the report
always says which one was used.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from patchmgr.errors import SourceError, UsageError
from patchmgr.gitio import GitRepo, RepositoryDamaged, mask_url
from patchmgr.manifest import Upstream, url_problem
from patchmgr.releases import ReleaseSource
from patchmgr.store import Store



@dataclass
class GitSource:
    repo: GitRepo
    commit: str
    location: str

    kind = "git"

    def read(self, path: str) -> bytes | None:
        return self._repairing(lambda: self.repo.read_path(self.commit, path))

    def read_blob(self, sha: str) -> bytes | None:
        return self._repairing(lambda: self.repo.read_blob(sha))

    fetched: bool = False
    # makes the cached clone again when a read finds it damaged (a truncated pack): a damaged
    # cache is the cache's problem, never a file reported `missing`
    repair: Callable[[RepositoryDamaged], GitRepo] | None = None

    def _repairing(self, read):
        try:
            return read()
        except RepositoryDamaged as exc:
            if self.repair is None:
                raise
            self.repo = self.repair(exc)
            self.repair = None
            return read()

    @property
    def description(self) -> str:
        return f"git {mask_url(self.location)}" + ("" if self.fetched else " (cached)")


def parse_source_overrides(values: list[str] | None) -> dict[str, str]:
    """``--source NAME=LOCATION`` options as a mapping; a malformed one is a usage error."""
    overrides: dict[str, str] = {}
    for value in values or []:
        name, sep, location = value.partition("=")
        if not sep or not name or not location:
            raise UsageError(f"--source {value!r} is not NAME=LOCATION",
                             "for example --source mindspeed=/srv/mirrors/MindSpeed")
        problem = url_problem(location, from_command_line=True)
        if problem:
            raise UsageError(f"--source {mask_url(value)!r}: {problem}", "give a URL or a local path")
        overrides[name] = location
    return overrides


def parse_against(values: list[str] | None) -> dict[str, str]:
    refs: dict[str, str] = {}
    for value in values or []:
        name, sep, ref = value.partition("=")
        if not sep or not name or not ref:
            raise UsageError(f"--against {value!r} is not NAME=REF", "for example --against mbridge=main")
        refs[name] = ref
    return refs


def urls_for(upstream: Upstream, overrides: Mapping[str, str]) -> tuple[str, ...]:
    if upstream.name in overrides:
        return (overrides[upstream.name],)
    return upstream.urls


def open_git_source(store: Store, upstream: Upstream, ref: str | None,
                    overrides: Mapping[str, str]) -> GitSource:
    """The upstream at ``ref`` (its pin when None) from the cache, fetched if need be."""
    urls = urls_for(upstream, overrides)
    if not urls:
        raise SourceError(f"{upstream.name} has no git URL", f"pass --source {upstream.name}=PATH_OR_URL")
    store.fetched_from.pop(upstream.name, None)
    if ref is None:
        repo, commit = store.ensure_commit(upstream.name, upstream.commit, urls), upstream.commit
    else:
        repo, commit = store.resolve_ref(upstream.name, ref, urls)
    fetched = store.fetched_from.get(upstream.name)
    return GitSource(repo, commit, fetched or urls[0], fetched=fetched is not None,
                     repair=lambda exc: store.repair(upstream.name, commit, urls, exc))


def release_version(upstream: Upstream, ref: str | None) -> str | None:
    """The release version that stands for ``ref`` (the pin's ``version`` when ref is None)."""
    if ref is None:
        return upstream.version
    candidate = ref[1:] if re.match(r"^v\d", ref) else ref
    if re.match(r"^[0-9a-f]{7,40}$", candidate):
        return None
    try:
        return str(Version(candidate))
    except InvalidVersion:
        return None


def open_source(store: Store, upstream: Upstream, ref: str | None, overrides: Mapping[str, str]
                ) -> GitSource | ReleaseSource:
    """Git first; the PyPI release of the same version when no git source answers."""
    errors: list[str] = []
    explicit = upstream.name in overrides
    if explicit or upstream.urls:
        try:
            return open_git_source(store, upstream, ref, overrides)
        except SourceError as exc:
            if explicit:
                raise
            errors.append(exc.message)
    version = release_version(upstream, ref)
    if upstream.pypi and version:
        try:
            release = store.releases.open(upstream.pypi, version, upstream.package_root)
            release.fallback_from = "; ".join(errors) or None
            return release
        except SourceError as exc:
            errors.append(exc.message)
    elif upstream.pypi:
        errors.append(f"{ref!r} names no release version, so PyPI cannot stand in")
    raise SourceError("; ".join(errors) or f"{upstream.name} has no source",
                      f"pass a reachable clone with --source {upstream.name}=PATH_OR_URL")


def fetch_upstream(store: Store, upstream: Upstream, overrides: Mapping[str, str]) -> tuple[str, list[str]]:
    """Put everything a later offline ``apply`` needs into the cache; say from where, and what is absent."""
    try:
        urls = urls_for(upstream, overrides)
        if not urls:
            raise SourceError(f"{upstream.name} has no git URL", "")
        absent = store.prefetch(upstream.name, upstream.commit, urls)
        fetched = store.fetched_from.get(upstream.name, urls[0])
        return f"git {mask_url(fetched)}", absent
    except SourceError as exc:
        if upstream.name in overrides or not (upstream.pypi and upstream.version):
            raise
        release = store.releases.open(upstream.pypi, upstream.version, upstream.package_root)
        return f"{release.description} (git: {mask_url(exc.message)})", []
