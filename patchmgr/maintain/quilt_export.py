"""``export --format quilt --into DIR``: one upstream's series written as quilt keeps it, for ``quilt push -a``.

DIR gets ``series`` (the patch files in the manifest's order, each applied with quilt's default ``-p1``)
and each patch file as the project holds it, header and diff byte for byte (credentials in the message
masked, as every export masks them): ``<id>.patch``. ``import`` of DIR gives the same patch files back.

The series is checked at the pin first as ``apply`` checks it (every patch must apply exactly, or nothing is
written), so that quilt on the pristine upstream gives the tree ``apply`` gives. DIR must be new or empty
(``force``: only the files export writes are replaced). Everything is written in one journaled transaction.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from patchmgr.check.status import check_target
from patchmgr.maintain.series_export import refuse_not_applying, refuse_project_folder, remove_state
from patchmgr.model.errors import StateError, UsageError
from patchmgr.model.manifest import Target
from patchmgr.model.patchfile import with_message_masked
from patchmgr.model.project import Project
from patchmgr.model.quilt_series import SERIES, series_text
from patchmgr.sources.upstream import Sources
from patchmgr.targets.project_files import STATE, recover_project, write_files


@dataclass(frozen=True)
class QuiltExport:
    target: str
    upstream: str
    commit: str
    into: Path
    patch_ids: tuple[str, ...]
    written: tuple[Path, ...]
    replaced: tuple[Path, ...]


def export_quilt(
    project: Project, target: Target, sources: Sources, into: Path, upstream: str | None, force: bool = False
) -> QuiltExport:
    into = into.resolve()
    refuse_project_folder(project, into)
    name = _one_upstream(target, upstream)
    made_into = not os.path.lexists(into)
    try:
        if into.is_dir():
            recover_project(into)  # a killed export into DIR: undone before DIR is judged
        status = check_target(project, target, sources, {}, [name])
        refuse_not_applying(status)
        results = status.upstreams[0].results
        if not results:
            raise StateError(f"{name} in target {target.name} has no patch to export; nothing was written", "add one")
        names = [f"{r.patch.id}.patch" for r in results]
        writes: dict[Path, bytes | None] = {into / SERIES: series_text(names).encode("utf-8")}
        for result in results:
            writes[into / f"{result.patch.id}.patch"] = with_message_masked(result.patch.data)
        _refuse_nonempty(into, force, set(writes))
        expected = {path: path.read_bytes() if path.is_file() else None for path in writes}
        write_files(into, writes, expected)
    finally:
        remove_state(into, made_into)
    commit = status.upstreams[0].commit or ""
    replaced = tuple(path for path, data in expected.items() if data is not None)
    return QuiltExport(target.name, name, commit, into, tuple(r.patch.id for r in results), tuple(writes), replaced)


def _one_upstream(target: Target, upstream: str | None) -> str:
    """A quilt series is one upstream's: the one named, or the target's only one."""
    if upstream is not None:
        return target.upstream(upstream).name
    if len(target.upstreams) == 1:
        return target.upstreams[0].name
    raise UsageError(
        f"target {target.name} has {len(target.upstreams)} upstreams; a quilt series holds the patches of one; "
        "nothing was written",
        f"name it with --upstream ({', '.join(u.name for u in target.upstreams)})",
    )


def _refuse_nonempty(into: Path, force: bool, writes: set[Path]) -> None:
    if (into.exists() or into.is_symlink()) and not into.is_dir():
        raise UsageError(f"--into {into} is not a folder; nothing was written", "give a new or empty folder")
    entries = sorted(e.name for e in into.iterdir() if e.name != STATE) if into.is_dir() else []
    if entries and not force:
        listed = ", ".join(entries[:5]) + (f" and {len(entries) - 5} more" if len(entries) > 5 else "")
        raise StateError(
            f"{into} is not empty (it holds {listed}); export never writes over a folder's files unasked, "
            "nothing was written",
            f"give a new or empty folder, or pass --force to replace the files export writes there ({SERIES} and "
            f"the {len(writes) - 1} patch files); nothing else in it is touched",
        )
