"""``patchmgr edit`` (and ``edit --onto``): the checkout built in the edit slot, swapped in only when it is done.

The edit checkout DIR has its slot next to it (``.DIR.patchmgr-edit``: the lock, the journal, staging), so
DIR itself can be replaced whole. Every change of DIR (a new checkout at the pin, a move onto a new ref, a
``--continue``, ``--skip`` or ``--abort``) is made in the slot's staging and swapped in through the slot's
journal (``targets.slot``): a failed or killed run leaves DIR exactly as it was, or exactly as the run left it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from patchmgr.check.status import check_upstream
from patchmgr.io.files import remove_tree
from patchmgr.io.git import GitRepo
from patchmgr.io.journal import JOURNAL
from patchmgr.maintain.edit_record import (
    NOTES_REF,
    EditRecord,
    PatchCommit,
    add_note,
    has_record,
    read_record,
    write_record,
)
from patchmgr.maintain.onto import OntoOutcome, plan_onto, start_onto
from patchmgr.model.errors import SourceError, StateError, UsageError
from patchmgr.model.manifest import Target, Upstream
from patchmgr.model.project import Project
from patchmgr.sources.upstream import Sources
from patchmgr.targets.absent import absent_note
from patchmgr.targets.build import build_checkout
from patchmgr.targets.localwork import SAVED_PREFIX, LocalWork
from patchmgr.targets.slot import (
    Place,
    Slot,
    begin,
    discard,
    local_work,
    locked_slot,
    remove_made,
    save_works,
    swap_in,
    topmost_missing,
)


@dataclass
class EditOutcome:
    target: str
    upstream: Upstream
    into: Path
    pin: str
    commits: list[tuple[str, str]]  # (patch id, commit)
    notes: list[str] = field(default_factory=list)


def edit_state(into: Path) -> Path:
    """The slot of the edit checkout ``into``: next to it, so that the checkout can be swapped whole."""
    return into.parent / f".{into.name}.patchmgr-edit"


@contextmanager
def locked_edit(into: Path, notes: list[str]) -> Iterator[Slot]:
    """The edit checkout's slot, locked and recovered; removed again when the run ends (unless a journal that
    could not be undone is waiting there for the next run)."""
    state = edit_state(into)
    made = topmost_missing(into.parent)
    try:
        with locked_slot(state, notes, "fix the cause (permissions, space), then run edit again", into) as slot:
            try:
                yield slot
            finally:
                if not os.path.lexists(state / JOURNAL):
                    remove_tree(state)  # under the lock: a run waiting for it locks anew
    finally:
        remove_made(into.parent, made)  # the parent folders the lock made, when the run left them empty


@dataclass(frozen=True)
class EditRequest:
    """What ``edit`` and ``edit --onto`` build from: upstream ``name`` of ``target`` at its pin, from ``sources``,
    as the checkout ``into``; ``force``: over work not yet exported, saved first."""

    project: Project
    target: Target
    name: str
    sources: Sources
    into: Path
    force: bool = False


def edit_checkout(request: EditRequest) -> EditOutcome:
    """A checkout of ``request.name`` at its pin in ``request.into``, one commit per patch.

    ``into`` may be empty, or an earlier edit checkout of the same upstream: that one is rebuilt only when
    it holds nothing that export has not written back (commits, changed or untracked files, branches,
    stashes), or with ``force`` after that work is carried into the new checkout as branches.
    """
    upstream = request.target.upstream(request.name)
    into = request.into.resolve()
    notes: list[str] = []
    with locked_edit(into, notes) as slot:
        outcome = _build_at_pin(slot, request, upstream, into, notes)
        swap_in(slot, {into: slot.staged(upstream.name)})
    return outcome


def edit_onto(request: EditRequest, ref: str) -> OntoOutcome:
    """``edit`` at the pin, then the series moved onto ``ref`` there as far as it applies (``maintain.onto``),
    all of it in the slot's staging: ``into`` changes only when the move has started (or finished), never when
    it fails. The ref is resolved, and the patches it already carries found, before anything is written."""
    upstream = request.target.upstream(request.name)
    into = request.into.resolve()
    plan = plan_onto(request.project, upstream, request.sources, ref)
    notes: list[str] = []
    with locked_edit(into, notes) as slot:
        _build_at_pin(slot, request, upstream, into, notes)
        try:
            outcome = start_onto(slot.staged(upstream.name), into, request.project, upstream, plan, request.sources)
        except BaseException:
            discard(slot)
            raise
        swap_in(slot, {into: slot.staged(upstream.name)})
    outcome.notes[:0] = notes
    return outcome


def _build_at_pin(slot: Slot, request: EditRequest, upstream: Upstream, into: Path, notes: list[str]) -> EditOutcome:
    """The checkout at the pin, one commit per patch, built in the slot's staging (with any local work of the
    checkout it replaces saved into it); ``into`` (resolved) is not touched."""
    name, target, sources = upstream.name, request.target, request.sources
    work = _edit_local_work(into, target, upstream, request.force)
    status = check_upstream(request.project, upstream, sources, None)
    if not status.available:
        raise SourceError(status.error or f"{name} is unavailable", status.hint)
    if status.release is not None:
        raise StateError(
            f"{name}: edit needs a git source of the pin, not {status.source}",
            f"pass a clone with --source {name}=PATH_OR_URL",
        )
    broken = [f"{r.patch.id} ({r.state.value})" for r in status.results if not r.state.applies]
    if broken:
        raise StateError(
            f"{name}: not every patch applies at the pin: {', '.join(broken)}",
            "fix those patch files first; `patchmgr status` shows why",
        )
    begin(slot)
    try:
        entry = build_checkout(status, sources, slot.staging, target.name)
        save_works(slot, [work] if work else [], notes, "edit", into)
        staged = slot.staged(name)
        if entry.checkout and entry.checkout.absent:
            notes.append(absent_note(upstream.name, upstream.commit[:12], entry.checkout.absent))
        commits = [(p.id, p.commit or "") for p in entry.patches]
        with GitRepo(staged) as repo:
            repo.run("config", "notes.rewriteRef", NOTES_REF)  # amend and rebase carry the notes along
            for patch_id, commit in commits:
                add_note(repo, commit, patch_id)
        write_record(
            staged,
            EditRecord(
                target.name, name, upstream.commit, [PatchCommit(p.id, p.commit or "", p.sha256) for p in entry.patches]
            ),
        )
    except BaseException:
        discard(slot)
        raise
    return EditOutcome(target.name, upstream, into, upstream.commit, commits, notes)


def _edit_local_work(into: Path, target: Target, upstream: Upstream, force: bool) -> LocalWork | None:
    """The work in an earlier edit checkout at ``into`` that rebuilding it would lose; refuses unless forced."""
    if not os.path.lexists(into) or (into.is_dir() and not into.is_symlink() and not any(into.iterdir())):
        return None
    if into.is_symlink() or not has_record(into):
        raise UsageError(
            f"{into} exists and is not an empty folder (nor a checkout patchmgr edit made)",
            "choose a new folder for --into",
        )
    record = read_record(into)
    if (record.target, record.upstream) != (target.name, upstream.name):
        raise StateError(
            f"{into} is an edit checkout of {record.made_for()}, not {target.name}/{upstream.name}",
            "choose another folder for --into",
        )
    # during a move (edit --onto) not yet exported, every commit on the new base is work: none is written back
    recorded = record.onto.commit if record.onto else record.tip()
    move = record.onto

    def refusal(found: list[LocalWork]) -> StateError:
        return StateError(
            f"edit would rebuild {into} and lose work not yet exported: {found[0].describe()}; nothing was changed",
            f"write it back first with: patchmgr export --target {target.name} --upstream {upstream.name} --from "
            f"{into} (and commit or remove other files), or run edit again with --force to save it on a branch "
            f"{SAVED_PREFIX}<UTC time> in the new checkout"
            + (
                f"; a move to {move.ref} is under way there: finish it with patchmgr edit --continue/--skip/--abort "
                f"--into {into}"
                if move
                else ""
            ),
        )

    found = local_work([Place(upstream.name, into, recorded)], force, refusal)
    return found[0] if found else None
