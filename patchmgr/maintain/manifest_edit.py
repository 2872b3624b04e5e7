"""Rewrite single values of a target manifest, keeping its comments and layout (tomlkit).

Like pre-commit's ``autoupdate``, which rewrites only the ``rev:`` line: a
bump moves ``commit`` (and ``version``), an export or a dropped patch changes
``patches``, and every other byte of the file stays. The edits only compute
the new text; ``check_manifest`` validates it as a manifest before anything is
written, and ``write_files`` writes it together with the patch files that go
with it (refresh, bump, export) in one journaled transaction: all or nothing,
across a crash (an interrupted run is rolled back by the next one).

Every text goes into the TOML as data: values and keys through tomlkit (which
escapes them), comments through ``set_comment`` (one line, control characters
written as their escapes), never formatted into TOML text by hand.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable, Collection, Sequence
from pathlib import Path

import tomlkit
from packaging.version import InvalidVersion, Version
from tomlkit.items import Array, Item, Table

from patchmgr.io.confine import shown
from patchmgr.model.errors import ManifestError, PatchmgrError, UsageError
from patchmgr.model.manifest import PATCH_ID, Target, Upstream, validate_target
from patchmgr.model.project import Project
from patchmgr.model.urls import FULL_SHA


def pin_text(text: str, path: Path, upstream: str, commit: str, ref: str, version: str | None = None) -> str:
    """``text`` with ``upstream`` pointed at ``commit``; the line's comment names ``ref`` (none for a bare id)."""

    def change(table: Table) -> None:
        table["commit"] = commit
        set_comment(table["commit"], ref if not FULL_SHA.match(ref) else None)
        if version is not None:
            table["version"] = version

    return _edit(text, path, upstream, change)


def check_version(version: str | None, at: str) -> None:
    """``--version`` given to go with a moved pin (``at``: the ref, in words) is a PEP 440 version, checked before
    anything is computed or written."""
    if version is None:
        return
    try:
        Version(version)
    except InvalidVersion:
        raise UsageError(
            f"--version {version!r} is not a PEP 440 version; nothing was written",
            f"give the upstream's release version at {at}, e.g. --version 0.5.0",
        ) from None


def set_comment(item: Item, text: str | None) -> None:
    """``item``'s end-of-line comment (None: none), as data: a line break in it would start live TOML."""
    item.trivia.comment_ws, item.trivia.comment = ("  ", f"# {shown(text)}") if text else ("", "")


def series_text(text: str, path: Path, upstream: str, patch_ids: Sequence[str], comment: str | None = None) -> str:
    """``text`` with ``patches`` of ``upstream`` exactly ``patch_ids``, touching only what differs; ``comment``:
    the line's end-of-line comment, saying why the series changed (kept as it is when None)."""

    def change(table: Table) -> None:
        change_series(table)
        if comment is not None:
            set_comment(table["patches"], comment)

    def change_series(table: Table) -> None:
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
        for patch_id in patch_ids[len(series) :]:
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
            if not PATCH_ID.fullmatch(pid):
                raise ManifestError(
                    f"{path}: {pid!r} is not a patch id (letters, digits, '.', '_', '+', '-')",
                    "rename the commit's patch (its git note) and run again",
                )
        if fresh and len(set(listed)) != len(listed):
            raise ManifestError(f"{path}: upstreams.{name}.patches would list a patch twice", "list each patch once")
        table["patches"] = [pid for pid in listed if pid not in fresh]
    validate_target(raw, path, patches_dir)


def listed_elsewhere(
    project: Project, target: str, upstream: str, patch_id: str, besides: Collection[str] = ()
) -> list[str]:
    """The other targets (but ``besides``) whose series for ``upstream`` list ``patch_id``: they share its file."""
    users = []
    for name in project.target_names():
        if name == target or name in besides:
            continue
        try:
            other = project.target(name)
        except PatchmgrError:
            users.append(f"{name} (its manifest does not load)")  # be safe: it may list the file
            continue
        if listing(project, other, upstream, patch_id) is not None:
            users.append(name)
    return users


def listing(project: Project, other: Target, upstream: str, patch_id: str) -> Upstream | None:
    """The upstream of ``other`` whose series lists the file of ``upstream``'s ``patch_id``: by its name, or
    another one's patch that is the same file (a link to it, a hard link), or None."""
    mine = project.patch_path(upstream, patch_id)
    for theirs in other.upstreams:
        if theirs.name == upstream and patch_id in theirs.patch_ids:
            return theirs
    for theirs in other.upstreams:
        if theirs.name != upstream and any(
            _same_file(mine, project.patch_path(theirs.name, p)) for p in theirs.patch_ids
        ):
            return theirs
    return None


def _same_file(one: Path, other: Path) -> bool:
    try:
        return os.path.samefile(one, other)
    except OSError:  # one of them is not there: no file to share
        return False


def _edit(text: str, path: Path, upstream: str, change: Callable[[Table], None]) -> str:
    document = tomlkit.parse(text)
    table = document.get("upstreams", {}).get(upstream)
    if not isinstance(table, Table):
        raise ManifestError(f"{path}: no [upstreams.{upstream}] table to edit", f"see {path}")
    change(table)
    new_text = tomlkit.dumps(document)
    return text if new_text == text else new_text
