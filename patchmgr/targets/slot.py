"""A checkout slot: the one way patchmgr replaces a git checkout a person may be working in.

``apply --into`` (each upstream's checkout in DIR) and ``edit`` (DIR itself, with ``--onto``, ``--continue``,
``--skip`` and ``--abort``) all replace a checkout the same way, through a ``Slot``:

- a lock on the slot's state folder, and before anything else the recovery of a run that was killed there
  (its journal finished or undone, the checkouts it was building or had moved aside removed);
- the local work in the checkout being replaced (commits beyond the recorded one, changed or untracked files,
  other branches, stashes): refused, changing nothing, or with ``--force`` saved as ``patchmgr-saved/<UTC
  time>`` branches in the new checkout (``localwork``);
- the new checkout built (or the old one copied, for a change made in place) in the staging folder, where a
  failure changes nothing the user sees;
- the swap: the old checkout aside, the new one in, and any file written (a ledger), as one journaled
  transaction (``io.journal.apply_transaction``), so a kill at any point leaves exactly the old checkout or
  exactly the new one once the next run has recovered.

Every durable step counts one ``faults.step()`` (the kill tests stop a run at each).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from patchmgr.io.confine import leaves
from patchmgr.io.disk import FREE_SPACE, disk_full, failure_text, missing_folders
from patchmgr.io.faults import step
from patchmgr.io.files import linked_tree, remove_tree
from patchmgr.io.journal import apply_transaction, locked_recovery
from patchmgr.model.errors import GitError, PatchmgrError, StateError
from patchmgr.targets.localwork import SAVED_PREFIX, LocalWork, find_local_work, save_local_work, utc_stamp

STAGING = "staging"  # in the state folder: the checkouts being built
REPLACED = "replaced"  # in the state folder: the checkouts moved aside by a swap, removed once it is settled


@dataclass(frozen=True)
class Slot:
    """The state folder of one or more checkouts: its lock, its journal, and the staging and replaced folders."""

    state: Path

    @property
    def staging(self) -> Path:
        return self.state / STAGING

    @property
    def replaced(self) -> Path:
        return self.state / REPLACED

    def staged(self, name: str) -> Path:
        return self.staging / name


@contextmanager
def locked_slot(
    state: Path,
    notes: list[str],
    hint: str,
    where: Path,
    lock_error: Callable[[OSError], StateError | None] | None = None,
) -> Iterator[Slot]:
    """Hold the slot's lock, after finishing or undoing a run killed there (said in ``notes``)."""
    with locked_recovery(
        state,
        hint,
        leftovers=partial(_clear_unfinished, state),
        lock_error=lock_error,
        place=partial(_outside_slot, where, state),
    ) as done:
        said = []
        if done.waited:
            said.append(f"waited {done.waited:.1f}s for another patchmgr run on {where}")
        if done.message:
            said.append(f"recovered {where}: {done.message}")
        notes += said
        try:
            yield Slot(state)
        except PatchmgrError as error:
            error.notes[:0] = said  # a run that recovered, then refused, still says what it recovered
            raise


def _outside_slot(where: Path, state: Path, path: Path) -> str | None:
    """Why a journal found in the slot may not move or write ``path``: a recovery only ever touches the
    checkouts' folder and the slot's own state folder (a planted journal naming anything else is damaged)."""
    if leaves(state, path) is None:
        return None
    return leaves(where, path)


def _clear_unfinished(state: Path) -> str | None:
    """What a killed run left outside its journal: the checkouts it was building, or had copied or replaced."""
    message = None
    if os.path.lexists(state / STAGING):
        message = "an interrupted run had not started changing it; removed its unfinished checkouts"
    remove_tree(state / STAGING)
    remove_tree(state / REPLACED)
    return message


def begin(slot: Slot) -> None:
    """Empty staging and replaced folders, ready for a build."""
    discard(slot)
    slot.staging.mkdir(parents=True)
    slot.replaced.mkdir()
    step()


def discard(slot: Slot) -> None:
    """Whatever a failed or refused run staged: nothing the user sees changes."""
    remove_tree(slot.staging)
    remove_tree(slot.replaced)


@dataclass(frozen=True)
class Place:
    """A checkout the slot may replace: its ``name`` (the folder's name in staging), where it lives, and the
    commit patchmgr recorded there (what is not in it is local work)."""

    name: str
    folder: Path
    recorded: str | None


def local_work(
    places: Sequence[Place], force: bool, refusal: Callable[[list[LocalWork]], StateError]
) -> list[LocalWork]:
    """The local work in each checkout the run would replace; ``refusal``'s error (nothing changed) unless
    ``force`` lets it be saved (a folder that is no longer a git checkout is refused even then)."""
    found = []
    for place in places:
        if not os.path.lexists(place.folder) or (place.folder.is_dir() and not any(place.folder.iterdir())):
            continue
        work = find_local_work(place.name, place.folder, place.recorded)
        if work:
            found.append(work)
    if found and (not force or any(w.not_a_checkout for w in found)):
        raise refusal(found)
    return found


def save_works(slot: Slot, works: Sequence[LocalWork], notes: list[str], command: str, where: Path) -> None:
    """Carry each local work into its new checkout in staging, as ``patchmgr-saved/<UTC time>`` branches (named
    in ``notes``); nothing in the old checkouts (in ``where``) is written."""
    stamp = utc_stamp()
    for work in works:
        try:
            branches = save_local_work(work, slot.staged(work.name), stamp)
        except (OSError, GitError) as exc:
            cause = FREE_SPACE if disk_full(exc, slot.staging) else "fix the cause above"
            raise StateError(
                f"cannot save the local work of {work.name} into its new checkout: {failure_text(exc)}; "
                f"nothing in {where} was changed",
                f"{cause}, or save that work yourself, then run {command} again",
            ) from None
        step()
        if branches:
            notes.append(
                f"saved local work of {work.name} on {'branch' if len(branches) == 1 else 'branches'} "
                f"{', '.join(branches)} in {work.folder} ({work.counts()})"
            )


def stage_copy(slot: Slot, folder: Path, name: str) -> Path:
    """A copy of the checkout ``folder`` in staging, to change it there and swap it in only when done.

    Git's object files never change once written, so they are linked, not copied (where the file system
    allows); every other file is copied with its times and modes.
    """
    staged = slot.staged(name)
    try:
        linked_tree(folder, staged, linkable=lambda path: f"{os.sep}.git{os.sep}objects{os.sep}" in path)
    except (OSError, shutil.Error) as exc:
        discard(slot)
        raise StateError(
            f"cannot copy {folder} to work on it ({exc}); nothing was changed",
            f"{FREE_SPACE} or fix its permissions, then run again",
        ) from None
    step()
    return staged


def swap_in(slot: Slot, checkouts: Mapping[Path, Path], writes: Mapping[Path, bytes | None] | None = None) -> None:
    """Replace each checkout (key) by its staged one (value) and write ``writes``, as one journaled transaction.

    A checkout that exists (even an empty folder) goes aside into the replaced folder first, so a rollback
    puts back exactly what was there; the staging and replaced folders are removed once it is settled.
    """
    moves: list[tuple[Path, Path]] = []
    for current, staged in checkouts.items():
        if os.path.lexists(current):
            moves.append((current, slot.replaced / staged.name))
        moves.append((staged, current))
    apply_transaction(slot.state, writes or {}, moves, [slot.staging, slot.replaced])


def topmost_missing(folder: Path) -> Path | None:
    """The topmost of ``folder`` and its parents that does not exist (what making ``folder`` creates), or None."""
    missing = missing_folders(folder, links_exist=True)
    return missing[-1] if missing else None


def remove_made(folder: Path, made: Path | None) -> None:
    """``folder`` and its parents up to ``made`` (from ``topmost_missing``), each only when it is empty:
    anything living there now stays."""
    while made is not None and (made == folder or made in folder.parents):
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


def refuse_hint(command: str) -> str:
    return (
        f"move that work out of the checkout first (push or copy the commits and files elsewhere), or run the "
        f"same {command} again with --force to save it on a branch {SAVED_PREFIX}<UTC time> in the new checkout"
    )
