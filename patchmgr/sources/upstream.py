"""Where an upstream's files come from at a ref: a cached git clone, or a PyPI release.

A source is a ``TreeReader`` plus the facts a report needs: which commit (None
for a release), and a description of where the bytes came from. Git is tried
first; a release stands in only when no git source answers, and the report
always says which one was used. ``Sources`` opens them: the cache together with
the ``--source NAME=LOCATION`` locations, the one value every layer passes down.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, TypeVar

from patchmgr.io.git_run import RepositoryDamaged
from patchmgr.model.errors import SourceError
from patchmgr.model.manifest import Upstream
from patchmgr.model.source_identity import SourceIdentity
from patchmgr.model.tag_scheme import DEFAULT_SCHEME, TagScheme
from patchmgr.model.urls import as_local_path, mask_url
from patchmgr.sources.refs import UnknownRef
from patchmgr.sources.release import DEFAULT_INDEX, ReleaseNotFound, ReleaseSource, index_url
from patchmgr.sources.store import Fetched, Store

if TYPE_CHECKING:  # io.git is imported where a clone is opened: a status read back runs no git
    from patchmgr.io.git import GitRepo

TREE_MODE = "40000"  # a folder's mode in a git tree object

T = TypeVar("T")


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

    def prefetch(self, paths: Iterable[str]) -> None:
        """Fetch what a partial clone lacks of ``paths`` at the commit in one request, before they are read."""
        wanted = sorted(set(paths))
        if wanted:
            self._repairing(lambda: self.repo.prefetch_at(self.commit, wanted))

    def is_folder(self, path: str) -> bool:
        """Whether ``path`` is a folder (a tree) at the commit: creating a file there is a conflict."""
        entry = self._repairing(lambda: self.repo.path_entries(self.commit, [path])[0])
        return entry is not None and entry[0] == TREE_MODE

    def paths(self) -> list[str]:
        """Every file's path at the commit (for a guard's glob)."""
        return self._repairing(lambda: self.repo.file_paths(self.commit))

    fetched: bool = False
    # makes the cached clone again when a read finds it damaged (a truncated pack): a damaged
    # cache is the cache's problem, never a file reported `missing`
    repair: Callable[[RepositoryDamaged], GitRepo] | None = None
    # why ``location`` cannot be reached, when the cache served a commit it already had without asking it
    unreachable: str | None = None

    def _repairing(self, read: Callable[[], T]) -> T:
        try:
            return read()
        except RepositoryDamaged as exc:
            if self.repair is None:
                raise
            self.repo = self.repair(exc)
            self.repair = None
            return read()

    @property
    def identity(self) -> SourceIdentity:
        return SourceIdentity.git(
            mask_url(self.location), cached=not self.fetched, unreachable=self.unreachable or None
        )

    @property
    def description(self) -> str:
        return self.identity.description


def local_problem(location: str) -> str | None:
    """Why a local ``location`` cannot serve as a git source (checked without git), or None (a URL is not
    contacted: the cache serves what it holds without the network)."""
    local = as_local_path(location)
    if local is None:
        return None
    if not local.exists():
        return "no such folder"
    if not local.is_dir():
        return "not a folder"
    if not ((local / ".git").exists() or ((local / "HEAD").is_file() and (local / "objects").is_dir())):
        return "not a git repository"
    return None


def release_version(upstream: Upstream, ref: str | None) -> str | None:
    """The release version that stands for ``ref`` (the pin's ``version`` when ref is None): the version a tag
    names as the upstream tags them (its ``tag-pattern``: ``core_v0.19.0`` is 0.19.0), or a version itself."""
    if ref is None:
        return upstream.version
    if re.match(r"^[0-9a-f]{7,40}$", ref):
        return None
    version = TagScheme(upstream.tag_pattern).version(ref) or DEFAULT_SCHEME.version(ref)
    return str(version) if version is not None else None


def _versions_command(project: str) -> str:
    index = index_url()
    where = "" if index == DEFAULT_INDEX else f" --index-url {mask_url(index)}"
    return f"pip index versions{where} {project}"


@dataclass(frozen=True)
class Sources:
    """Where each upstream's files come from: the clone cache (``store``), and the locations ``--source
    NAME=LOCATION`` gives (``overrides``: such a location replaces the manifest's URLs for that upstream).

    Built once per command (the CLI's ``Session``) and passed down whole: every layer below asks it for an
    upstream's URLs or its source at a ref, so the rule "``--source`` first, then the manifest" is kept here
    alone."""

    store: Store
    overrides: Mapping[str, str] = field(default_factory=dict)

    def given(self, name: str) -> bool:
        """Whether ``--source`` names upstream ``name`` (its location is then the only one tried)."""
        return name in self.overrides

    def urls(self, upstream: Upstream) -> tuple[str, ...]:
        """The git locations of ``upstream``, in the order they are tried."""
        if upstream.name in self.overrides:
            return (self.overrides[upstream.name],)
        return upstream.urls

    def resolve_ref(self, upstream: Upstream, ref: str) -> Fetched:
        """``ref`` of ``upstream`` in the cache, fetched from its locations when need be."""
        return self.store.resolve_ref(upstream.name, ref, self.urls(upstream))

    def ensure_commit(self, upstream: Upstream, commit: str) -> GitRepo:
        """The cached clone of ``upstream``, holding ``commit`` (fetched from its locations when it lacked it)."""
        return self.store.ensure_commit(upstream.name, commit, self.urls(upstream))

    def open_git(self, upstream: Upstream, ref: str | None) -> GitSource:
        """The upstream at ``ref`` (its pin when None) from the cache, fetched if need be."""
        urls = self.urls(upstream)
        if not urls:
            raise SourceError(f"{upstream.name} has no git URL", f"pass --source {upstream.name}=PATH_OR_URL")
        store = self.store
        if ref is None:
            fetched = store.fetch_commit(upstream.name, upstream.commit, urls)
        else:
            fetched = store.resolve_ref(upstream.name, ref, urls)
        commit = fetched.commit
        return GitSource(
            fetched.repo,
            commit,
            fetched.url or urls[0],
            fetched=fetched.url is not None,
            repair=lambda exc: store.repair(upstream.name, commit, urls, exc),
            unreachable=None if fetched.url is not None else local_problem(urls[0]),
        )

    def open(self, upstream: Upstream, ref: str | None) -> GitSource | ReleaseSource:
        """Git first; the PyPI release of the same version when no git source answers.

        A ref (``--against``) that a reached source does not have is bad input (``UnknownRef``,
        exit 2): a git source that answered without it (``Store.resolve_ref``), or, for an
        upstream with no git source, a version the package index does not list. When git
        is out of reach the ref may still be there: the upstream is unavailable (exit 1).
        """
        errors: list[str] = []
        explicit = self.given(upstream.name)
        tried_git = explicit or bool(upstream.urls)
        if tried_git:
            try:
                return self.open_git(upstream, ref)
            except SourceError as exc:
                if explicit:
                    raise
                errors.append(exc.message)
        version = release_version(upstream, ref)
        if upstream.pypi and version:
            try:
                release = self.store.releases.open(upstream.pypi, version, upstream.package_root)
                return replace(release, fallback_from="; ".join(errors) or None)  # a new value, the cache's is left
            except ReleaseNotFound as exc:
                if ref is not None and not tried_git:
                    raise UnknownRef(
                        f"upstream {upstream.name} has no ref {ref!r}: {exc.message}, and it has no git source",
                        f"see the released versions with `{_versions_command(upstream.pypi)}`",
                    ) from None
                errors.append(exc.message)
            except SourceError as exc:
                errors.append(exc.message)
        elif upstream.pypi:
            if ref is not None and not tried_git:
                raise UnknownRef(
                    f"upstream {upstream.name} has no ref {ref!r}: it has no git source, and {ref!r} names "
                    "no release version",
                    f"give a release version (see `{_versions_command(upstream.pypi)}`)"
                    f", or pass a clone with --source {upstream.name}=PATH_OR_URL",
                )
            errors.append(f"{ref!r} names no release version, so PyPI cannot stand in")
        raise SourceError(
            "; ".join(errors) or f"{upstream.name} has no source",
            f"pass a reachable clone with --source {upstream.name}=PATH_OR_URL",
        )

    def fetch(self, upstream: Upstream, commit: str | None = None) -> tuple[str, list[str]]:
        """Put everything a later offline ``apply`` (or, at ``commit``, ``edit --onto``) needs into the cache;
        say from where, and what is absent. Only the pin has a release to stand in for git."""
        try:
            urls = self.urls(upstream)
            if not urls:
                raise SourceError(f"{upstream.name} has no git URL", "")
            absent, fetched = self.store.prefetch(upstream.name, commit or upstream.commit, urls)
            return f"git {mask_url(fetched or urls[0])}", absent
        except SourceError as exc:
            if commit or self.given(upstream.name) or not (upstream.pypi and upstream.version):
                raise
            release = self.store.releases.open(upstream.pypi, upstream.version, upstream.package_root)
            return f"{release.description} (git: {mask_url(exc.message)})", []
