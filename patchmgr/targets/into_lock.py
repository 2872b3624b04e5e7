"""DIR's state folder (``.patchmgr-state``): the slot of ``apply --into``'s checkouts (``targets.slot``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from patchmgr.model.errors import StateError
from patchmgr.targets.slot import Slot, locked_slot

STATE = ".patchmgr-state"  # in DIR: the lock, the journal, and the checkouts being built or replaced


@contextmanager
def locked_into(into: Path, notes: list[str]) -> Iterator[Slot]:
    """Hold DIR's lock, after finishing or undoing an interrupted apply (which one is added to ``notes``)."""

    def lock_error(exc: OSError) -> StateError:  # a read-only or full DIR: say so, never a traceback
        return StateError(
            f"cannot lock {into}: {exc.strerror or exc} ({exc.filename or into / STATE})",
            "give a folder patchmgr can write, or fix its file system",
        )

    with locked_slot(
        into / STATE, notes, "fix the cause (permissions, space), then run again", into, lock_error=lock_error
    ) as slot:
        yield slot
