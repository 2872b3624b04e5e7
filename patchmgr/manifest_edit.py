"""Rewrite single values of a target manifest, keeping its comments and layout (tomlkit).

Like pre-commit's ``autoupdate``, which rewrites only the ``rev:`` line: a
bump moves ``commit`` (and ``version``), an export or a dropped patch changes
``patches``, and every other byte of the file stays. The result is validated
as a manifest before it replaces the file.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import tomlkit
from tomlkit.items import Array, Table

from patchmgr.errors import ManifestError, PatchmgrError
from patchmgr.gitio import FULL_SHA
from patchmgr.manifest import load_target
from patchmgr.project import Project


def set_pin(path: Path, upstream: str, commit: str, ref: str, version: str | None = None) -> None:
    """Point ``upstream`` at ``commit``; the line's comment names ``ref`` (dropped for a bare commit id)."""

    def change(table: Table) -> None:
        table["commit"] = commit
        item = table["commit"]
        item.trivia.comment_ws, item.trivia.comment = ("  ", f"# {ref}") if not FULL_SHA.match(ref) else ("", "")
        if version is not None:
            table["version"] = version

    _edit(path, upstream, change)


def set_series(path: Path, upstream: str, patch_ids: Sequence[str]) -> None:
    """Make ``patches`` of ``upstream`` exactly ``patch_ids``, touching only what differs."""

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

    _edit(path, upstream, change)


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


def _edit(path: Path, upstream: str, change) -> None:
    text = path.read_text(encoding="utf-8")
    document = tomlkit.parse(text)
    table = document.get("upstreams", {}).get(upstream)
    if not isinstance(table, Table):
        raise ManifestError(f"{path}: no [upstreams.{upstream}] table to edit", f"see {path}")
    change(table)
    new_text = tomlkit.dumps(document)
    if new_text == text:
        return
    staged = path.with_name(f".{path.name}.patchmgr-new")
    staged.write_text(new_text, encoding="utf-8")
    os.replace(staged, path)
    try:
        load_target(path, path.parent.parent / "patches")
    except ManifestError:
        path.write_text(text, encoding="utf-8")  # never leave a manifest that does not load
        raise
