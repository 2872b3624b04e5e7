"""matrix's results per ref and per row, kept in the patchmgr cache between runs: a warm matrix checks nothing
again, and an edited patch costs its own row and the rows that stand on it, not the whole series.

A cell (a patch's result at a column's commit, as ``status --against`` gives it, with its evidence) and the
first change found toward it depend only on immutable things: the column's commit, the pin, patchmgr's own
code, the patch's bytes and those of the earlier patches whose files can change its state (``walk.related``:
those writing what it reads, and so on back; each applies after those before it). So a row is named by a
digest of those (``row_keys``) and never goes stale: a changed patch changes the names of its own row and of
the later rows that depend on it, and no other. A patch with ``Guard:`` headers is judged on the whole series
applied (a later patch may break its guard), so its row is named by the whole series. One entry per column
holds its rows; the rows of another version of the series are kept beside them up to a bound.

The entries sit in the cache's ``matrix-cells`` folder and are reused only through the one trust check of
everything patchmgr reuses from its cache (``cache_entry``): a folder of this user's that no other user can
write. An entry that cannot be read back (cut off, from another Python) is computed again and replaced; one
that cannot be written is left out, with no harm but the time.
"""

from __future__ import annotations

import hashlib
import os
import pickle
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING

from patchmgr.engine.results import CheckResult
from patchmgr.history.walk import related
from patchmgr.io.files import write_atomic
from patchmgr.sources.cache_entry import cache_folder, check_cache_entry

if TYPE_CHECKING:
    from patchmgr.model.manifest import Upstream
    from patchmgr.model.patchfile import PatchFile

FOLDER = "matrix-cells"
_FILE = "cells.pickle"
_FORMAT = 3  # what an entry holds: a new layout is a new name, never a misread
_KEEP_OTHERS = 4096  # rows of other versions of the series kept beside the current ones, per column
_code: str | None = None

# row key, column, commit, state, guards, carrier
ChangeKey = tuple[str, str, str, str, tuple[str, ...], str]


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


def row_keys(patches: Sequence[PatchFile]) -> list[str]:
    """Each row's name: a digest of its patch and of the earlier patches its state can depend on (the module's
    rule), ids and bytes, in series order."""
    series = list(patches)
    parts = [hashlib.sha256(f"{len(p.id)}:{p.id}:{len(p.data)}:".encode() + p.data).hexdigest() for p in series]
    guarded = {i for i, patch in enumerate(series) if patch.field_values("Guard")}
    whole = hashlib.sha256("".join(parts).encode()).hexdigest()
    keys = []
    for index in range(len(series)):
        chosen = related(series, index)
        if guarded.intersection(chosen):  # guards read more than the files (and a later patch may break them)
            keys.append(hashlib.sha256(f"whole:{index}:{whole}".encode()).hexdigest()[:40])
            continue
        keys.append(hashlib.sha256(f"{index}:".encode() + "".join(parts[i] for i in chosen).encode()).hexdigest()[:40])
    return keys


def stands_on(patches: Sequence[PatchFile], indexes: Sequence[int]) -> list[int]:
    """``indexes`` and every earlier patch their results depend on (``row_keys``' rule), in series order: the
    part of the series that, checked alone, gives those rows the results the whole series gives them."""
    series = list(patches)
    if any(series[i].field_values("Guard") for i in indexes):
        return list(range(len(series)))
    chosen = {other for index in indexes for other in related(series, index)}
    if any(series[i].field_values("Guard") for i in chosen):
        return list(range(len(series)))
    return sorted(chosen)


@dataclass
class Entry:
    """What one column holds: its cells by row key and the first changes found toward it."""

    cells: dict[str, dict[str, object]] = field(default_factory=dict)  # row key -> a result's kept fields
    changes: dict[ChangeKey, object] = field(default_factory=dict)  # history.matrix's Change, or None
    dirty: bool = False


# every field of a result but its patch (the caller's own) and its patched files (matrix shows none): a field
# added to CheckResult is kept without a change here (a warm matrix once lost ``changed_since``)
_KEPT = tuple(f.name for f in fields(CheckResult) if f.name not in ("patch", "files"))


def _frozen(result: CheckResult) -> dict[str, object]:
    """A result without its patch and its patched files (``_KEPT``)."""
    return {name: getattr(result, name) for name in _KEPT}


class CellCache:
    """The entries of one upstream's series at its pin; ``None`` cache folder: nothing kept (every load misses)."""

    def __init__(self, cache_dir: Path | None, upstream: Upstream, patches: Sequence[PatchFile]) -> None:
        self.patches = list(patches)
        self.root: Path | None = None
        if cache_dir is not None:
            self.root = cache_folder(cache_dir, FOLDER)  # a cache this user cannot trust: CacheError, as for clones
        self.pin = hashlib.sha256(f"{code_key()}\n{upstream.commit}\n".encode()).hexdigest()[:40]
        self.keys = row_keys(self.patches)
        self.entries: dict[str, Entry] = {}

    def entry(self, commit: str) -> Entry:
        """The entry of ``commit``: read from the cache once, empty when there is none (or it is not readable)."""
        if commit not in self.entries:
            self.entries[commit] = self._read(commit) or Entry()
        return self.entries[commit]

    def cell(self, commit: str, index: int) -> CheckResult | None:
        """Row ``index``'s result at ``commit``, when kept."""
        kept = self.entry(commit).cells.get(self.keys[index])
        return None if kept is None else CheckResult(self.patches[index], **kept)  # type: ignore[arg-type]

    def missing(self, commit: str) -> list[int]:
        """The rows whose result at ``commit`` is not kept."""
        cells = self.entry(commit).cells
        return [i for i, key in enumerate(self.keys) if key not in cells]

    def keep(self, commit: str, index: int, result: CheckResult) -> None:
        entry = self.entry(commit)
        entry.cells[self.keys[index]] = _frozen(result)
        entry.dirty = True

    def _path(self, commit: str) -> Path | None:
        return None if self.root is None else self.root / f"{self.pin}-{commit}"

    def _read(self, commit: str) -> Entry | None:
        path = self._path(commit)
        if path is None or not os.path.isdir(path):
            return None
        check_cache_entry(path, "a cached matrix result", f"remove it (rm -rf {path})", inside=(_FILE,))
        try:
            with open(path / _FILE, "rb") as handle:
                cells, changes = pickle.load(handle)  # this user's own file, checked above
            return Entry(dict(cells), dict(changes))
        except (OSError, EOFError, ValueError, TypeError, AttributeError, ImportError, pickle.UnpicklingError):
            return None

    def save(self) -> None:
        """Write every entry that changed in this run, the current rows first, then as many of the rows of other
        versions of the series as the bound keeps; a cache that cannot take it costs only the time."""
        current = set(self.keys)
        for commit, entry in self.entries.items():
            path = self._path(commit)
            if path is None or not entry.dirty:
                continue
            others = [key for key in entry.cells if key not in current][-_KEEP_OTHERS:]
            cells = {key: entry.cells[key] for key in [*others, *(k for k in self.keys if k in entry.cells)]}
            rows = set(cells)
            changes = {key: change for key, change in entry.changes.items() if key[0] in rows}
            try:
                path.mkdir(mode=0o700, exist_ok=True)
                write_atomic(path / _FILE, pickle.dumps((cells, changes), protocol=pickle.HIGHEST_PROTOCOL))
            except OSError:
                continue
            entry.dirty = False
