"""The cache of upstream clones: bare, blobless where the source allows, one per upstream.

Like pre-commit's store, a pinned commit that is already cached costs no
network; otherwise each URL is tried in order (the pin first, then the whole
history as a fallback), and a half-made clone is removed on failure. Clones
are partial (``--filter=blob:none``): the engine reads only the blobs that
patches touch, and git fetches those on demand.

The cache is trusted only as far as patchmgr made it (``CacheHealth._clone_problem``, in cache_trust):
git runs in a cached clone only when the cache folder, the clone and its config
belong to the user running patchmgr (git's ``safe.directory`` rule), and when
that config holds nothing but the keys patchmgr itself writes; every config key
that runs a program is overridden besides (``io.git_run.untrusted_repo_config``). A
clone git cannot read (a garbage HEAD or config, a truncated pack, a folder a
killed run left half-made) is removed and fetched again, once, with a note.
A cache that cannot be made or written (a full disk, no free inodes, a
read-only file system) is one ``CacheError`` with that cause, for the whole
run: never an upstream reported unavailable.

Two patchmgr runs may share a cache: whatever writes a clone (creating it,
pointing its remote, fetching) holds a per-upstream file lock, so a second
run waits for the first fetch and then finds the commit there. Reads take no
lock: git's objects and packs appear atomically.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from patchmgr.io.disk import git_problem, os_problem
from patchmgr.io.git_run import RepositoryDamaged
from patchmgr.io.locks import FileLock, lock_timeout
from patchmgr.model.errors import GitError, SourceError, StateError, UsageError
from patchmgr.model.urls import FULL_SHA, as_local_path, mask_url
from patchmgr.sources.abbreviated import by_prefix, is_abbreviated
from patchmgr.sources.cache_errors import CacheError, CacheLock, NotARepository, disk_hint, require_repository, said_at
from patchmgr.sources.cache_packs import keep_packs_few
from patchmgr.sources.cache_refs import recalled, remember
from patchmgr.sources.cache_trust import CacheHealth
from patchmgr.sources.origin import UNUSABLE, point_origin, source_hint
from patchmgr.sources.refs import EVERY_REF, NO_SUCH_REF, RefNotFound, require_commit, unknown_ref, validate_ref
from patchmgr.sources.release import ReleaseCache

if TYPE_CHECKING:  # io.git is imported where a clone is opened: a status read back runs no git
    from patchmgr.io.git import GitRepo

Progress = Callable[[str], None]
T = TypeVar("T")


def default_cache_dir() -> Path:
    if os.environ.get("PATCHMGR_CACHE"):
        return Path(os.environ["PATCHMGR_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "patchmgr"


@dataclass(frozen=True)
class Fetched:
    """The cached clone holding ``commit``; ``url`` is where this call fetched it from (None: the cache had it)."""

    repo: GitRepo
    commit: str
    url: str | None = None


class Store(CacheHealth):
    """The cache of blobless clones, one per upstream, shared by every run on this machine."""

    def __init__(
        self, cache_dir: Path | None = None, progress: Progress | None = None, note: Progress | None = None
    ) -> None:
        self.cache_dir = cache_dir or default_cache_dir()
        self.progress = progress or (lambda message: None)
        self.note = note or (lambda message: print(f"note: {message}", file=sys.stderr))
        self._open: dict[str, GitRepo] = {}
        self._root_checked = False
        self._repaired: set[str] = set()
        self._releases = ReleaseCache(self.cache_dir)
        self._check_root()  # a cache patchmgr cannot use or trust stops the whole run, with one error

    @property
    def releases(self) -> ReleaseCache:
        self._check_root()
        return self._releases

    def repo_path(self, upstream: str) -> Path:
        return self.cache_dir / "git" / f"{upstream}.git"

    def lock(self, upstream: str) -> FileLock:
        """Held while writing the cached clone of ``upstream``; a fetch can take minutes, so others wait long."""
        self._check_root()
        return CacheLock(
            self.cache_dir / "git" / f"{upstream}.lock",
            lock_timeout(600.0),
            f"it is fetching {upstream} into the cache",
            self.progress,
        )

    # -- the cache folder, trusted only when it is the user's own ------------------
    def repo(self, upstream: str) -> GitRepo:
        if upstream not in self._open:
            from patchmgr.io.git import GitRepo

            self._check_root()
            repo = self._check_clone(upstream)
            if repo is None:
                path = self.repo_path(upstream)
                with self.lock(upstream):
                    if not (path / "HEAD").is_file():
                        try:
                            GitRepo.init(path, bare=True)
                        except (GitError, OSError) as exc:
                            shutil.rmtree(path, ignore_errors=True)  # no half-made clone left behind
                            if isinstance(exc, OSError):
                                problem = os_problem(exc, path)
                            else:
                                cause = git_problem(exc.message, path)
                                problem = f"{cause} ({exc.message})" if cause else exc.message
                            raise CacheError(
                                f"cannot create the cached clone {path}: {problem}", disk_hint(problem)
                            ) from None
                repo = GitRepo(path, untrusted=True)
            self._open[upstream] = repo
        return self._open[upstream]

    def _repairing(self, upstream: str, action: Callable[[], T]) -> T:
        """``action`` on the cached clone; if the clone turns out damaged, it is made and fetched again, once."""
        try:
            return action()
        except RepositoryDamaged as exc:
            self._start_over(upstream, exc)
        try:
            return action()
        except RepositoryDamaged as exc:
            raise self._damaged(upstream, exc) from None

    def repair(self, upstream: str, commit: str, urls: Sequence[str], exc: RepositoryDamaged) -> GitRepo:
        """After a read found the cached clone damaged (a truncated pack): make it again with ``commit``, once."""
        self._start_over(upstream, exc)
        try:
            return self.ensure_commit(upstream, commit, urls)
        except RepositoryDamaged as again:
            raise self._damaged(upstream, again) from None

    def _start_over(self, upstream: str, exc: RepositoryDamaged) -> None:
        if exc.path != self.repo_path(upstream) or upstream in self._repaired:
            raise self._damaged(upstream, exc) from None
        self._repaired.add(upstream)
        self._discard(upstream, exc.detail)

    def _damaged(self, upstream: str, exc: RepositoryDamaged) -> StateError:
        path = self.repo_path(upstream)
        if exc.path != path:
            return StateError(exc.message, exc.hint)
        return CacheError(
            f"the cached clone of {upstream} ({path}) is damaged and fetching it again did not help: {exc.detail}",
            f"remove it (rm -rf {path}) and check the disk, then run again",
        )

    def ensure_commit(self, upstream: str, commit: str, urls: Sequence[str]) -> GitRepo:
        """The cached clone of ``upstream`` holding ``commit``, fetched if need be."""
        return self.fetch_commit(upstream, commit, urls).repo

    def fetch_commit(self, upstream: str, commit: str, urls: Sequence[str]) -> Fetched:
        """``ensure_commit``, saying where the commit was fetched from."""
        return self._repairing(upstream, lambda: self._ensure_commit(upstream, commit, urls))

    def _ensure_commit(self, upstream: str, commit: str, urls: Sequence[str]) -> Fetched:
        repo = self.repo(upstream)
        if repo.has_commit(commit):
            return Fetched(repo, commit)
        with self.lock(upstream):
            if repo.has_commit(commit):  # another run fetched it while this one waited
                return Fetched(repo, commit)
            url = self._fetch_commit(repo, upstream, commit, urls)
            repo.index_history(commit)
            return Fetched(repo, commit, url)

    def _fetch_commit(self, repo: GitRepo, upstream: str, commit: str, urls: Sequence[str]) -> str:
        """Fetch ``commit`` from the first of ``urls`` that has it; return that URL."""
        errors = []
        lacking = []  # the URLs that answered, and do not have the commit
        unusable: list[GitError] = []  # the URLs that cannot serve as a source at all (a shallow clone)
        for url in urls:
            self.progress(f"fetching {upstream} {commit[:12]} from {mask_url(url)}")
            try:
                self._fetch(repo, url, [commit])
            except RepositoryDamaged:
                raise
            except GitError as exc:
                # servers that refuse a bare commit id still serve their branches and tags
                errors.append(said_at(url, exc))
                if isinstance(exc, UNUSABLE):
                    unusable.append(exc)
                if isinstance(exc, (NotARepository, *UNUSABLE)):
                    continue
            if repo.has_commit(commit):
                return url
            try:
                self._fetch(repo, url, list(EVERY_REF))
            except RepositoryDamaged:
                raise
            except GitError as exc:
                errors.append(said_at(url, exc))
                if isinstance(exc, UNUSABLE):
                    unusable.append(exc)
                continue
            if repo.has_commit(commit):
                return url
            errors.append(f"{mask_url(url)}: does not have commit {commit}")
            lacking.append(url)
        error = RefNotFound if urls and len(lacking) == len(urls) else SourceError
        raise error(
            f"cannot get {upstream} at {commit[:12]}: " + ("; ".join(dict.fromkeys(errors)) or "no source URL"),
            source_hint(upstream, unusable),
        )

    def fetch_every_ref(self, upstream: str, urls: Sequence[str]) -> str:
        """Every branch (as refs/patchmgr/heads/*) and tag, in one fetch; the URL of the first that answers."""
        errors = []
        for url in urls:
            self.progress(f"fetching every branch and tag of {upstream} from {mask_url(url)}")
            try:
                with self.lock(upstream):
                    self._fetch(self.repo(upstream), url, list(EVERY_REF))
            except RepositoryDamaged:
                raise
            except GitError as exc:
                errors.append(said_at(url, exc))
                continue
            return url
        raise SourceError(f"cannot fetch the branches of {upstream}: " + "; ".join(errors), "")

    def prefetch(self, upstream: str, commit: str, urls: Sequence[str]) -> tuple[list[str], str | None]:
        """Fetch every blob of ``commit`` into the cache, so a checkout needs no network later. Returns the paths
        no source could provide (a mirror without its large files), and the URL it came from (None: cached)."""
        with self.lock(upstream):
            return self._repairing(upstream, lambda: self._prefetch(upstream, commit, urls))

    def _prefetch(self, upstream: str, commit: str, urls: Sequence[str]) -> tuple[list[str], str | None]:
        fetched = self.fetch_commit(upstream, commit, urls)
        repo = fetched.repo
        absent: list[str] = []
        local = as_local_path(urls[0]) if urls else None
        if local is not None and local.exists():
            from patchmgr.io.git import GitRepo

            require_repository(local)
            with GitRepo(local) as source:
                absent = source.missing_blobs(commit)
        lacking = set(repo.unfetched_objects(commit))
        if absent:
            lacking -= {entry[1] for entry in repo.path_entries(commit, absent) if entry is not None}
        wanted = sorted(lacking)
        with self._writing(repo):
            if fetched.url is None and urls and wanted:  # origin may be what an earlier run last tried, not urls[0]
                self.configure_remote(repo, urls[0])
            for start in range(0, len(wanted), 2000):
                self.progress(f"fetching {len(wanted)} files of {upstream} {commit[:12]}")
                repo.run(
                    "fetch",
                    "--quiet",
                    "--no-tags",
                    "--no-write-fetch-head",
                    "origin",
                    "--",
                    *wanted[start : start + 2000],
                )
            record = self._absent_record(upstream, commit)
            record.parent.mkdir(exist_ok=True)
            record.write_text("".join(f"{path}\n" for path in absent))
        return absent, fetched.url

    def _absent_record(self, upstream: str, commit: str) -> Path:
        return self.repo_path(upstream) / "patchmgr-absent" / commit

    def complete_for(self, upstream: str, commit: str) -> list[str] | None:
        """If ``prefetch`` filled the cache for ``commit``: the paths its source lacked; else None."""
        record = self._absent_record(upstream, commit)
        if not record.is_file() or not self.repo(upstream).has_commit(commit):
            return None
        return [path for path in record.read_text().split("\n") if path]  # LF only: a path may hold other breaks

    def resolve_ref(self, upstream: str, ref: str, urls: Sequence[str]) -> Fetched:
        """The commit that ``ref`` (branch, tag, commit id, or an abbreviated one: the commit of any branch or tag of
        the source that begins with it, ``abbreviated``) names at the upstream's source.

        A ref that every source was reached for and none has is bad input (``UnknownRef``,
        exit 2); a source that could not be reached stays a ``SourceError`` (exit 1).
        """
        validate_ref(ref)
        try:
            if FULL_SHA.match(ref):
                return self.fetch_commit(upstream, ref, urls)

            def resolve() -> Fetched:
                repo = self.repo(upstream)
                with self.lock(upstream):
                    return self._resolve_fetched(repo, upstream, ref, urls)

            return self._repairing(upstream, resolve)
        except RefNotFound:
            raise unknown_ref(upstream, ref, urls) from None

    def _resolve_fetched(self, repo: GitRepo, upstream: str, ref: str, urls: Sequence[str]) -> Fetched:
        errors = []
        lacking = []  # the URLs that answered, and have no such ref
        unusable: list[GitError] = []  # the URLs that cannot serve as a source at all (a shallow clone)
        for url in urls:
            self.progress(f"fetching {upstream} {ref} from {mask_url(url)}")
            try:
                self._fetch(repo, url, [f"+{ref}:refs/patchmgr/against"])
                commit = repo.resolve("refs/patchmgr/against")
                if commit:
                    repo.index_history(commit)
                    remember(repo, ref, commit)
                    return Fetched(repo, commit, url)
                require_commit(repo, upstream, ref)
            except RepositoryDamaged:
                raise
            except GitError as exc:
                errors.append(said_at(url, exc))
                if isinstance(exc, UNUSABLE):
                    unusable.append(exc)
                if "invalid refspec" in exc.message:  # git cannot fetch it as given, from any source
                    raise UsageError(
                        f"{ref!r} is not a valid git ref, one the upstream's source can be asked for: "
                        "git calls it an invalid refspec",
                        "give a branch, a tag or a commit id",
                    ) from None
                if NO_SUCH_REF.search(exc.message):
                    lacking.append(url)
        if lacking and is_abbreviated(ref):  # no source has a ref of that name: a commit of theirs may begin so
            every = lambda url: self._fetch(repo, url, list(EVERY_REF), prune=True)  # noqa: E731
            found = by_prefix(repo, upstream, ref, lacking, errors, every, self.progress)
            if found is not None:
                repo.index_history(found[0])
                return Fetched(repo, *found)
        local = repo.resolve(ref) if not urls else None
        if local:
            return Fetched(repo, local)
        known = recalled(repo, ref) if urls and not lacking else None  # no source could be asked: the cache's
        if known:
            self.note(f"{upstream} {ref} is {known[0][:12]} {known[1]}: no source could be reached ({errors[-1]})")
            return Fetched(repo, known[0])
        error = RefNotFound if urls and len(lacking) == len(urls) else SourceError
        raise error(
            f"cannot resolve {upstream} ref {ref!r}: " + ("; ".join(dict.fromkeys(errors)) or "no source"),
            unusable[-1].hint if unusable else "check the ref name, or pass --source with a clone that has it",
        )

    def _fetch(self, repo: GitRepo, url: str, refspecs: list[str], prune: bool = False) -> None:
        with self._writing(repo):
            self._fetch_once(repo, url, refspecs, prune)

    @contextlib.contextmanager
    def _writing(self, repo: GitRepo) -> Iterator[None]:
        """Git writing into the cached clone: a full or read-only disk is one ``CacheError`` with the real
        cause, never a source that "could not provide" the upstream."""
        try:
            yield
        except RepositoryDamaged:
            raise
        except GitError as exc:
            problem = git_problem(exc.message, repo.path)
            if problem is None:
                raise
            raise CacheError(
                f"cannot write the cached clone {repo.path}: {problem} ({exc.message})", disk_hint(problem)
            ) from None
        except OSError as exc:
            problem = os_problem(exc, repo.path)
            raise CacheError(f"cannot write the cached clone {repo.path}: {problem}", disk_hint(problem)) from None

    def _fetch_once(self, repo: GitRepo, url: str, refspecs: list[str], prune: bool = False) -> None:
        self.configure_remote(repo, url)
        pruning = ["--prune"] if prune else []  # the refspecs' names the source no longer has go too
        repo.run("fetch", "--quiet", "--no-tags", *pruning, "--filter=blob:none", "origin", "--", *refspecs)

    def configure_remote(self, repo: GitRepo, url: str) -> None:
        """Point ``origin`` of a (partial) clone at ``url``: a URL or a local repository (``origin.point_origin``)."""
        point_origin(repo, url)

    def close(self) -> None:
        for upstream, repo in self._open.items():
            repo.close()
            keep_packs_few(self.cache_dir / "git" / f"{upstream}.lock", repo)
        self._open.clear()
