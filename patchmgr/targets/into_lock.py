"""DIR's state folder (``.patchmgr-state``): one patchmgr at a time, and an interrupted apply recovered first."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

from patchmgr.io.journal import locked_recovery
from patchmgr.model.errors import StateError

STATE = ".patchmgr-state"  # in DIR: the lock, the journal, and the checkouts being built or replaced
STAGING = "staging"
REPLACED = "replaced"


# verify's git commands must not write the checkout (``git status`` would refresh .git/index)
_READ_ONLY = {"GIT_OPTIONAL_LOCKS": "0"}


@contextmanager
def locked_into(into: Path, notes: list[str]) -> Iterator[None]:
    """Hold DIR's lock, after finishing or undoing an interrupted apply (which one is added to ``notes``)."""
    def lock_error(exc: OSError) -> StateError:  # a read-only or full DIR: say so, never a traceback
        return StateError(f"cannot lock {into}: {exc.strerror or exc} ({exc.filename or into / STATE})",
                          "give a folder patchmgr can write, or fix its file system")
    with locked_recovery(into / STATE, "fix the cause (permissions, space), then run again",
                         leftovers=partial(_unfinished_checkouts, into / STATE), lock_error=lock_error) as done:
        if done.waited:
            notes.append(f"waited {done.waited:.1f}s for another patchmgr run on {into}")
        if done.message:
            notes.append(f"recovered {into}: {done.message}")
        yield


def _unfinished_checkouts(state: Path) -> str | None:
    """What a killed apply left outside its journal: the checkouts it was building, or had replaced."""
    message = None
    if (state / STAGING).exists():
        message = "an interrupted run had not started changing it; removed its unfinished checkouts"
    shutil.rmtree(state / STAGING, ignore_errors=True)
    shutil.rmtree(state / REPLACED, ignore_errors=True)
    return message
