"""``export --format quilt --into DIR``: one upstream's series written as quilt keeps it, for ``quilt push -a``.

DIR gets ``series`` and each patch file as the project holds it, header and diff byte for byte (credentials in
the message masked, as every export masks them). Where the patches were imported from a quilt series, that
series is given back as import kept it (``patches/<upstream>/<target>.series``): its comments, blank lines and
file names, less the patches that left it and with those added since (``model.quilt_series.series_out``). Else
``series`` names ``<id>.patch`` in the manifest's order, each applied with quilt's default ``-p1``. ``import``
of DIR gives the same patch files back.

The series is checked at the pin first as ``apply`` checks it (every patch must apply exactly, or nothing is
written), so that quilt on the pristine upstream gives the tree ``apply`` gives. DIR must be new or empty
(``force``: only the files export writes are replaced). Everything is written in one journaled transaction.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from patchmgr.check.status import check_target
from patchmgr.maintain.series_export import refuse_nonempty, refuse_not_applying, refuse_project_folder, remove_state
from patchmgr.model.errors import StateError, UsageError
from patchmgr.model.input_files import read_input
from patchmgr.model.manifest import Target
from patchmgr.model.patchfile import with_message_masked
from patchmgr.model.project import Project
from patchmgr.model.quilt_series import SERIES, SeriesOut, kept_series_name, series_out
from patchmgr.sources.upstream import Sources
from patchmgr.targets.project_files import recover_project, write_files


@dataclass(frozen=True)
class QuiltExport:
    target: str
    upstream: str
    commit: str
    into: Path
    patch_ids: tuple[str, ...]
    written: tuple[Path, ...]
    replaced: tuple[Path, ...]
    kept_series: bool  # the series written is the one the patches were imported from


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
        series = _series(project, target.name, name, [r.patch.id for r in results])
        writes: dict[Path, bytes | None] = {into / SERIES: series.text.encode("utf-8")}
        for result in results:
            writes[into / series.names[result.patch.id]] = with_message_masked(result.patch.data)
        refuse_nonempty(into, force, f"{SERIES} and the {len(set(writes)) - 1} patch files")
        expected = {path: path.read_bytes() if path.is_file() else None for path in writes}
        write_files(into, writes, expected)
    finally:
        remove_state(into, made_into)
    commit = status.upstreams[0].commit or ""
    replaced = tuple(path for path, data in expected.items() if data is not None)
    ids = tuple(r.patch.id for r in results)
    return QuiltExport(target.name, name, commit, into, ids, tuple(writes), replaced, series.kept)


def _series(project: Project, target: str, upstream: str, ids: list[str]) -> SeriesOut:
    """The series to write: from the one import kept, when there is one."""
    kept = project.patches_dir / upstream / kept_series_name(target)
    if not kept.is_file():
        return series_out(ids, None, str(kept))
    data = read_input(kept, str(kept), f"put back the series import kept, or remove {kept.name}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(
            f"{kept} is not UTF-8; nothing was written", f"remove {kept.name} or write it in UTF-8"
        ) from None
    return series_out(ids, text, str(kept))


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
