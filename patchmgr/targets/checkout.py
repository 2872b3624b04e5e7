"""Apply a target into git checkouts (``apply --into DIR``) and verify them.

Everything is checked before anything is written: if any patch of any upstream
would need more than an exact placement, nothing changes. Checkouts are built
in a staging folder, then moved into place and the ledger written through a
journal (``io.journal``): a run killed at any point leaves DIR as it was
or fully applied once the next command that reads DIR has recovered it. A lock
on DIR keeps two runs from interleaving. A checkout holding local work (commits
beyond the ledger's, changed or untracked files, other branches, stashes) is
not rebuilt: the run refuses, or with ``force`` carries that work into the new
checkout as branches first (``targets.localwork``).

A checkout starts from the pinned commit (through the cache) or, when git is
out of reach, from the pinned release's files committed as the base. Each
patch's files enter the index as blobs of exactly the bytes ``status``
computed, so the upstream's .gitignore and .gitattributes change nothing that
is committed; the work tree is then written from the index as any checkout of
that commit is. A refused run or a dry run writes nothing in DIR, not even the
lock; a run that fails removes the DIR (or state folder) it made.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from patchmgr.check.status import TargetStatus, check_target
from patchmgr.io.disk import failure_text
from patchmgr.model.errors import GitError, StateError, UsageError
from patchmgr.model.manifest import Target
from patchmgr.model.project import Project
from patchmgr.model.source_identity import SourceIdentity
from patchmgr.sources.upstream import Sources
from patchmgr.targets.absent import absent_note
from patchmgr.targets.actions import ApplyAction
from patchmgr.targets.build import build_checkout, write_hint
from patchmgr.targets.checkout_verify import verify_into
from patchmgr.targets.into_lock import STATE, locked_into
from patchmgr.targets.ledger import LEDGER_NAME, Ledger, UpstreamLedger, read_into_ledger, same_plan
from patchmgr.targets.localwork import SAVED_PREFIX, LocalWork
from patchmgr.targets.slot import (
    Place,
    Slot,
    begin,
    discard,
    local_work,
    refuse_hint,
    remove_made,
    save_works,
    swap_in,
    topmost_missing,
)


@dataclass
class ApplyOutcome:
    status: TargetStatus
    into: Path
    action: ApplyAction
    ledger: Ledger | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.action is not ApplyAction.REFUSED


def apply_into(
    project: Project,
    target: Target,
    sources: Sources,
    into: Path,
    dry_run: bool = False,
    only: Sequence[str] = (),
    force: bool = False,
) -> ApplyOutcome:
    into = into.resolve()
    _refuse_project_folder(project, into)
    notes: list[str] = []
    with ExitStack() as stack:
        # Only a DIR that an apply already wrote has a state folder (and in it the lock and any journal
        # to recover); any other is read without a lock, so a refused run or a dry run creates nothing
        locked = (into / STATE).is_dir()
        slot = Slot(into / STATE)
        if locked:
            stack.enter_context(locked_into(into, notes))
        existing = _existing_ledger(into, target)
        status = check_target(project, target, sources, {}, only)
        if not status.ok:
            return ApplyOutcome(status, into, ApplyAction.REFUSED, notes=notes)
        made = None
        if not locked and not dry_run:
            # DIR (and its state folder) is made only now; another run may have applied meanwhile
            made = _make_folder(into)  # with the state folder, removed again when this run fails
            try:
                stack.enter_context(locked_into(into, notes))
            except BaseException as exc:
                _remove_made(made, into)
                if isinstance(exc, OSError):
                    raise StateError(
                        f"cannot lock {into / STATE}: {failure_text(exc)}; nothing was changed", write_hint(exc, into)
                    ) from None
                raise
        try:
            if not locked and not dry_run:
                existing = _existing_ledger(into, target)  # re-read under the lock
            if existing and _same_plan(existing, status) and verify_into(project, target, into, only).ok:
                return ApplyOutcome(status, into, ApplyAction.ALREADY_APPLIED, existing, notes)
            works = _local_work(into, existing, status, force)
            if dry_run:
                notes += [
                    f"would save local work of {w.name} ({w.counts()}) on a branch "
                    f"{SAVED_PREFIX}<UTC time> in {w.folder} before rebuilding it"
                    for w in works
                ]
                return ApplyOutcome(status, into, ApplyAction.DRY_RUN, notes=notes)
            ledger = _build_and_swap(slot, status, sources, into, existing, works, notes)
        except BaseException:
            if not locked and not dry_run:
                _remove_made(made, into)  # a DIR (or state folder) this run created goes again when it fails
            raise
    return ApplyOutcome(status, into, ApplyAction.APPLIED, ledger, notes)


def _refuse_project_folder(project: Project, into: Path) -> None:
    """``--into`` must not be the project root, nor inside its manifests/ or patches/ folder."""
    root = project.root.resolve()
    if into == root:
        raise UsageError(
            f"--into {into} is the project root itself: apply writes checkouts and its state there",
            "give a folder of its own, for example --into build/",
        )
    for folder in (project.manifests_dir, project.patches_dir):
        folder = folder.resolve()
        if into == folder or folder in into.parents:
            raise UsageError(
                f"--into {into} is inside the project's {folder.name}/ folder",
                f"give a folder outside {folder.name}/, for example --into build/",
            )


def _make_folder(into: Path) -> Path | None:
    """Create ``into`` (and missing parents); the topmost folder this created, or None when it existed."""
    missing = topmost_missing(into)
    try:
        into.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        _remove_made(missing, into)
        raise StateError(
            f"cannot create {into}: {failure_text(exc)}; nothing was changed", write_hint(exc, into)
        ) from None
    return missing


def _remove_made(made: Path | None, into: Path) -> None:
    """Undo what a failed run made before writing: the state folder (when it holds nothing but the lock),
    then ``into`` and the parents up to ``made`` (the topmost folder ``_make_folder`` created), if empty."""
    state = into / STATE
    if state.is_dir() and not state.is_symlink() and all(e.name == "lock" for e in state.iterdir()):
        shutil.rmtree(state, ignore_errors=True)
    remove_made(into, made)


def _existing_ledger(into: Path, target: Target) -> Ledger | None:
    existing = read_into_ledger(into) if into.is_dir() else None
    if existing and existing.target != target.name:
        raise StateError(
            f"{into} holds target {existing.target}, not {target.name}", "apply each target into its own folder"
        )
    for upstream in target.upstreams:
        folder = into / upstream.name
        if folder.exists() and not (existing and existing.upstream(upstream.name)):
            raise StateError(
                f"{folder} exists and was not made by patchmgr apply",
                "choose an empty --into folder, or remove that one",
            )
    return existing


def _local_work(into: Path, existing: Ledger | None, status: TargetStatus, force: bool) -> list[LocalWork]:
    """The local work in each checkout this run would rebuild; refuses (changing nothing) unless ``force``."""
    places = []
    for upstream_status in status.upstreams:
        name = upstream_status.upstream.name
        entry = existing.upstream(name) if existing else None
        if entry is not None:
            checkout = entry.checkout_part()
            places.append(Place(name, into / name, checkout.head_commit or checkout.base_commit))

    def refusal(found: list[LocalWork]) -> StateError:
        folders = ", ".join(str(w.folder) for w in found)
        hint = refuse_hint("apply")
        if any(w.not_a_checkout for w in found):
            hint = "move the files you want to keep out of that folder, then run apply again"
        return StateError(
            f"apply would rebuild {folders} and lose local work: "
            f"{'; '.join(w.describe() for w in found)}; nothing was changed",
            hint,
        )

    return local_work(places, force, refusal)


def _same_plan(ledger: Ledger, status: TargetStatus) -> bool:
    """The same series (``same_plan``), built from the same source."""
    return same_plan(ledger.series, status) and all(
        _built_from(ledger, u.upstream.name, u.origin) for u in status.upstreams
    )


def _built_from(ledger: Ledger, name: str, origin: SourceIdentity | None) -> bool:
    """Whether the ledger's checkout of ``name`` was built from ``origin`` (whether the cache or the location
    served the commit does not matter)."""
    entry = ledger.upstream(name)
    return entry is not None and origin is not None and entry.checkout_part().source.same_source(origin)


def _build_and_swap(
    slot: Slot,
    status: TargetStatus,
    sources: Sources,
    into: Path,
    existing: Ledger | None,
    works: Sequence[LocalWork] = (),
    notes: list[str] | None = None,
) -> Ledger:
    """Build every checkout in the slot's staging, then swap them in and write the ledger as one journaled
    transaction (``slot.swap_in``).

    The local ``works`` found in the checkouts being replaced are carried into the new ones as branches
    before the swap (``slot.save_works``), so discarding the old folders loses none of it.
    """
    built: list[UpstreamLedger] = []
    try:
        begin(slot)
        for upstream_status in status.upstreams:
            built.append(build_checkout(upstream_status, sources, slot.staging, status.target.name))
    except (OSError, GitError) as exc:
        hint = write_hint(exc, slot.staging)  # before the discard frees the space
        discard(slot)
        raise StateError(
            f"cannot build the checkouts in {slot.staging}: {failure_text(exc)}; nothing in {into} was changed", hint
        ) from None
    except BaseException:
        discard(slot)
        raise
    try:
        save_works(slot, works, notes if notes is not None else [], "apply", into)
    except BaseException:
        discard(slot)
        raise
    rebuilt = {entry.name for entry in built}
    kept = [u for u in (existing.upstreams if existing else []) if u.name not in rebuilt]
    ledger = Ledger(status.target.name, sorted(kept + built, key=lambda u: u.name))
    swap_in(
        slot,
        {into / entry.name: slot.staged(entry.name) for entry in built},
        {into / LEDGER_NAME: ledger.to_json().encode("utf-8")},
    )
    if notes is not None:
        notes += [absent_note(e.name, e.pin[:12], e.checkout.absent) for e in built if e.checkout and e.checkout.absent]
    return ledger
