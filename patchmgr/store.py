"""The cache of upstream clones: bare, blobless where the source allows, one per upstream.

Like pre-commit's store, a pinned commit that is already cached costs no
network; otherwise each URL is tried in order (the pin first, then the whole
history as a fallback), and a half-made clone is removed on failure. Clones
are partial (``--filter=blob:none``): the engine reads only the blobs that
patches touch, and git fetches those on demand.

Two patchmgr runs may share a cache: whatever writes a clone (creating it,
pointing its remote, fetching) holds a per-upstream file lock, so a second
run waits for the first fetch and then finds the commit there. Reads take no
lock: git's objects and packs appear atomically.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

from patchmgr.errors import GitError, SourceError, UsageError
from patchmgr.gitio import FULL_SHA, GitRepo
from patchmgr.journal import FileLock, lock_timeout
from patchmgr.manifest import url_problem
from patchmgr.releases import ReleaseCache

LOCAL_UPLOAD_PACK = "git -c uploadpack.allowFilter=true -c uploadpack.allowAnySHA1InWant=true upload-pack"

Progress = Callable[[str], None]


def default_cache_dir() -> Path:
    if os.environ.get("PATCHMGR_CACHE"):
        return Path(os.environ["PATCHMGR_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "patchmgr"


def validate_ref(ref: str) -> str:
    if not ref or ref.startswith("-") or any(c in ref for c in " \t\n\r\x00~^:?*[\\") or ".." in ref:
        raise UsageError(f"{ref!r} is not a valid git ref", "give a branch, a tag or a commit id")
    return ref


def as_local_path(location: str) -> Path | None:
    """A --source location that names a folder on this machine, or None for a URL."""
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", location) or location.startswith("file::"):
        return None
    return Path(location).expanduser()


class Store:
    def __init__(self, cache_dir: Path | None = None, progress: Progress | None = None) -> None:
        self.cache_dir = cache_dir or default_cache_dir()
        self.progress = progress or (lambda message: None)
        self._open: dict[str, GitRepo] = {}
        self.releases = ReleaseCache(self.cache_dir)
        self.fetched_from: dict[str, str] = {}  # upstream -> URL fetched from in this run

    def repo_path(self, upstream: str) -> Path:
        return self.cache_dir / "git" / f"{upstream}.git"

    def lock(self, upstream: str) -> FileLock:
        """Held while writing the cached clone of ``upstream``; a fetch can take minutes, so others wait long."""
        return FileLock(self.cache_dir / "git" / f"{upstream}.lock", lock_timeout(600.0),
                        f"it is fetching {upstream} into the cache", self.progress)

    def repo(self, upstream: str) -> GitRepo:
        if upstream not in self._open:
            path = self.repo_path(upstream)
            if not (path / "HEAD").is_file():
                with self.lock(upstream):
                    if not (path / "HEAD").is_file():
                        path.parent.mkdir(parents=True, exist_ok=True)
                        GitRepo.init(path, bare=True)
            self._open[upstream] = GitRepo(path)
        return self._open[upstream]

    def ensure_commit(self, upstream: str, commit: str, urls: Sequence[str]) -> GitRepo:
        """The cached clone of ``upstream`` holding ``commit``, fetched if need be."""
        repo = self.repo(upstream)
        if repo.has_commit(commit):
            return repo
        with self.lock(upstream):
            if repo.has_commit(commit):  # another run fetched it while this one waited
                return repo
            self._fetch_commit(repo, upstream, commit, urls)
            repo.index_history(commit)
            return repo

    def _fetch_commit(self, repo: GitRepo, upstream: str, commit: str, urls: Sequence[str]) -> GitRepo:
        errors = []
        for url in urls:
            self.progress(f"fetching {upstream} {commit[:12]} from {url}")
            try:
                self._fetch(repo, url, [commit])
            except GitError as exc:
                # servers that refuse a bare commit id still serve their branches and tags
                errors.append(f"{url}: {exc.message}")
            if repo.has_commit(commit):
                return repo
            try:
                self._fetch(repo, url, ["+refs/heads/*:refs/patchmgr/heads/*", "+refs/tags/*:refs/tags/*"])
            except GitError as exc:
                errors.append(f"{url}: {exc.message}")
                continue
            if repo.has_commit(commit):
                return repo
            errors.append(f"{url}: does not have commit {commit}")
        raise SourceError(
            f"cannot get {upstream} at {commit[:12]}: " + ("; ".join(dict.fromkeys(errors)) or "no source URL"),
            f"pass a reachable clone with --source {upstream}=PATH_OR_URL",
        )

    def prefetch(self, upstream: str, commit: str, urls: Sequence[str]) -> list[str]:
        """Fetch every blob of ``commit`` into the cache, so a checkout needs no network later.

        Returns the paths no source could provide (a mirror without its large files).
        """
        with self.lock(upstream):
            return self._prefetch(upstream, commit, urls)

    def _prefetch(self, upstream: str, commit: str, urls: Sequence[str]) -> list[str]:
        repo = self.ensure_commit(upstream, commit, urls)
        absent: list[str] = []
        local = as_local_path(urls[0]) if urls else None
        if local is not None and local.exists():
            with GitRepo(local) as source:
                absent = source.missing_blobs(commit)
        lacking = set(repo.unfetched_objects(commit))
        if absent:
            lacking -= {entry.sha for path in absent if (entry := repo.tree_entry(commit, path))}
        wanted = sorted(lacking)
        for start in range(0, len(wanted), 2000):
            self.progress(f"fetching {len(wanted)} files of {upstream} {commit[:12]}")
            repo.run("fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "origin", "--",
                     *wanted[start:start + 2000])
        record = self._absent_record(upstream, commit)
        record.parent.mkdir(exist_ok=True)
        record.write_text("".join(f"{path}\n" for path in absent))
        return absent

    def _absent_record(self, upstream: str, commit: str) -> Path:
        return self.repo_path(upstream) / "patchmgr-absent" / commit

    def complete_for(self, upstream: str, commit: str) -> list[str] | None:
        """If ``prefetch`` filled the cache for ``commit``: the paths its source lacked; else None."""
        record = self._absent_record(upstream, commit)
        if not record.is_file() or not self.repo(upstream).has_commit(commit):
            return None
        return record.read_text().splitlines()

    def resolve_ref(self, upstream: str, ref: str, urls: Sequence[str]) -> tuple[GitRepo, str]:
        """The commit that ``ref`` (branch, tag or commit) names at the upstream's source."""
        validate_ref(ref)
        if FULL_SHA.match(ref):
            return self.ensure_commit(upstream, ref, urls), ref
        repo = self.repo(upstream)
        with self.lock(upstream):
            return self._resolve_fetched(repo, upstream, ref, urls)

    def _resolve_fetched(self, repo: GitRepo, upstream: str, ref: str, urls: Sequence[str]) -> tuple[GitRepo, str]:
        errors = []
        for url in urls:
            self.progress(f"fetching {upstream} {ref} from {url}")
            try:
                self._fetch(repo, url, [f"+{ref}:refs/patchmgr/against"])
                commit = repo.resolve("refs/patchmgr/against")
                if commit:
                    repo.index_history(commit)
                    return repo, commit
            except GitError as exc:
                errors.append(f"{url}: {exc.message}")
        local = repo.resolve(ref) if not urls else None
        if local:
            return repo, local
        raise SourceError(f"cannot resolve {upstream} ref {ref!r}: " + ("; ".join(dict.fromkeys(errors)) or "no source"),
                          "check the ref name, or pass --source with a clone that has it")

    def _fetch(self, repo: GitRepo, url: str, refspecs: list[str]) -> None:
        self._fetch_once(repo, url, refspecs)
        self.fetched_from[repo.path.name.removesuffix(".git")] = url

    def _fetch_once(self, repo: GitRepo, url: str, refspecs: list[str]) -> None:
        self.configure_remote(repo, url)
        repo.run("fetch", "--quiet", "--no-tags", "--filter=blob:none", "origin", "--", *refspecs)

    def configure_remote(self, repo: GitRepo, url: str) -> None:
        """Point ``origin`` of a (partial) clone at ``url``: a URL or a local repository."""
        problem = url_problem(url, from_command_line=True)
        if problem:
            raise SourceError(f"refusing source {url!r}: {problem}", "give a URL or a local path")
        local = as_local_path(url)
        if local is not None:
            if not local.exists():
                raise GitError(f"{local} does not exist")
            url = str(local.resolve())
        if repo.run_ok("remote", "get-url", "origin"):
            repo.run("remote", "set-url", "origin", "--", url)
        else:
            repo.run("remote", "add", "origin", "--", url)
            repo.run("config", "core.repositoryformatversion", "1")
            repo.run("config", "extensions.partialClone", "origin")
            repo.run("config", "remote.origin.promisor", "true")
            repo.run("config", "remote.origin.partialclonefilter", "blob:none")
        if local is not None:
            # A local source serves through a local upload-pack, which reads the
            # source's config, not ours: tell it to honour the blob filter, so
            # that a source lacking some large blobs can still serve the commit.
            repo.run("config", "remote.origin.uploadpack", LOCAL_UPLOAD_PACK)
        else:
            repo.run_ok("config", "--unset", "remote.origin.uploadpack")

    def close(self) -> None:
        for repo in self._open.values():
            repo.close()
        self._open.clear()

    def remove(self, upstream: str) -> None:
        self._open.pop(upstream, None)
        with self.lock(upstream):
            shutil.rmtree(self.repo_path(upstream), ignore_errors=True)
