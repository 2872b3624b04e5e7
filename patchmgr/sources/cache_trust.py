"""Whether a cache may be used: owned by this user, and its config holding only what patchmgr writes."""

from __future__ import annotations

import os
import re
import shutil
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from patchmgr.io import children
from patchmgr.io.disk import os_problem
from patchmgr.io.git_run import RepositoryDamaged
from patchmgr.io.locks import FileLock
from patchmgr.model.errors import GitError, PatchmgrError
from patchmgr.model.urls import mask_url
from patchmgr.sources.cache_entry import cache_folder, check_cache_entry
from patchmgr.sources.cache_errors import CacheError

if TYPE_CHECKING:  # io.git is imported where a clone is opened: a status read back runs no git
    from patchmgr.io.git import GitRepo

LOCAL_UPLOAD_PACK = "git -c uploadpack.allowFilter=true -c uploadpack.allowAnySHA1InWant=true upload-pack"


# The config keys (lower-cased, as git lists them) a cached clone may hold: what `git init --bare`
# and `Store.configure_remote` write. Anything else (core.sshCommand, include.path, url.*.insteadOf,
# credential.helper, filter.*, ...) was written by someone else, and the clone is refused.
CACHE_CONFIG_KEYS = frozenset(
    {
        "core.repositoryformatversion",
        "core.filemode",
        "core.bare",
        "core.ignorecase",
        "core.precomposeunicode",
        "core.symlinks",
        "core.logallrefupdates",
        "extensions.partialclone",
        "extensions.objectformat",
        "remote.origin.url",
        "remote.origin.fetch",
        "remote.origin.promisor",
        "remote.origin.partialclonefilter",
    }
)


CACHE_CONFIG_VALUES = {"remote.origin.uploadpack": LOCAL_UPLOAD_PACK}  # runs a program: only patchmgr's own


_SECTION = re.compile(rb'\[([a-z]+)(?: "([a-z]+)")?\]')
_ENTRY = re.compile(rb"\t([A-Za-z]+) = ([!-~](?:[ -~]*[!-~])?)")
_WRITTEN_VALUES = {  # keys whose value git checks when it opens a clone: only the values git and patchmgr write
    "core.repositoryformatversion": ("0", "1"),
    "core.filemode": ("true", "false"),
    "core.bare": ("true",),
    "core.ignorecase": ("true", "false"),
    "core.precomposeunicode": ("true", "false"),
    "core.symlinks": ("true", "false"),
    "core.logallrefupdates": ("true", "false", "always"),
    "extensions.objectformat": ("sha1", "sha256"),
    "remote.origin.promisor": ("true", "false"),
}
_QUOTING = frozenset(b'"\\#;')  # a value with these means what git's quoting rules say: git reads it


def written_config(text: bytes) -> list[tuple[str, str]] | None:
    """A cached clone's config as ``git config --local --no-includes --list`` gives it, read without git when
    it is laid out exactly as ``git init`` and ``git config`` write it (``[section]`` or ``[section "name"]``
    lines, tab-indented ``key = value`` lines, values without quotes, escapes or comments) and holds only keys
    and values that patchmgr writes; None for anything else, which git then reads (and refuses, or reports)."""
    pairs: list[tuple[str, str]] = []
    section: str | None = None
    for line in text.split(b"\n")[:-1]:
        header = _SECTION.fullmatch(line)
        if header:
            name, sub = header.groups()
            section = name.decode() + (f".{sub.decode()}" if sub else "")
            continue
        entry = _ENTRY.fullmatch(line)
        if entry is None or section is None or _QUOTING.intersection(entry.group(2)):
            return None
        key, value = f"{section}.{entry.group(1).decode().lower()}", entry.group(2).decode()
        if key not in CACHE_CONFIG_KEYS and CACHE_CONFIG_VALUES.get(key) != value:
            return None
        if value not in _WRITTEN_VALUES.get(key, (value,)):
            return None
        pairs.append((key, value))
    return pairs


def check_cache_config(path: Path, config: Sequence[tuple[str, str]]) -> None:
    """Refuse a cached clone whose config holds anything patchmgr does not write there."""
    for key, value in config:
        if key in CACHE_CONFIG_KEYS or CACHE_CONFIG_VALUES.get(key) == value:
            continue
        raise CacheError(
            f"the cached clone {path} has config {key} = {mask_url(value)!r}, which patchmgr "
            "never writes: refusing to run git there",
            f"remove it (rm -rf {path}): patchmgr fetches it again",
        )


# what git reads in a bare clone before it does anything: a link or a foreign file among them is refused
_CLONE_PARTS = (
    "config",
    "HEAD",
    "packed-refs",
    "objects",
    "objects/info",
    "objects/pack",
    "refs",
    "refs/heads",
    "refs/tags",
    "shallow",
    "hooks",
    "info",
)
# folders whose every entry git reads or runs (hooks run; packs and the 256 loose-object folders are read): each
# entry is checked, one level down only, so that a clone's thousands of loose objects cost nothing
_CLONE_FOLDERS = ("hooks", "objects", "objects/pack", "objects/info", "refs", "info")

_ABSENT = "(no clone yet)"  # what _clone_problem says when there is nothing to check (compared by identity)


class CacheHealth(ABC):
    """The checks a ``Store`` makes before it uses its folder and each cached clone.

    The store sets the attributes below and says where a cached clone lives and which lock guards it.
    """

    cache_dir: Path
    note: Callable[[str], None]  # tells the user what was done (a damaged clone removed)
    _open: dict[str, GitRepo]  # the clones opened so far, by upstream
    _root_checked: bool

    @abstractmethod
    def repo_path(self, upstream: str) -> Path:
        """The cached clone of ``upstream``."""

    @abstractmethod
    def lock(self, upstream: str) -> FileLock:
        """Held while writing the cached clone of ``upstream``."""

    def _check_root(self) -> None:
        """The cache folder and its ``git`` folder exist, are folders, and belong to this user."""
        if self._root_checked:
            return
        cache_folder(self.cache_dir, "git")
        self._root_checked = True

    def open_ahead(self, commits: Mapping[str, str | None]) -> Callable[[], None]:
        """Start opening the cached clones of these upstreams (by name; the commit to look up in each, or None)
        together, before a run uses them one after another, and return the call that waits for them (the caller
        calls it before it uses the store again): each clone's soundness check and its object reader are git
        processes, and started at once they overlap each other and the caller's own work. Only what says and
        changes nothing is done here: a clone with any problem (absent, damaged, refused) or any error is left
        alone, for the run to meet in its own order with its own messages; a sound one is kept open for it, as
        ``repo`` would have opened it."""
        names = [name for name in commits if name not in self._open]
        if len(names) < 2 or not self._root_checked:
            return lambda: None
        from patchmgr.io.git import GitRepo

        opened: dict[str, GitRepo] = {}

        def open_one(name: str) -> None:
            try:
                if self._clone_problem(name) is not None:
                    return
                repo = GitRepo(self.repo_path(name), untrusted=True)
            except (PatchmgrError, OSError):
                return
            try:
                commit = commits[name]
                if commit is not None:
                    repo.has_commit(commit)  # starts the object reader, which the run reads the files through
            except (PatchmgrError, OSError):
                repo.close()
                return
            opened[name] = repo

        pool = children.worker_pool(len(names), "open-clone")  # a handful at a time, however many upstreams
        for name in names:
            pool.submit(open_one, name)

        def settle() -> None:
            pool.shutdown(wait=True)
            for name in names:  # in the run's order, from the caller's thread
                if name in opened and name not in self._open:
                    self._open[name] = opened.pop(name)

        return settle

    def _check_clone(self, upstream: str) -> GitRepo | None:
        """The cached clone of ``upstream`` if it is sound; None when it must be made (again).

        Refuses (StateError) a clone another user owns or whose config holds a key
        patchmgr did not write. A clone git cannot read is damaged: looked at again
        under the lock (another run may be making it right now), then removed, with
        a note, so that it is made and fetched again.
        """
        from patchmgr.io.git import GitRepo

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
        hint = f"remove it (rm -rf {path}): patchmgr fetches it again"
        if not path.is_symlink() and not path.is_dir():
            return "it is not a folder"
        # git reads its config (which can name programs) and its refs and objects: all of them its own
        check_cache_entry(path, f"the cached clone of {upstream}", hint, inside=_CLONE_PARTS, listed=_CLONE_FOLDERS)
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
        config = written_config(text)
        if config is None:  # anything but what patchmgr writes, exactly: git reads it (and says what is wrong)
            from patchmgr.io.git import GitRepo

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
                raise CacheError(
                    f"cannot remove the damaged cached clone {path}: {os_problem(exc, path)}",
                    f"remove it by hand (rm -rf {path}), then run again",
                ) from None
