"""Rewrite single values of a target manifest, keeping its comments and layout (tomlkit).

Like pre-commit's ``autoupdate``, which rewrites only the ``rev:`` line: a
bump moves ``commit`` (and ``version``), an export or a dropped patch changes
``patches``, and every other byte of the file stays. The edits only compute
the new text; ``check_manifest`` validates it as a manifest before anything is
written, and ``write_files`` writes it together with the patch files that go
with it (refresh, bump, export) in one journaled transaction: all or nothing,
across a crash (an interrupted run is rolled back by the next one).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

import tomlkit
from tomlkit.items import Array, Table

from patchmgr.errors import ManifestError, PatchmgrError, StateError
from patchmgr.gitio import FULL_SHA
from patchmgr.journal import JOURNAL, StateLock, apply_transaction, recover
from patchmgr.manifest import PATCH_ID, _Validator
from patchmgr.project import Project

STATE = ".patchmgr-state"  # in the project root: the lock and the journal of refresh, bump and export


def pin_text(text: str, path: Path, upstream: str, commit: str, ref: str, version: str | None = None) -> str:
    """``text`` with ``upstream`` pointed at ``commit``; the line's comment names ``ref`` (none for a bare id)."""

    def change(table: Table) -> None:
        table["commit"] = commit
        item = table["commit"]
        item.trivia.comment_ws, item.trivia.comment = ("  ", f"# {ref}") if not FULL_SHA.match(ref) else ("", "")
        if version is not None:
            table["version"] = version

    return _edit(text, path, upstream, change)


def series_text(text: str, path: Path, upstream: str, patch_ids: Sequence[str]) -> str:
    """``text`` with ``patches`` of ``upstream`` exactly ``patch_ids``, touching only what differs."""

    def change(table: Table) -> None:
        series = table.get("patches")
        if not isinstance(series, Array):
            table["patches"] = list(patch_ids)
            return
        if list(series) == list(patch_ids):
            return
        for index in reversed(range(len(series))):
            if series[index] not in patch_ids:
                del series[index]
        if list(series) != list(patch_ids)[: len(series)]:
            series.clear()
        for patch_id in patch_ids[len(series):]:
            series.append(patch_id)

    return _edit(text, path, upstream, change)


def check_manifest(path: Path, text: str, patches_dir: Path, planned: Collection[Path] = ()) -> None:
    """Refuse ``text`` unless it loads as the manifest at ``path``; ``planned``: patch files the same
    transaction creates (they need not exist yet)."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ManifestError(f"{path}: the edit would not be valid TOML: {exc}", "this is a bug in patchmgr") from exc
    for name, table in (raw.get("upstreams") or {}).items():
        listed = table.get("patches") if isinstance(table, dict) else None
        if not isinstance(listed, list):
            continue
        fresh = {pid for pid in listed if isinstance(pid, str) and patches_dir / name / f"{pid}.patch" in planned}
        for pid in fresh:  # the validator below checks the others, with their files
            if not PATCH_ID.match(pid):
                raise ManifestError(f"{path}: {pid!r} is not a patch id (letters, digits, '.', '_', '+', '-')",
                                    "rename the commit's patch (its git note) and run again")
        if fresh and len(set(listed)) != len(listed):
            raise ManifestError(f"{path}: upstreams.{name}.patches would list a patch twice", "list each patch once")
        table["patches"] = [pid for pid in listed if pid not in fresh]
    _Validator(path, patches_dir).target(raw)


def listed_elsewhere(project: Project, target: str, upstream: str, patch_id: str) -> list[str]:
    """The other targets whose series for ``upstream`` list ``patch_id``: they share its file."""
    users = []
    for name in project.target_names():
        if name == target:
            continue
        try:
            other = project.target(name)
        except PatchmgrError:
            users.append(f"{name} (its manifest does not load)")  # be safe: it may list the file
            continue
        if any(u.name == upstream and patch_id in u.patch_ids for u in other.upstreams):
            users.append(name)
    return users


def state_dir(root: Path) -> Path:
    return root / STATE


def recover_project(root: Path) -> str | None:
    """Roll back (or finish) a refresh, bump or export that was killed while writing; say which.

    Run before anything is read, so that a plan never starts from half-written files.
    Takes the lock only when there is a journal: a run that finds none writes nothing.
    """
    state = state_dir(root)
    if not os.path.lexists(state / JOURNAL):
        return None
    try:
        with StateLock(state):
            return recover(state)
    except OSError as exc:
        raise StateError(f"cannot recover the interrupted run in {state}: {exc.strerror or exc}",
                         "fix the cause (permissions, space), then run again") from None


def write_files(root: Path, writes: Mapping[Path, bytes | None], expected: Mapping[Path, bytes | None]) -> None:
    """Write each of ``writes`` (None: remove it) in one journaled transaction, after checking them all.

    ``expected`` holds the bytes each file had when the plan read it (None:
    absent); a file that changed since (another run, an editor) refuses the
    whole write, so a plan never overwrites work it did not see. Every path must
    be a regular file or absent, in a folder patchmgr may write. Only then is
    anything written, all of it or (on any failure, or a crash) none.
    """
    if not writes:
        return
    _check_paths(writes)
    state = state_dir(root)
    try:
        with StateLock(state):
            recover(state)  # a run killed since this one planned: put its files back first
            for path, data in expected.items():
                if _current(path) != data:
                    raise StateError(f"{path} changed while patchmgr was working on it; nothing was written",
                                     "run the command again")
            apply_transaction(state, writes)
    except OSError as exc:  # the lock or the journal folder could not be made
        where = f" {exc.filename}" if exc.filename else ""
        raise StateError(f"cannot write{where}: {exc.strerror or exc}; nothing was changed",
                         "fix the cause, then run again") from None


def _check_paths(writes: Mapping[Path, bytes | None]) -> None:
    for path in writes:
        if path.is_symlink() or (path.exists() and not path.is_file()):
            raise StateError(f"{path} is not a regular file; nothing was written",
                             "put the file back as a plain file, then run again")
        folder = path.parent
        while not folder.exists() and folder != folder.parent:
            folder = folder.parent
        if not folder.is_dir():
            raise StateError(f"{folder} is not a folder; nothing was written", "fix the project layout")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise StateError(f"cannot write in {folder}: permission denied; nothing was written",
                             "make the folder writable, then run again")


def _current(path: Path) -> bytes | None:
    try:
        return path.read_bytes() if path.is_file() else None
    except OSError as exc:
        raise StateError(f"cannot read {path}: {exc.strerror}", "fix its permissions, then run again") from None


def _edit(text: str, path: Path, upstream: str, change) -> str:
    document = tomlkit.parse(text)
    table = document.get("upstreams", {}).get(upstream)
    if not isinstance(table, Table):
        raise ManifestError(f"{path}: no [upstreams.{upstream}] table to edit", f"see {path}")
    change(table)
    new_text = tomlkit.dumps(document)
    return text if new_text == text else new_text
