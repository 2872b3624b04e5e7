"""The cache of upstream clones: bare, blobless where the source allows, one per upstream.

Like pre-commit's store, a pinned commit that is already cached costs no
network; otherwise each URL is tried in order (the pin first, then the whole
history as a fallback), and a half-made clone is removed on failure. Clones
are partial (``--filter=blob:none``): the engine reads only the blobs that
patches touch, and git fetches those on demand.

The cache is trusted only as far as patchmgr made it (``Store._clone_problem``):
git runs in a cached clone only when the cache folder, the clone and its config
belong to the user running patchmgr (git's ``safe.directory`` rule), and when
that config holds nothing but the keys patchmgr itself writes; every config key
that runs a program is overridden besides (``gitio.untrusted_repo_config``). A
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
import errno
import os
import re
import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from patchmgr.errors import GitError, SourceError, StateError, UsageError
from patchmgr.gitio import FULL_SHA, GitRepo, RepositoryDamaged, mask_url
from patchmgr.journal import FileLock, lock_timeout
from patchmgr.manifest import url_problem
from patchmgr.releases import ReleaseCache

LOCAL_UPLOAD_PACK = "git -c uploadpack.allowFilter=true -c uploadpack.allowAnySHA1InWant=true upload-pack"

Progress = Callable[[str], None]
T = TypeVar("T")
_ABSENT = "(no clone yet)"  # what _clone_problem says when there is nothing to check (compared by identity)

# The config keys (lower-cased, as git lists them) a cached clone may hold: what `git init --bare`
# and `Store.configure_remote` write. Anything else (core.sshCommand, include.path, url.*.insteadOf,
# credential.helper, filter.*, ...) was written by someone else, and the clone is refused.
CACHE_CONFIG_KEYS = frozenset({
    "core.repositoryformatversion", "core.filemode", "core.bare", "core.ignorecase", "core.precomposeunicode",
    "core.symlinks", "core.logallrefupdates", "extensions.partialclone", "extensions.objectformat",
    "remote.origin.url", "remote.origin.fetch", "remote.origin.promisor", "remote.origin.partialclonefilter",
})
CACHE_CONFIG_VALUES = {"remote.origin.uploadpack": LOCAL_UPLOAD_PACK}  # runs a program: only patchmgr's own


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
    """A location that names a folder on this machine, or None for a URL.

    Git's rules (``url_is_local_not_ssh``): ``scheme://...`` and ``transport::...``
    are URLs; otherwise a location with a colon before any slash is scp-like ssh
    (``git@host:org/repo.git``, ``host:repo``); the rest is a path.
    """
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", location) or "::" in location.split("/")[0]:
        return None
    colon, slash = location.find(":"), location.find("/")
    if colon >= 0 and (slash < 0 or colon < slash):
        return None
    return Path(location).expanduser()


class CacheError(StateError):
    """The cache cannot be used (made, written, locked, trusted): a problem of this machine for the whole run.

    Never an upstream reported unavailable: ``checking.check_upstream`` lets it through as one error.
    """


# What git says when it cannot write to the disk, as the errno that says it (git runs with LC_ALL=C).
_GIT_DISK_ERRORS = {"No space left on device": errno.ENOSPC, "Disk quota exceeded": errno.EDQUOT,
                    "Read-only file system": errno.EROFS}


def disk_problem(said: str, path: Path) -> str | None:
    """The real cause when git failed writing at ``path`` because of the disk, else None.

    Git's message ``said`` first; its first fatal line does not always carry the errno
    ("could not set 'remote.origin.url'"), so the file system itself is asked next.
    """
    for text, code in _GIT_DISK_ERRORS.items():
        if text in said:
            return _os_problem(OSError(code, text), path)
    try:
        stats = os.statvfs(_existing_parent(path))
    except OSError:
        return None
    if stats.f_flag & os.ST_RDONLY:
        return "the file system is read-only"
    if stats.f_files and stats.f_favail == 0:
        return "no free inodes on that file system"
    if stats.f_blocks and stats.f_bavail == 0:
        return "no space left on that disk"
    return None


def disk_hint(problem: str) -> str:
    if "inodes" in problem:
        return "remove files on that file system (it has no free inodes), or point PATCHMGR_CACHE at another one"
    if "space" in problem or "quota" in problem.lower():
        return "free some space on that disk, or point PATCHMGR_CACHE at a folder with free space"
    return "point PATCHMGR_CACHE at a writable folder of your own"


def _os_problem(exc: OSError, path: Path) -> str:
    """What an OSError on ``path`` really means: a full disk, no free inodes, a read-only disk, ..."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        try:
            stats = os.statvfs(_existing_parent(path))
            if stats.f_files and stats.f_favail == 0:
                return "no free inodes on that file system"
            if exc.errno == errno.ENOSPC:
                return "no space left on that disk"
        except OSError:
            pass
    if exc.errno == errno.EROFS:
        return "the file system is read-only"
    if exc.errno == errno.EDQUOT:
        return "the disk quota is exceeded"
    if exc.errno in (errno.ENOTDIR, errno.EEXIST):
        return "a file is in the way of a folder"
    return exc.strerror or str(exc)


def _existing_parent(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


class Store:
    def __init__(self, cache_dir: Path | None = None, progress: Progress | None = None,
                 note: Progress | None = None) -> None:
        self.cache_dir = cache_dir or default_cache_dir()
        self.progress = progress or (lambda message: None)
        self.note = note or (lambda message: print(f"note: {message}", file=sys.stderr))
        self._open: dict[str, GitRepo] = {}
        self._root_checked = False
        self._repaired: set[str] = set()
        self._releases = ReleaseCache(self.cache_dir)
        self.fetched_from: dict[str, str] = {}  # upstream -> URL fetched from in this run
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
        return _CacheLock(self.cache_dir / "git" / f"{upstream}.lock", lock_timeout(600.0),
                          f"it is fetching {upstream} into the cache", self.progress)

    # -- the cache folder, trusted only when it is the user's own ------------------
    def _check_root(self) -> None:
        """The cache folder and its ``git`` folder exist, are folders, and belong to this user."""
        if self._root_checked:
            return
        where = "PATCHMGR_CACHE" if os.environ.get("PATCHMGR_CACHE") else "the patchmgr cache"
        for folder in (self.cache_dir, self.cache_dir / "git"):
            if os.path.lexists(folder) and not folder.is_dir():
                what = f"{where} points at a file" if folder == self.cache_dir else "the patchmgr cache holds a file"
                raise CacheError(f"{what}, not a folder: {folder}",
                                 "point PATCHMGR_CACHE at a folder of your own (or remove that file)")
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                problem = _os_problem(exc, folder)
                raise CacheError(f"cannot create the patchmgr cache {folder}: {problem}", disk_hint(problem)) from None
            _check_owner(folder, "the patchmgr cache", "point PATCHMGR_CACHE at a folder of your own, "
                         "or give this one to your user (chown)")
        self._root_checked = True

    def _check_clone(self, upstream: str) -> GitRepo | None:
        """The cached clone of ``upstream`` if it is sound; None when it must be made (again).

        Refuses (StateError) a clone another user owns or whose config holds a key
        patchmgr did not write. A clone git cannot read is damaged: looked at again
        under the lock (another run may be making it right now), then removed, with
        a note, so that it is made and fetched again.
        """
        why = self._clone_problem(upstream)
        if why is None or why is _ABSENT:
            return None if why else GitRepo(self.repo_path(upstream), untrusted=True)
        with self.lock(upstream):
            why = self._clone_problem(upstream)
            if why is None or why is _ABSENT:
                return None if why else GitRepo(self.repo_path(upstream), untrusted=True)
            self._discard(upstream, why)
        return None

    def _clone_problem(self, upstream: str) -> str | None:
        """Why the cached clone is damaged, ``_ABSENT``, or None when it is sound; StateError when refused."""
        path = self.repo_path(upstream)
        if not os.path.lexists(path):
            return _ABSENT
        if not path.is_dir():
            return "it is not a folder"
        hint = f"remove it (rm -rf {path}): patchmgr fetches it again"
        _check_owner(path, f"the cached clone of {upstream}", hint)
        if (path / "config").exists():
            _check_owner(path / "config", f"the config file of the cached clone of {upstream}", hint)
        for name in ("objects/info/alternates", "objects/info/http-alternates", "commondir", "info/attributes"):
            if os.path.lexists(path / name):
                raise CacheError(f"the cached clone {path} has {name}, which patchmgr never writes", hint)
        if not ((path / "HEAD").is_file() and (path / "objects").is_dir() and (path / "refs").is_dir()):
            return "a run stopped while making it"
        try:
            head, text = (path / "HEAD").read_bytes(), (path / "config").read_bytes()
        except OSError as exc:
            return f"cannot read it: {exc.strerror}"
        if not re.match(rb"^(ref: refs/\S+|[0-9a-f]{40}|[0-9a-f]{64})\n?$", head):
            return "its HEAD names no branch or commit"
        if not text.endswith(b"\n"):  # git writes whole lines: a config that stops mid-line was cut off
            return "its config is cut off"
        repo = GitRepo(path, untrusted=True)
        try:
            config = repo.local_config()
        except GitError as exc:
            return exc.detail if isinstance(exc, RepositoryDamaged) else exc.message
        finally:
            repo.close()
        check_cache_config(path, config)
        keys = {key for key, _value in config}
        if "remote.origin.url" in keys and not {"extensions.partialclone", "remote.origin.promisor"} <= keys:
            return "a run stopped while setting it up"
        return None

    def _discard(self, upstream: str, why: str) -> None:
        """Remove a damaged cached clone (under the lock), so that it is made and fetched again."""
        path = self.repo_path(upstream)
        old = self._open.pop(upstream, None)
        if old is not None:
            old.close()
        self.note(f"the cached clone of {upstream} ({path}) was damaged ({mask_url(why)}); fetching it again")
        with self.lock(upstream):
            try:
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path)
                elif os.path.lexists(path):
                    path.unlink()
            except OSError as exc:
                raise CacheError(f"cannot remove the damaged cached clone {path}: {_os_problem(exc, path)}",
                                 f"remove it by hand (rm -rf {path}), then run again") from None

    def repo(self, upstream: str) -> GitRepo:
        if upstream not in self._open:
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
                                problem = _os_problem(exc, path)
                            else:
                                cause = disk_problem(exc.message, path)
                                problem = f"{cause} ({exc.message})" if cause else exc.message
                            raise CacheError(f"cannot create the cached clone {path}: {problem}",
                                             disk_hint(problem)) from None
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
        return CacheError(f"the cached clone of {upstream} ({path}) is damaged and fetching it again did not "
                          f"help: {exc.detail}", f"remove it (rm -rf {path}) and check the disk, then run again")

    def ensure_commit(self, upstream: str, commit: str, urls: Sequence[str]) -> GitRepo:
        """The cached clone of ``upstream`` holding ``commit``, fetched if need be."""
        return self._repairing(upstream, lambda: self._ensure_commit(upstream, commit, urls))

    def _ensure_commit(self, upstream: str, commit: str, urls: Sequence[str]) -> GitRepo:
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
        lacking = []  # the URLs that answered, and do not have the commit
        for url in urls:
            self.progress(f"fetching {upstream} {commit[:12]} from {mask_url(url)}")
            try:
                self._fetch(repo, url, [commit])
            except RepositoryDamaged:
                raise
            except GitError as exc:
                # servers that refuse a bare commit id still serve their branches and tags
                errors.append(_said(url, exc))
                if isinstance(exc, NotARepository):
                    continue
            if repo.has_commit(commit):
                return repo
            try:
                self._fetch(repo, url, ["+refs/heads/*:refs/patchmgr/heads/*", "+refs/tags/*:refs/tags/*"])
            except RepositoryDamaged:
                raise
            except GitError as exc:
                errors.append(_said(url, exc))
                continue
            if repo.has_commit(commit):
                return repo
            errors.append(f"{mask_url(url)}: does not have commit {commit}")
            lacking.append(url)
        error = RefNotFound if urls and len(lacking) == len(urls) else SourceError
        raise error(
            f"cannot get {upstream} at {commit[:12]}: " + ("; ".join(dict.fromkeys(errors)) or "no source URL"),
            f"pass a reachable clone with --source {upstream}=PATH_OR_URL",
        )

    def prefetch(self, upstream: str, commit: str, urls: Sequence[str]) -> list[str]:
        """Fetch every blob of ``commit`` into the cache, so a checkout needs no network later.

        Returns the paths no source could provide (a mirror without its large files).
        """
        with self.lock(upstream):
            return self._repairing(upstream, lambda: self._prefetch(upstream, commit, urls))

    def _prefetch(self, upstream: str, commit: str, urls: Sequence[str]) -> list[str]:
        repo = self.ensure_commit(upstream, commit, urls)
        absent: list[str] = []
        local = as_local_path(urls[0]) if urls else None
        if local is not None and local.exists():
            _require_repository(local)
            with GitRepo(local) as source:
                absent = source.missing_blobs(commit)
        lacking = set(repo.unfetched_objects(commit))
        if absent:
            lacking -= {entry.sha for path in absent if (entry := repo.tree_entry(commit, path))}
        wanted = sorted(lacking)
        with self._writing(repo):
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
        """The commit that ``ref`` (branch, tag or commit) names at the upstream's source.

        A ref that every source was reached for and none has is bad input (``UnknownRef``,
        exit 2); a source that could not be reached stays a ``SourceError`` (exit 1).
        """
        validate_ref(ref)
        try:
            if FULL_SHA.match(ref):
                return self.ensure_commit(upstream, ref, urls), ref
            def resolve() -> tuple[GitRepo, str]:
                repo = self.repo(upstream)
                with self.lock(upstream):
                    return self._resolve_fetched(repo, upstream, ref, urls)
            return self._repairing(upstream, resolve)
        except RefNotFound:
            raise unknown_ref(upstream, ref, urls) from None

    def _resolve_fetched(self, repo: GitRepo, upstream: str, ref: str, urls: Sequence[str]) -> tuple[GitRepo, str]:
        errors = []
        lacking = []  # the URLs that answered, and have no such ref
        for url in urls:
            self.progress(f"fetching {upstream} {ref} from {mask_url(url)}")
            try:
                self._fetch(repo, url, [f"+{ref}:refs/patchmgr/against"])
                commit = repo.resolve("refs/patchmgr/against")
                if commit:
                    repo.index_history(commit)
                    return repo, commit
            except RepositoryDamaged:
                raise
            except GitError as exc:
                errors.append(_said(url, exc))
                if _NO_SUCH_REF.search(exc.message):
                    lacking.append(url)
        local = repo.resolve(ref) if not urls else None
        if local:
            return repo, local
        error = RefNotFound if urls and len(lacking) == len(urls) else SourceError
        raise error(f"cannot resolve {upstream} ref {ref!r}: " + ("; ".join(dict.fromkeys(errors)) or "no source"),
                    "check the ref name, or pass --source with a clone that has it")

    def _fetch(self, repo: GitRepo, url: str, refspecs: list[str]) -> None:
        with self._writing(repo):
            self._fetch_once(repo, url, refspecs)
        self.fetched_from[repo.path.name.removesuffix(".git")] = url

    @contextlib.contextmanager
    def _writing(self, repo: GitRepo):
        """Git writing into the cached clone: a full or read-only disk is one ``CacheError`` with the real
        cause, never a source that "could not provide" the upstream."""
        try:
            yield
        except RepositoryDamaged:
            raise
        except GitError as exc:
            problem = disk_problem(exc.message, repo.path)
            if problem is None:
                raise
            raise CacheError(f"cannot write the cached clone {repo.path}: {problem} ({exc.message})",
                             disk_hint(problem)) from None
        except OSError as exc:
            problem = _os_problem(exc, repo.path)
            raise CacheError(f"cannot write the cached clone {repo.path}: {problem}", disk_hint(problem)) from None

    def _fetch_once(self, repo: GitRepo, url: str, refspecs: list[str]) -> None:
        self.configure_remote(repo, url)
        repo.run("fetch", "--quiet", "--no-tags", "--filter=blob:none", "origin", "--", *refspecs)

    def configure_remote(self, repo: GitRepo, url: str) -> None:
        """Point ``origin`` of a (partial) clone at ``url``: a URL or a local repository."""
        problem = url_problem(url, from_command_line=True)
        if problem:
            raise SourceError(f"refusing source {mask_url(url)!r}: {mask_url(problem)}",
                              "give a URL or a local path")
        local = as_local_path(url)
        if local is not None:
            if not local.exists():
                raise NotARepository(f"{local} does not exist", "give the folder of a git clone, or a URL")
            _require_repository(local)
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


class _CacheLock(FileLock):
    """The per-upstream lock of the cache; a lock file that cannot be made (a read-only or full disk) is one error."""

    def __enter__(self) -> FileLock:
        try:
            return super().__enter__()
        except OSError as exc:
            problem = _os_problem(exc, self.path)
            raise CacheError(f"cannot lock {self.path} in the patchmgr cache: {problem}", disk_hint(problem)) from None


# What git fetch says when the source answered and has no such ref (git runs with LC_ALL=C).
_NO_SUCH_REF = re.compile(r"couldn't find remote ref")


class RefNotFound(SourceError):
    """Every source of an upstream was reached, and none has the ref or commit asked for.

    At the pin it stays a source problem (exit 1: the upstream is unavailable); for a ref
    given on the command line ``resolve_ref`` turns it into ``UnknownRef`` (exit 2).
    """


class UnknownRef(UsageError):
    """A ref given on the command line (``--against``, ``--to``) that the upstream does not have: bad input."""


def unknown_ref(upstream: str, ref: str, urls: Sequence[str]) -> UnknownRef:
    import shlex
    where = ", ".join(mask_url(url) for url in urls)
    hint = f"list its branches and tags with `git ls-remote --heads --tags {shlex.quote(mask_url(urls[0]))}`"
    if re.fullmatch(r"[0-9a-fA-F]{4,39}", ref):
        hint += ", or give the full 40-character commit id"
    said = "was reached and has" if len(urls) == 1 else "were reached and none has"
    return UnknownRef(f"upstream {upstream} has no ref {ref!r}: {where} {said} no branch, tag or commit of that name",
                      hint)


class NotARepository(GitError):
    """A local source that is not a git repository (or not there): no git command was run on it."""


def _require_repository(local: Path) -> None:
    if not ((local / ".git").exists() or ((local / "HEAD").is_file() and (local / "objects").is_dir())):
        raise NotARepository(f"{local} is not a git repository",
                             "give the folder of a git clone (or a bare repository), or a URL")


def _said(url: str, exc: GitError) -> str:
    """``url: what went wrong``, the URL said once and its password masked."""
    shown, message = mask_url(url), mask_url(exc.message)
    return message if message.startswith(shown) or message.startswith(str(as_local_path(url))) \
        else f"{shown}: {message}"


def _check_owner(path: Path, what: str, hint: str) -> None:
    """Refuse ``path`` unless this user owns it (git's ``safe.directory`` rule): another user's config runs
    programs as this one."""
    try:
        owner = os.stat(path).st_uid
    except OSError as exc:
        raise CacheError(f"cannot read {what} {path}: {_os_problem(exc, path)}", hint) from None
    if owner != os.geteuid():
        raise CacheError(f"{what} ({path}) belongs to another user (uid {owner}, not {os.geteuid()}): "
                         "refusing to run git there", hint)


def check_cache_config(path: Path, config: Sequence[tuple[str, str]]) -> None:
    """Refuse a cached clone whose config holds anything patchmgr does not write there."""
    for key, value in config:
        if key in CACHE_CONFIG_KEYS or CACHE_CONFIG_VALUES.get(key) == value:
            continue
        raise CacheError(f"the cached clone {path} has config {key} = {mask_url(value)!r}, which patchmgr "
                         "never writes: refusing to run git there",
                         f"remove it (rm -rf {path}): patchmgr fetches it again")
