"""matrix's results per ref, kept in the patchmgr cache between runs: a warm matrix checks nothing again.

A column's cells (each patch's result at that commit, as ``status --against`` gives it, with its evidence)
and the first changes found toward it depend only on immutable things: the column's commit, the pin, the
whole series (ids and bytes, in order: each patch applies after those before it) and patchmgr's own code.
So an entry is named by a digest of those and never goes stale; a new tag, a changed patch or another
patchmgr is simply another entry. The entries sit in the cache's ``matrix-cells`` folder and are reused only
through the one trust check of everything patchmgr reuses from its cache (``cache_entry``): a folder of this
user's that no other user can write. An entry that cannot be read back (cut off, from another Python) is
computed again and replaced; one that cannot be written is left out, with no harm but the time.
"""

from __future__ import annotations

import hashlib
import os
import pickle
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from patchmgr.engine.results import CheckResult
from patchmgr.io.files import write_atomic
from patchmgr.sources.cache_entry import cache_folder, check_cache_entry

if TYPE_CHECKING:
    from patchmgr.model.manifest import Upstream
    from patchmgr.model.patchfile import PatchFile

FOLDER = "matrix-cells"
_FILE = "cells.pickle"
_FORMAT = 2  # what an entry holds: a new layout is a new name, never a misread
_code: str | None = None

ChangeKey = tuple[int, str, str, str, tuple[str, ...], str]  # patch index, column, commit, state, guards, carrier


def code_key() -> str:
    """patchmgr's own code, as a digest of its modules' names, sizes and modification times (computed once)."""
    global _code
    if _code is None:
        package = Path(__file__).resolve().parents[1]
        digest = hashlib.sha256(str(_FORMAT).encode())
        for folder, dirs, files in os.walk(package):
            dirs.sort()
            for name in sorted(files):
                if name.endswith(".py"):
                    info = os.stat(os.path.join(folder, name))
                    digest.update(
                        f"{os.path.relpath(os.path.join(folder, name), package)}:{info.st_size}:"
                        f"{info.st_mtime_ns}\n".encode()
                    )
        _code = digest.hexdigest()
    return _code


@dataclass
class Entry:
    """What one column holds: its cells (None until checked) and the first changes found toward it."""

    cells: list[CheckResult] | None = None
    changes: dict[ChangeKey, object] = field(default_factory=dict)  # history.matrix's Change, or None
    dirty: bool = False


_KEPT = ("state", "placements", "conflict", "evidence", "carrier", "notes", "guards", "needs")


def _frozen(result: CheckResult) -> dict[str, object]:
    """A result without its patch (the caller's own) and its patched files (matrix shows none)."""
    return {name: getattr(result, name) for name in _KEPT}


class CellCache:
    """The entries of one upstream's series at its pin; ``None`` cache folder: nothing kept (every load misses)."""

    def __init__(self, cache_dir: Path | None, upstream: Upstream, patches: Sequence[PatchFile]) -> None:
        self.patches = list(patches)
        self.root: Path | None = None
        if cache_dir is not None:
            self.root = cache_folder(cache_dir, FOLDER)  # a cache this user cannot trust: CacheError, as for clones
        digest = hashlib.sha256(f"{code_key()}\n{upstream.commit}\n".encode())
        for patch in self.patches:
            digest.update(f"{len(patch.id)}:{patch.id}:{len(patch.data)}:".encode())
            digest.update(patch.data)
        self.series = digest.hexdigest()[:40]
        self.entries: dict[str, Entry] = {}

    def entry(self, commit: str) -> Entry:
        """The entry of ``commit``: read from the cache once, empty when there is none (or it is not readable)."""
        if commit not in self.entries:
            self.entries[commit] = self._read(commit) or Entry()
        return self.entries[commit]

    def _path(self, commit: str) -> Path | None:
        return None if self.root is None else self.root / f"{self.series}-{commit}"

    def _read(self, commit: str) -> Entry | None:
        path = self._path(commit)
        if path is None or not os.path.isdir(path):
            return None
        check_cache_entry(path, "a cached matrix result", f"remove it (rm -rf {path})", inside=(_FILE,))
        try:
            with open(path / _FILE, "rb") as handle:
                frozen_cells, changes = pickle.load(handle)  # this user's own file, checked above
            cells = None
            if frozen_cells is not None:
                cells = [CheckResult(patch, **kept) for patch, kept in zip(self.patches, frozen_cells, strict=True)]
            return Entry(cells, dict(changes))
        except (OSError, EOFError, ValueError, TypeError, AttributeError, ImportError, pickle.UnpicklingError):
            return None

    def save(self) -> None:
        """Write every entry that changed in this run; a cache that cannot take it costs only the time."""
        for commit, entry in self.entries.items():
            path = self._path(commit)
            if path is None or not entry.dirty:
                continue
            frozen = None if entry.cells is None else [_frozen(result) for result in entry.cells]
            try:
                path.mkdir(mode=0o700, exist_ok=True)
                write_atomic(path / _FILE, pickle.dumps((frozen, entry.changes), protocol=pickle.HIGHEST_PROTOCOL))
            except OSError:
                continue
            entry.dirty = False
