"""A status at the pin, kept in the cache: what ``status`` found for an upstream, read back when nothing it was
made from has changed.

An upstream's status at its pin is a function of what goes in: the pinned commit and the rest of its manifest
entry, the bytes of its patch files (their ``Guard:`` headers with them), the location its files come from, the
cached clone that holds the commit (its config, refs and packs, by identity), the cached release the drift note
compares with, and the code that checks (patchmgr's version and every file of the package, by size and time,
the libraries it parses and evaluates guards with, and the Python that runs it). ``key`` hashes all of them;
a status is kept under its key and read back only under the same key, so a changed patch, pin, guard,
source, clone, release or engine never reads an old one. One status is kept per series: a new one replaces
the older ones.
Only a status made from the cache alone is kept (the clone had the commit, the release was there, every guard
could be evaluated), so a kept one says exactly what a run would say now.

The entries live in the cache folder ``verdicts``, trusted as every cache entry is (``cache_entry``: this
user's own, writable by no one else): a kept status is a pickle, and a pickle runs code when it is read.

A kept status holds what ``status`` shows, not what the check worked with: each result without the bytes the
patch turns its files into, and each patch as ``KeptPatch`` (its id, path, fields, digest and the paths it
touches, without its bytes and parsed diffs). For 299 real patches the whole status was 90 MB, and reading it
back cost 229 MB of memory; it is now a few hundred bytes a patch.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import shutil
import sys
from dataclasses import dataclass, fields, replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import patchmgr
from patchmgr.io.files import write_atomic
from patchmgr.model.patchfile import PatchFile
from patchmgr.sources.cache_entry import cache_folder, check_cache_entry
from patchmgr.sources.cache_errors import CacheError

if TYPE_CHECKING:
    from patchmgr.engine.results import CheckResult
    from patchmgr.model.manifest import Upstream
    from patchmgr.model.project import Project
    from patchmgr.sources.upstream import Sources

FORMAT = 2  # of a kept status: a new one is never read as an old one (2: results without bytes, KeptPatch)
ENTRY = "status.pickle"
HINT = "remove it (rm -rf {path}): status checks again"
T = TypeVar("T")


@dataclass(frozen=True)
class KeptPatch(PatchFile):
    """A patch as a kept status shows it: what status prints and writes of it (``status_json``: id, path,
    fields, digest, touched paths), with no bytes and no parsed diffs. Only a status read back holds one, and
    only status's own output reads it."""

    kept_sha256: str = ""
    kept_paths: tuple[str, ...] = ()

    @property
    def sha256(self) -> str:
        return self.kept_sha256

    @property
    def touched_paths(self) -> list[str]:
        return list(self.kept_paths)


def lean(results: list[CheckResult]) -> list[CheckResult]:
    """A status's results as they are kept: without their files' new bytes, each patch a ``KeptPatch``."""
    return [replace(result, files={}, patch=kept_patch(result.patch)) for result in results]


def kept_patch(patch: PatchFile) -> KeptPatch:
    shown = {f.name: getattr(patch, f.name) for f in fields(PatchFile) if f.name not in ("data", "files")}
    return KeptPatch(**shown, data=b"", files=(), kept_sha256=patch.sha256, kept_paths=tuple(patch.touched_paths))


def fingerprint(root: Path, version: str) -> str:
    """The code under ``root`` at ``version`` run by this Python: every ``.py`` file by path, size and time."""
    parts = [version, sys.version, str(root)]
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                info = os.stat(os.path.join(folder, name))
                parts.append(f"{os.path.relpath(os.path.join(folder, name), root)} {info.st_size} {info.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


LIBRARIES = ("unidiff", "re2")  # what the engine parses patches and evaluates guards with


@cache
def code_fingerprint() -> str:
    """patchmgr's own fingerprint: its version and every file of the package, and the libraries it checks with
    (each by the file it loads from, found without importing it)."""
    from importlib.util import find_spec

    origins = [(name, spec.origin if (spec := find_spec(name)) else None) for name in LIBRARIES]
    libraries = [f"{name} {origin} {identity(Path(origin)) if origin else None}" for name, origin in origins]
    return fingerprint(Path(patchmgr.__file__).parent, " ".join([patchmgr.__version__, *libraries]))


def identity(path: Path) -> str | None:
    """A file's or folder's identity as the file system keeps it (inode, size, change times); None: absent."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return f"{info.st_ino} {info.st_size} {info.st_mtime_ns} {info.st_ctime_ns}"


def key(project: Project, upstream: Upstream, sources: Sources) -> str | None:
    """The key of ``upstream``'s status at its pin as it would be checked now; None when it cannot be known
    without doing the check (no cached clone, a patch that cannot be read, a release not in the cache)."""
    from patchmgr.sources.release import index_url
    from patchmgr.sources.upstream import local_problem

    store = sources.store
    urls = sources.urls(upstream)
    clone = store.repo_path(upstream.name)
    parts = [str(FORMAT), code_fingerprint(), repr(upstream), repr(urls), str(local_problem(urls[0]) if urls else "")]
    for part in ("config", "HEAD", "packed-refs", "objects", "objects/pack", "objects/info", "refs"):
        parts.append(f"{part} {identity(clone / part)}")
    if identity(clone / "config") is None:
        return None
    digest = hashlib.sha256()
    for patch_id in upstream.patch_ids:
        path = project.patch_path(upstream.name, patch_id)
        try:
            data = path.read_bytes()
        except OSError:
            return None
        digest.update(f"{path}\0{len(data)}\0".encode() + data)
    parts.append(digest.hexdigest())
    if upstream.pypi and upstream.version:
        folder = store.releases.root / upstream.pypi.lower() / upstream.version
        try:
            meta = (folder / "release.json").read_bytes()
        except OSError:
            return None
        parts += [index_url(), meta.hex(), str(identity(folder / "tree"))]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def series(project: Project, upstream: Upstream) -> str:
    """What the entries of one series share (its project, upstream and patch list): keeping a new status of it
    removes the older ones, so the folder holds one per series, not one per change."""
    named = "\0".join([str(project.root), upstream.name, *upstream.patch_ids])
    return hashlib.sha256(named.encode()).hexdigest()[:16]


def recall(project: Project, upstream: Upstream, sources: Sources, kind: type[T]) -> tuple[str | None, T | None]:
    """The name of ``upstream``'s status at its pin (its series, then its key), and the status (a ``kind``) kept
    under it (None: none is)."""
    digest = key(project, upstream, sources)
    if digest is None:
        return None, None
    name = f"{series(project, upstream)}-{digest}"
    entry = sources.store.cache_dir / "verdicts" / name
    if not os.path.lexists(entry):
        return name, None
    cache_folder(sources.store.cache_dir, "verdicts")
    check_cache_entry(entry, "a kept status", HINT.format(path=entry), inside=(ENTRY,))
    try:
        status = pickle.loads((entry / ENTRY).read_bytes())
    except Exception:  # a cut or foreign entry: checked again, and written anew
        return name, None
    return name, status if isinstance(status, kind) else None


def keep(sources: Sources, name: str, status: object) -> None:
    """Keep ``status`` (its results made ``lean``) as ``name`` (from ``recall``), in place of the older statuses
    of its series; a cache that cannot be written keeps nothing, and says nothing (the run has its answer)."""
    try:
        verdicts = cache_folder(sources.store.cache_dir, "verdicts")
        prefix = name.split("-")[0] + "-"
        for old in os.listdir(verdicts):
            if old.startswith(prefix) and old != name:
                shutil.rmtree(verdicts / old, ignore_errors=True)
        entry = verdicts / name
        entry.mkdir(mode=0o755, exist_ok=True)
        check_cache_entry(entry, "a kept status", HINT.format(path=entry), inside=(ENTRY,))
        write_atomic(entry / ENTRY, pickle.dumps(status, protocol=pickle.HIGHEST_PROTOCOL))
    except (OSError, CacheError):
        return
