"""Whether a cache may be used: owned by this user, and its config holding only what patchmgr writes."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Sequence
from pathlib import Path

from patchmgr.io.git import GitRepo, RepositoryDamaged
from patchmgr.model.errors import GitError
from patchmgr.model.urls import mask_url
from patchmgr.sources.cache_errors import CacheError, _os_problem, disk_hint

LOCAL_UPLOAD_PACK = "git -c uploadpack.allowFilter=true -c uploadpack.allowAnySHA1InWant=true upload-pack"


# The config keys (lower-cased, as git lists them) a cached clone may hold: what `git init --bare`
# and `Store.configure_remote` write. Anything else (core.sshCommand, include.path, url.*.insteadOf,
# credential.helper, filter.*, ...) was written by someone else, and the clone is refused.
CACHE_CONFIG_KEYS = frozenset({
    "core.repositoryformatversion", "core.filemode", "core.bare", "core.ignorecase", "core.precomposeunicode",
    "core.symlinks", "core.logallrefupdates", "extensions.partialclone", "extensions.objectformat",
    "remote.origin.url", "remote.origin.fetch", "remote.origin.promisor", "remote.origin.partialclonefilter",
})


CACHE_CONFIG_VALUES = {"remote.origin.uploadpack": LOCAL_UPLOAD_PACK}  # runs a program: only patchmgr's own


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


_ABSENT = "(no clone yet)"  # what _clone_problem says when there is nothing to check (compared by identity)


class CacheHealth:
    """The checks a ``Store`` makes before it uses its folder and each cached clone."""

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
