"""Edit patches as commits and write them back (``patchmgr edit`` / ``patchmgr export``).

As Electron's git-import-patches/git-export-patches and gbp pq do it: ``edit``
checks the upstream out at its pin with each patch as one commit (message,
author and date from the patch); the user amends, rebases, adds or drops
commits there; ``export`` writes each commit back as a patch file in the
project's format (``git format-patch --zero-commit --full-index``) and sets
the series to the commits' order.

Export is stable: a commit that is still the one ``edit`` made leaves its
patch file untouched, and a regenerated patch equal to the file is not
rewritten. Which patch a commit is follows it through amends and rebases in
a git note (``refs/notes/patchmgr``), so the commit message stays the patch's.

A patch file another target lists is not rewritten unasked (``shared_files``):
export refuses, or writes this target's own copy (``--own-copy``), or moves the
targets named by ``--also-target`` along.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path

from patchmgr.engine.classify import check_patch
from patchmgr.engine.results import GuardResult, State
from patchmgr.io.git import GitRepo
from patchmgr.maintain import manifest_edit
from patchmgr.maintain.edit_checkout import EditOutcome, EditRequest, edit_checkout, edit_onto, locked_edit
from patchmgr.maintain.edit_record import (
    NOTES_REF,
    RECORD,
    EditRecord,
    Move,
    PatchCommit,
    note_of,
    read_record,
    record_path,
    write_record,
)
from patchmgr.maintain.export_form import file_form
from patchmgr.maintain.export_guards import guards_at_head
from patchmgr.maintain.onto import MAILS
from patchmgr.maintain.rangediff import RangeDiff, range_diff
from patchmgr.maintain.shared_files import Movers, Sharing, copies_said, manifest_changes, movers, others, own_copies
from patchmgr.model.dep3_edit import set_last_update
from patchmgr.model.errors import StateError, UsageError
from patchmgr.model.manifest import PATCH_ID, Target, Upstream
from patchmgr.model.patchfile import parse_patch
from patchmgr.model.project import Project
from patchmgr.model.records import sha256_bytes
from patchmgr.model.text import as_bytes
from patchmgr.sources.upstream import GitSource, release_version
from patchmgr.targets.project_files import write_files

__all__ = ["NOTES_REF", "RECORD", "EditOutcome", "EditRequest", "edit_checkout", "edit_onto", "export_checkout"]


class ExportAction(StrEnum):
    """What export does to one patch file."""

    UNCHANGED = "unchanged"  # the file already holds the commit's patch: left byte for byte
    UPDATED = "updated"  # the file is rewritten from the commit (its Last-Update set)
    ADDED = "added"  # a patch file that was not there: written new


@dataclass(frozen=True)
class ExportedPatch:
    id: str
    commit: str
    action: ExportAction
    path: Path


@dataclass(frozen=True)
class ExportOutcome:
    upstream: Upstream
    source: Path  # the edit checkout
    patches: tuple[ExportedPatch, ...]
    removed: tuple[str, ...]  # the series' patch ids that no commit of the checkout exports (dropped: why)
    series_changed: bool
    moved: tuple[str, str, str] | None  # (old pin, new base, ref): from an edit --onto checkout
    old_version: str | None
    new_version: str | None  # None: the version line stays
    notes: tuple[str, ...] = ()
    shared: dict[str, list[str]] = field(default_factory=dict)  # removed id -> other targets keeping its file
    dropped: dict[str, str] = field(default_factory=dict)  # removed id -> why (upstream carries it as ...)
    carriers: dict[str, str] = field(default_factory=dict)  # removed id -> the upstream commit with its patch-id
    range_diff: RangeDiff | None = None  # the old series against the new one
    # patch id -> its GuardResults on the checkout's HEAD, after writing (maintain/export_guards.py)
    guards: dict[str, list[GuardResult]] = field(default_factory=dict)
    copies: dict[str, str] = field(default_factory=dict)  # patch id -> the id of this target's own copy (--own-copy)
    also: tuple[str, ...] = ()  # the targets that moved with this one (--also-target)

    @property
    def guards_hold(self) -> bool:
        return all(g.holds for guards in self.guards.values() for g in guards)

    @property
    def changed(self) -> bool:
        return (
            self.series_changed or bool(self.moved) or any(p.action is not ExportAction.UNCHANGED for p in self.patches)
        )


def export_checkout(
    project: Project,
    target: Target,
    name: str,
    source: Path,
    version: str | None = None,
    sharing: Sharing | None = None,
) -> ExportOutcome:
    """Write the commits of an ``edit`` checkout back as the upstream's patch files and series.

    From a checkout that ``edit --onto REF`` moved, the pin (and version) moves
    to the new base too, patches that upstream carries leave the series with
    their commit named, and ``Last-Update`` of each changed patch becomes today.
    Every patch is generated and checked, and the new manifest text validated,
    before anything is written; then the patch files, the removals, the
    manifest and the checkout's record are written in one journaled
    transaction (``project_files.write_files``): all of them, or none. The outcome carries the exported
    patches' guards on the checkout's HEAD, evaluated after writing. ``sharing``: what to do with a patch file
    another target lists (``shared_files``: by default export refuses to rewrite it).
    """
    source = source.resolve()
    moving = movers(project, target, name, sharing or Sharing())
    notes: list[str] = []
    with locked_edit(source, notes):  # a run killed while it swapped the checkout is undone first
        outcome = _export_locked(project, moving, name, source, version)
    guards = guards_at_head(project, target.name, name, source)
    return replace(outcome, notes=(*notes, *outcome.notes), guards=guards)


def _export_locked(project: Project, moving: Movers, name: str, source: Path, version: str | None) -> ExportOutcome:
    target = moving.target
    upstream = target.upstream(name)
    record = read_record(source)
    if (record.target, record.upstream) != (target.name, upstream.name):
        raise StateError(
            f"{source} was made for {record.made_for()}, not {target.name}/{upstream.name}",
            "export into the target and upstream it was made for",
        )
    pin = record.pin
    if pin != upstream.commit:
        raise StateError(
            f"{upstream.name}: the pin moved from {str(pin)[:12]} to {upstream.commit[:12]} since edit",
            "run patchmgr edit again on the new pin and redo the change there",
        )
    onto = record.onto
    old_version, new_version, notes = _new_version(upstream, onto, version)
    with GitRepo(source) as repo:
        _refuse_unfinished(repo, source, onto)
        base = onto.commit if onto else pin
        commits = _commits_since(repo, base, source)
        known = {p.commit: p for p in record.patches}
        # a commit that lost its note (cherry-picked) is still its patch when the subject says so
        by_subject = {p.subject: p.id for p in reversed(project.patches(upstream)) if p.subject}
        used: set[str] = set()
        exported: list[tuple[ExportedPatch, bytes | None]] = []
        for commit, subject in commits:
            entry = known.get(commit)
            wanted = entry.id if entry else note_of(repo, commit)
            if wanted is None and by_subject.get(subject) not in used:
                wanted = by_subject.get(subject)
            patch_id = _patch_id(wanted, subject, used)
            path = project.patch_path(upstream.name, patch_id)
            if (
                entry
                and entry.id == patch_id
                and path.is_file()
                and (not onto or _file_makes(repo, commit, path, entry, upstream.name, patch_id))
            ):
                exported.append((ExportedPatch(patch_id, commit, ExportAction.UNCHANGED, path), None))
                continue
            data = as_bytes(repo.format_patch(commit))
            if b"\ndiff --git " not in data:
                raise StateError(
                    f"commit {commit[:12]} ({subject}) changes nothing",
                    "drop it (git rebase -i) or give it a change, then export again",
                )
            data = file_form(repo, record, commit, patch_id, path, data)  # a plain DEP-3 diff stays one
            parse_patch(data, path, upstream.name, patch_id)
            if path.is_file() and path.read_bytes() == data:
                exported.append((ExportedPatch(patch_id, commit, ExportAction.UNCHANGED, path), data))
                continue
            data = set_last_update(data)
            parse_patch(data, path, upstream.name, patch_id)
            exported.append(
                (
                    ExportedPatch(
                        patch_id, commit, ExportAction.UPDATED if path.is_file() else ExportAction.ADDED, path
                    ),
                    data,
                )
            )
        exported, copies = _own_copies(project, moving, upstream, exported)
        series = [p.id for p, _ in exported]
        removed = tuple(pid for pid in upstream.patch_ids if pid not in series and pid not in copies)
        moved = (pin, base, onto.ref) if onto else None
        carried = {c.id: c for c in onto.carried} if onto else {}
        dropped: dict[str, str] = {}
        for patch_id in removed:  # every patch that leaves the series is named with why
            if patch_id in carried:
                dropped[patch_id] = carried[patch_id].describe()
            elif onto and patch_id in onto.skipped:
                dropped[patch_id] = f"skipped during edit --onto {onto.ref}"
            else:
                dropped[patch_id] = f"no commit in {source} carries it any more"
        outcome = ExportOutcome(
            upstream, source, tuple(p for p, _ in exported), removed, series != list(upstream.patch_ids), moved,
            old_version, new_version, tuple(notes), dropped=dropped,
            carriers={patch_id: carried[patch_id].commit for patch_id in removed if patch_id in carried},
            copies=copies, also=moving.also,
        )  # fmt: skip
        old_tip = onto.old_tip if onto else (record.patches[-1].commit if record.patches else None)
        if outcome.changed and old_tip and old_tip != pin:
            outcome = replace(outcome, range_diff=range_diff(repo, f"{pin}..{old_tip}", f"{base}..HEAD"))
    said = copies_said(project, moving, upstream.name, outcome.copies)
    outcome = replace(outcome, shared=_shared(project, moving, outcome), notes=(*outcome.notes, *said))
    writes, expected = _export_changes(project, moving, outcome, exported, series)
    sums = [(p.id, p.commit, sha256_bytes(data if data is not None else _read(p.path))) for p, data in exported]
    if not writes:  # no project file changes: only the checkout's record, which is not the project's
        try:
            write_record(source, EditRecord(target.name, upstream.name, base, [PatchCommit(*s) for s in sums]))
        except OSError as exc:
            raise StateError(
                f"cannot write {exc.filename or source}: {exc.strerror or exc}", "fix the cause, then export again"
            ) from None
        return outcome
    writes[record_path(source)] = EditRecord(
        target.name, upstream.name, base, [PatchCommit(*s) for s in sums]
    ).to_bytes()
    write_files(project.root, writes, expected)
    if onto:
        shutil.rmtree(source / ".git" / MAILS, ignore_errors=True)
    return outcome


def _new_version(
    upstream: Upstream, onto: Move | None, version: str | None
) -> tuple[str | None, str | None, list[str]]:
    """The version before and the one the pin moves to (``--version``, else the ref's tag; None: the version
    line stays), and a note why it stays where it does."""
    manifest_edit.check_version(version, "the new ref")
    if version is not None and not onto:
        raise UsageError(
            "--version goes with an export from an edit --onto checkout (the pin moves there); nothing was written",
            "leave --version out, or move the series with edit --onto REF",
        )
    if not onto:
        return None, None, []
    guessed = version or release_version(upstream, onto.ref)
    if version is not None or (upstream.version and guessed):
        return upstream.version, guessed, []
    if upstream.version:
        note = (
            f"version stays {upstream.version}: {onto.ref} names no release version; pass --version X.Y.Z if it changed"
        )
        return upstream.version, None, [note]
    return upstream.version, None, []


def _refuse_unfinished(repo: GitRepo, source: Path, onto: Move | None) -> None:
    if repo.am_in_progress() or (onto and (onto.queue or onto.current)):
        waiting = onto and (onto.current or (onto.queue[0].id if onto.queue else None))
        what = f"the move to {onto.ref} stopped at {waiting}" if onto and waiting else "a git am is in progress"
        raise StateError(
            f"{source}: {what}; export writes nothing until it is finished",
            f"resolve the conflicts, git add them, then patchmgr edit --continue --into {source} "
            f"(or --skip, or --abort), then export again",
        )


def _file_makes(repo: GitRepo, commit: str, path: Path, entry: PatchCommit, upstream: str, patch_id: str) -> bool:
    """Whether the patch file, still as edit --onto applied it, applies exactly (``clean``) on ``commit``'s
    parent: then the commit is the file's change there, and the file stays byte for byte."""
    data = _read(path)
    if sha256_bytes(data) != entry.sha256:
        return False
    parents = repo.commit_info(commit).parents
    if len(parents) != 1:
        return False
    patch = parse_patch(data, path, upstream, patch_id)
    return check_patch(patch, GitSource(repo, parents[0], str(repo.path))).state is State.CLEAN


def _own_copies(
    project: Project, moving: Movers, upstream: Upstream, exported: list[tuple[ExportedPatch, bytes | None]]
) -> tuple[list[tuple[ExportedPatch, bytes | None]], dict[str, str]]:
    """The exported patches with each rewrite of a file another target lists made this target's own copy
    (``--own-copy``; without it, the refusal): the patches as they are written, and patch id -> copy id."""
    rewritten = [p.id for p, data in exported if data is not None and p.action is ExportAction.UPDATED]
    copies = own_copies(project, moving, upstream, rewritten, "export", taken=[p.id for p, _ in exported])
    out = []
    for patch, data in exported:
        copy = copies.get(patch.id)
        if copy is not None and data is not None:
            path = project.patch_path(upstream.name, copy)
            parse_patch(data, path, upstream.name, copy)
            patch = ExportedPatch(copy, patch.commit, ExportAction.ADDED, path)
        out.append((patch, data))
    return out, copies


def _shared(project: Project, moving: Movers, outcome: ExportOutcome) -> dict[str, list[str]]:
    """The patches leaving the series whose files stay: removed id -> the targets that list it and do not move."""
    name = outcome.upstream.name
    users = {pid: others(project, moving, name, pid) for pid in outcome.removed}
    return {pid: targets for pid, targets in users.items() if targets}


def _export_changes(
    project: Project,
    moving: Movers,
    outcome: ExportOutcome,
    exported: list[tuple[ExportedPatch, bytes | None]],
    series: list[str],
) -> tuple[dict[Path, bytes | None], dict[Path, bytes | None]]:
    """The project files an export writes (None: removes) and what each held; checks the new manifest."""
    upstream = outcome.upstream
    writes: dict[Path, bytes | None] = {}
    expected: dict[Path, bytes | None] = {}
    for patch, data in exported:
        if data is not None and patch.action is not ExportAction.UNCHANGED:
            writes[patch.path] = data
            expected[patch.path] = _read(patch.path) if patch.path.is_file() else None
    for patch_id in outcome.removed:
        path = project.patch_path(upstream.name, patch_id)
        if patch_id not in outcome.shared and path.is_file():
            writes[path] = None
            expected[path] = _read(path)
    if outcome.series_changed or outcome.moved:

        def edit(text: str, path: Path) -> str:
            new_text = manifest_edit.series_text(text, path, upstream.name, series)
            if outcome.moved:
                _old, base, ref = outcome.moved
                new_text = manifest_edit.pin_text(new_text, path, upstream.name, base, ref, outcome.new_version)
            return new_text

        manifests, held = manifest_changes(project, moving, edit, {p for p, d in writes.items() if d is not None})
        writes.update(manifests)
        expected.update(held)
    return writes, expected


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise StateError(f"cannot read {path}: {exc.strerror}", "fix its permissions, then export again") from None


def _commits_since(repo: GitRepo, pin: str, folder: Path) -> list[tuple[str, str]]:
    if repo.run("status", "--porcelain", "--untracked-files=no"):
        raise StateError(f"{folder} has uncommitted changes", "commit them (one commit per patch), then export")
    if not repo.run_ok("merge-base", "--is-ancestor", pin, "HEAD"):
        raise StateError(f"HEAD of {folder} does not sit on the pin {pin[:12]}", "rebase the commits onto the pin")
    out = repo.run("log", "--reverse", "--topo-order", "--format=%H%x00%P%x00%s", f"{pin}..HEAD")
    commits = []
    for line in out.splitlines():
        commit, parents, subject = line.split("\x00", 2)
        if len(parents.split()) > 1:
            raise StateError(
                f"commit {commit[:12]} is a merge; a patch series is a straight line",
                f"rebase the commits onto {pin[:12]} without merges",
            )
        commits.append((commit, subject))
    return commits


def _patch_id(wanted: str | None, subject: str, used: set[str]) -> str:
    """The patch id for a commit: its note's, else one made from its subject; never one already used."""
    base = wanted if wanted and PATCH_ID.match(wanted) else slug(subject)
    patch_id, number = base, 2
    while patch_id in used:
        patch_id, number = f"{base}-{number}", number + 1
    used.add(patch_id)
    return patch_id


def slug(subject: str) -> str:
    words = re.sub(r"[^a-z0-9]+", "-", subject.lower()).strip("-")
    return words[:60].rstrip("-") or "patch"
