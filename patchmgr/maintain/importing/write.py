"""Write an import: ``manifests/<target>.toml`` and ``patches/<upstream>/<piece>.patch``, all or nothing.

A new target's manifest is made with tomlkit; an existing one keeps every comment and line, and gets
the new upstream tables, or the new pieces appended to an upstream's ``patches`` when it is already
there at the same pin. Every text is written as TOML data (tomlkit values, ``set_comment`` for the
comment). An existing patch file is never overwritten. The manifest text is validated as
a manifest first; then everything is written in one journaled transaction (as refresh, bump and
export write), so a failure or a kill leaves the project as it was.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import tomlkit
from tomlkit.items import Array, Table

from patchmgr.maintain.importing.shared import same_patch
from patchmgr.maintain.manifest_edit import check_manifest, set_comment
from patchmgr.model.errors import ManifestError, UsageError
from patchmgr.model.manifest import LINT_PROFILE_KEY
from patchmgr.model.project import Project
from patchmgr.targets.project_files import check_places, write_files


@dataclass(frozen=True)
class UpstreamEntry:
    name: str
    git: str
    commit: str
    comment: str
    version: str | None
    pypi: str | None  # with version: the release stands in when git is out of reach
    patches: tuple[tuple[str, bytes], ...]  # (piece id, file bytes), in series order


def plan_writes(
    project: Project, target: str, description: str, entries: list[UpstreamEntry], lint_profile: str | None = None
) -> tuple[dict[Path, bytes | None], dict[Path, bytes | None]]:
    """(writes, what each path holds now): checked, nothing written. ``lint_profile``: the target's
    ``lint-profile`` when its manifest names none yet (a quilt series: DEP-3's)."""
    path = project.manifests_dir / f"{target}.toml"
    existing = path.read_text(encoding="utf-8") if path.is_file() else None
    writes: dict[Path, bytes | None] = {}
    for entry in entries:
        for pid, data in entry.patches:
            file = project.patch_path(entry.name, pid)
            if file.is_file() and not file.is_symlink() and same_patch(file.read_bytes(), data):
                continue  # the same patch another target lists: shared (``shared``)
            if file.exists() or file.is_symlink():
                raise UsageError(
                    f"{file.relative_to(project.root)} exists; import never overwrites a patch file, "
                    "nothing was written",
                    "remove or rename it, or name the pieces otherwise (--map)",
                )
            writes[file] = data
    check_places(project.root, [*writes, path])  # a dry run says it too: a link out of the project is refused
    text = manifest_text(existing, path, target, description, entries, lint_profile)
    check_manifest(path, text, project.patches_dir, planned=set(writes))
    writes[path] = text.encode("utf-8")
    expected = {p: (p.read_bytes() if p.is_file() else None) for p in writes}
    return writes, expected


def write_import(project: Project, writes: dict[Path, bytes | None], expected: dict[Path, bytes | None]) -> None:
    write_files(project.root, writes, expected)


def manifest_text(
    existing: str | None,
    path: Path,
    target: str,
    description: str,
    entries: list[UpstreamEntry],
    lint_profile: str | None = None,
) -> str:
    if existing is None:
        document = tomlkit.document()
        head = tomlkit.table()
        head["name"] = target
        head["description"] = description
        document["target"] = head
    else:
        document = tomlkit.parse(existing)
    section = document.get("target")
    if lint_profile is not None and isinstance(section, Table) and LINT_PROFILE_KEY not in section:
        section[LINT_PROFILE_KEY] = lint_profile
    upstreams = document.get("upstreams")
    if upstreams is None:
        upstreams = tomlkit.table(is_super_table=True)
        document["upstreams"] = upstreams
    for entry in entries:
        ids = [pid for pid, _ in entry.patches]
        table = upstreams.get(entry.name)
        if isinstance(table, Table):
            if str(table.get("commit")) != entry.commit:
                raise ManifestError(
                    f"{path}: upstream {entry.name} is pinned at {table.get('commit')}, the import at "
                    f"{entry.commit}; nothing was written",
                    f"import into another target, or bump {entry.name} there first",
                )
            series = table.get("patches")
            if not isinstance(series, Array):
                table["patches"] = ids
            else:
                clash = [pid for pid in ids if pid in series]
                if clash:
                    raise UsageError(
                        f"{path}: upstream {entry.name} already lists {', '.join(clash)}; nothing was written",
                        "name the pieces otherwise (--map)",
                    )
                for pid in ids:
                    series.append(pid)
            continue
        table = tomlkit.table()
        table["git"] = entry.git
        table["commit"] = entry.commit
        set_comment(table["commit"], entry.comment)
        if entry.version:
            table["version"] = entry.version
        if entry.pypi:
            table["pypi"] = entry.pypi
        series = tomlkit.array()
        series.extend(ids)
        if len(ids) > 2:
            series.multiline(True)
        table["patches"] = series
        upstreams[entry.name] = table
    return tomlkit.dumps(document)
