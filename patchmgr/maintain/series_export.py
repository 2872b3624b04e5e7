"""``export --format series --into DIR``: a target written back as the old image-repository layout.

Per upstream, the series is checked at the pin as ``apply`` checks it (``check.status``: every patch must
apply exactly, or nothing is written), its files composed patch by patch by the engine, and the monolithic
patch is git's diff from the pin's files to those (``git diff --full-index``): ``git apply`` of it at the
pin gives the very bytes and modes ``apply`` writes. With it: ``series.conf``, ``pins.dockerfile`` and
``patchmgr-series/`` (``series_layout``), so that ``import`` of the folder gives the same patches back.

DIR must be empty or new (a killed export there is recovered first); ``force`` replaces the files export
writes and touches nothing else there. Everything is computed before anything is written, then written in
one journaled transaction (``targets.project_files.write_files``, DIR as its root): all of it or nothing.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from patchmgr.check.status import TargetStatus, UpstreamStatus, check_target
from patchmgr.engine.classify import Overlay
from patchmgr.io.journal import remove_idle_state
from patchmgr.maintain.importing.scratch import Scratch
from patchmgr.maintain.importing.sources import SERIES_CONF
from patchmgr.maintain.series_layout import (
    PINS,
    RECORD,
    RECORD_DIR,
    SeriesRecord,
    SeriesUpstream,
    piece_path,
    pins_text,
    prefix_problem,
    read_record,
    record_text,
    series_conf_text,
)
from patchmgr.model.errors import PatchmgrError, StateError, UsageError
from patchmgr.model.manifest import Target
from patchmgr.model.patchfile import with_message_masked
from patchmgr.model.project import Project
from patchmgr.model.records import sha256_bytes
from patchmgr.model.urls import without_credentials
from patchmgr.sources.upstream import Sources
from patchmgr.targets.build import staged_mode
from patchmgr.targets.project_files import STATE, recover_project, write_files


@dataclass(frozen=True)
class ExportedUpstream:
    """One upstream as exported: its layout entry, and how many files its monolithic patch changes."""

    layout: SeriesUpstream
    files: int


@dataclass(frozen=True)
class SeriesExport:
    target: str
    into: Path
    upstreams: tuple[ExportedUpstream, ...]
    written: tuple[Path, ...]  # every file written, in DIR
    replaced: tuple[Path, ...]  # those of them that were there before (--force)
    notes: tuple[str, ...]
    kept: tuple[str, ...] = ()  # upstreams an earlier export of the target wrote in DIR, kept as it wrote them


def export_series(
    project: Project, target: Target, sources: Sources, into: Path, only: Sequence[str] = (), force: bool = False
) -> SeriesExport:
    into = into.resolve()
    refuse_project_folder(project, into)
    problem = prefix_problem(_prefix(into))
    if problem is not None:  # series.conf names the patches by this path: import could not read it back
        raise UsageError(
            f"--into {into}: its path in the repository {problem}; nothing was written",
            "export into a folder whose path has no '|', '#' or line break",
        )
    notes: list[str] = []
    made_into = not os.path.lexists(into)
    try:
        if into.is_dir():
            recovered = recover_project(into)  # a killed export into DIR: undone before DIR is judged
            if recovered:
                notes.append(f"recovered {into}: {recovered}")
        return _export(project, target, sources, into, only, force, notes)
    except PatchmgrError as error:
        error.notes[:0] = notes  # a run that recovered DIR, then refused, still says what it recovered
        raise
    finally:  # DIR holds the layout alone: the lock the recovery or the write took goes (a journal left stays)
        remove_state(into, made_into)


def _export(
    project: Project, target: Target, sources: Sources, into: Path, only: Sequence[str], force: bool, notes: list[str]
) -> SeriesExport:
    refuse_nonempty(into, force)
    kept = _kept_upstreams(into, target, only)
    status = check_target(project, target, sources, {}, only)
    refuse_not_applying(status)
    upstreams: list[ExportedUpstream] = []
    writes: dict[Path, bytes | None] = {}
    with Scratch() as scratch:
        for upstream_status in status.upstreams:
            exported = _monolith(project, upstream_status, sources, scratch, into, writes)
            if exported is None:
                notes.append(f"{upstream_status.upstream.name}: its series changes nothing; no patch written for it")
            else:
                upstreams.append(exported)
    if not upstreams:
        raise StateError(
            f"target {target.name} has no patch to export{' for ' + ', '.join(only) if only else ''}; nothing was "
            "written",
            "add patches to the series first",
        )
    layouts = _in_order(target, [u.layout for u in upstreams], kept)
    prefix = _prefix(into)
    writes[into / SERIES_CONF] = series_conf_text(target.name, layouts, prefix).encode("utf-8")
    writes[into / PINS] = pins_text(target.name, layouts).encode("utf-8")
    writes[into / RECORD_DIR / RECORD] = record_text(SeriesRecord(target.name, tuple(layouts))).encode("utf-8")
    _stale_pieces(into, writes, {u.name for u in kept})
    expected = {path: _current(path) for path in writes}
    replaced = tuple(path for path, data in expected.items() if data is not None)
    write_files(into, writes, expected)
    if force and replaced:  # said once the files are written: a refused write replaced nothing
        notes.append(f"--force: replaced {len(replaced)} file(s) an earlier export (or someone) wrote in {into}")
    if kept:
        notes.append(
            f"kept {', '.join(u.name for u in kept)} from the earlier export in {into}: "
            f"{'its' if len(kept) == 1 else 'their'} {SERIES_CONF} lines, pins and patches, as it wrote them"
        )
    written = tuple(path for path, data in writes.items() if data is not None)
    return SeriesExport(
        target.name, into, tuple(upstreams), written, replaced, tuple(notes), tuple(u.name for u in kept)
    )


def refuse_project_folder(project: Project, into: Path) -> None:
    for folder in (project.manifests_dir, project.patches_dir):
        folder = folder.resolve()
        if into == folder or folder in into.parents:
            raise UsageError(
                f"--into {into} is inside the project's {folder.name}/ folder; nothing was written",
                "give a folder of the image repository (docker/npu_patch/) or a new one",
            )


def refuse_nonempty(
    into: Path, force: bool, writes: str = f"{SERIES_CONF}, {PINS}, <upstream>.patch, {RECORD_DIR}/"
) -> None:
    """Refuse an ``--into`` that is no folder, or one holding files, unless ``force``; ``writes``: what export
    writes there, for the hint."""
    if (into.exists() or into.is_symlink()) and not into.is_dir():
        raise UsageError(f"--into {into} is not a folder; nothing was written", "give a new or empty folder")
    entries = sorted(e.name for e in into.iterdir() if e.name != STATE) if into.is_dir() else []
    if entries and not force:
        listed = ", ".join(entries[:5]) + (f" and {len(entries) - 5} more" if len(entries) > 5 else "")
        raise StateError(
            f"{into} is not empty (it holds {listed}); export never writes over a folder's files unasked, "
            "nothing was written",
            f"give a new or empty folder, or pass --force to replace the files export writes there ({writes}); "
            "nothing else in it is touched",
        )


def _kept_upstreams(into: Path, target: Target, only: Sequence[str]) -> tuple[SeriesUpstream, ...]:
    """The upstreams an earlier export of this target wrote in DIR that an export of ``only`` keeps: its
    series.conf lines, pins and patches are DIR's as much as the new ones. Refused where they cannot be known
    (a damaged record, a series.conf no export wrote, another target's export): the new files would drop them."""
    if not only or not into.is_dir():
        return ()
    whole = "export the whole target (without --upstream) with --force: it writes every line anew"
    try:
        record = read_record(into)
    except PatchmgrError as exc:
        raise StateError(f"{exc.message}; --upstream would drop the other upstreams it records", whole) from None
    if record is None:
        if any((into / name).exists() for name in (SERIES_CONF, PINS)):
            raise StateError(
                f"{into / SERIES_CONF} was not written by patchmgr export (no {RECORD_DIR}/{RECORD}): an export of "
                f"{', '.join(only)} alone there would drop its other lines; nothing was written",
                f"give a new or empty folder, or {whole}",
            )
        return ()
    if record.target != target.name:
        raise StateError(
            f"{into} holds the export of target {record.target}: an export of target {target.name}'s "
            f"{', '.join(only)} there would mix two targets in one series.conf; nothing was written",
            f"give a new or empty folder, or {whole}",
        )
    return tuple(u for u in record.upstreams if u.name not in only)


def _in_order(target: Target, exported: list[SeriesUpstream], kept: Sequence[SeriesUpstream]) -> list[SeriesUpstream]:
    """The exported and the kept upstreams in the target's order (series.conf is applied top to bottom); a kept
    one the target no longer has goes last, in the order the earlier export wrote them."""
    by_name = {u.name: u for u in (*kept, *exported)}
    order = [u.name for u in target.upstreams if u.name in by_name]
    return [by_name[name] for name in order] + [u for u in kept if u.name not in order]


def refuse_not_applying(status: TargetStatus) -> None:
    """What ``apply`` refuses, export refuses: the monolith is the series as apply applies it."""
    for upstream_status in status.upstreams:
        name = upstream_status.upstream.name
        if upstream_status.error is not None or upstream_status.commit is None:
            raise StateError(
                f"{name}: its pin cannot be read ({upstream_status.error or 'no source'}); nothing was written",
                upstream_status.hint or f"pass --source {name}=PATH_OR_URL",
            )
        bad = [r for r in upstream_status.results if not r.ok]
        if bad:
            said = "; ".join(
                f"{r.patch.id} is {r.state.value}{'' if r.guards_hold else ', a guard broken'}" for r in bad
            )
            raise StateError(
                f"{name}: the series does not apply exactly at its pin ({said}); export writes what apply applies, "
                "nothing was written",
                "see patchmgr status; refresh or edit the patches until they apply, then export again",
            )


def _monolith(
    project: Project,
    upstream_status: UpstreamStatus,
    sources: Sources,
    scratch: Scratch,
    into: Path,
    writes: dict[Path, bytes | None],
) -> ExportedUpstream | None:
    """The upstream's monolithic patch (and its patch files) added to ``writes``; None when the series nets
    nothing."""
    upstream = upstream_status.upstream
    if not upstream.git:
        raise UsageError(
            f"{upstream.name} has no git URL, and a Dockerfile clones it by one; nothing was written",
            f"add git = URL to [upstreams.{upstream.name}] in the manifest",
        )
    try:
        source = sources.open_git(upstream, None)
    except PatchmgrError as exc:
        raise StateError(
            f"{upstream.name}: its pin {upstream.commit[:12]} cannot be read from git ({exc.message}); export "
            "diffs against the pinned commit, nothing was written",
            exc.hint,
        ) from None
    overlay = Overlay(source)
    paths = sorted({p for r in upstream_status.results for p in r.files})
    pinned = dict(zip(paths, source.repo.path_entries(source.commit, paths), strict=True))
    modes = {path: entry[0] for path, entry in pinned.items() if entry}
    for result in upstream_status.results:  # in order, as apply stages them: each file's mode as it makes it
        for path, data in result.files.items():
            if data is not None:
                modes[path] = staged_mode(path, data, result.patch, modes)
        overlay.update(result.files)
    before = {path: source.read(path) for path in paths}
    after = {path: overlay.read(path) for path in paths}
    changed = [p for p in paths if before[p] != after[p]]  # apply keeps a file's mode: only new files get one
    if not changed:
        return None
    diff = scratch.diff(
        {p: before[p] for p in changed}, {p: after[p] for p in changed}, {p: modes.get(p, "100644") for p in changed}
    )
    data = diff.encode("utf-8", "surrogateescape")  # git's bytes back as they were (a file that is not UTF-8)
    patch_name = f"{upstream.name}.patch"
    writes[into / patch_name] = data
    for patch_id in upstream.patch_ids:  # an image repository gets no credential: not in a patch's message either
        piece = project.patch_path(upstream.name, patch_id).read_bytes()
        writes[piece_path(into, upstream.name, patch_id)] = with_message_masked(piece)
    layout = SeriesUpstream(
        upstream.name,
        without_credentials(upstream.git),  # the build gets them from git (docs/images.md), never from these files
        upstream_status.commit or upstream.commit,
        upstream.version,
        upstream.pypi,
        patch_name,
        sha256_bytes(data),
        upstream.patch_ids,
    )
    return ExportedUpstream(layout, len(changed))


def _prefix(into: Path) -> str:
    """DIR's path in the git work tree holding it (``docker/npu_patch/``), as ``series.conf`` names patches
    (relative to that repository's root; outside git, to the series.conf's own folder)."""
    top = next((folder for folder in (into, *into.parents) if (folder / ".git").exists()), None)
    relative = into.relative_to(top).as_posix() if top is not None else "."
    return "" if relative == "." else relative + "/"


def _stale_pieces(into: Path, writes: dict[Path, bytes | None], kept: set[str]) -> None:
    """The patch files an earlier export recorded in DIR that this one does not write again: removed with it
    (those of the ``kept`` upstreams stay, and an unreadable record leaves them; nothing else in DIR is ever
    removed)."""
    try:
        old = read_record(into)
    except PatchmgrError:
        return
    for upstream in old.upstreams if old else ():
        if upstream.name in kept:
            continue
        for patch_id in upstream.patch_ids:
            path = piece_path(into, upstream.name, patch_id)
            if path not in writes and path.is_file() and not path.is_symlink():
                writes[path] = None


def _current(path: Path) -> bytes | None:
    try:
        return path.read_bytes() if path.is_file() else None
    except OSError as exc:
        raise StateError(f"cannot read {path}: {exc.strerror}; nothing was written", "fix its permissions") from None


def remove_state(into: Path, made_into: bool) -> None:
    """The state folder in DIR, when it holds its lock alone (this export's, or one a recovered export left):
    removed, so DIR holds the layout alone; DIR too when this export made it and it is empty (a write that
    failed). A journal a failure left stays, for the next export there to put back."""
    remove_idle_state(into / STATE)
    if made_into and into.is_dir() and not into.is_symlink() and not any(into.iterdir()):
        into.rmdir()
