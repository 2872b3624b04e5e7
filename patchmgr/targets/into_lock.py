"""DIR's state folder (``.patchmgr-state``): one patchmgr at a time, and an interrupted apply recovered first."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from patchmgr.io.journal import StateLock, recover
from patchmgr.model.errors import StateError

STATE = ".patchmgr-state"  # in DIR: the lock, the journal, and the checkouts being built or replaced
STAGING = "staging"
REPLACED = "replaced"


# verify's git commands must not write the checkout (``git status`` would refresh .git/index)
_READ_ONLY = {"GIT_OPTIONAL_LOCKS": "0"}


@contextmanager
def locked_into(into: Path, notes: list[str]) -> Iterator[None]:
    """Hold DIR's lock, after finishing or undoing an interrupted apply (which one is added to ``notes``)."""
    waited = 0.0
    while True:
        with ExitStack() as stack:
            try:
                lock = stack.enter_context(StateLock(into / STATE))
            except OSError as exc:  # a read-only or full DIR: say so, never a traceback
                raise StateError(f"cannot lock {into}: {exc.strerror or exc} ({exc.filename or into / STATE})",
                                 "give a folder patchmgr can write, or fix its file system") from None
            waited += lock.waited
            if not _lock_file_current(lock):
                continue  # a failed run removed the DIR it had made while this one waited: lock it anew
            if waited:
                notes.append(f"waited {waited:.1f}s for another patchmgr run on {into}")
            message = recover_into(into)
            if message:
                notes.append(message)
            yield
            return


def _lock_file_current(lock: StateLock) -> bool:
    """Whether the file this process locked is still the one at the lock's path."""
    handle = getattr(lock, "_handle", None)
    if handle is None:
        return True  # held already by this process (re-entered)
    try:
        return os.stat(lock.path).st_ino == os.fstat(handle.fileno()).st_ino
    except OSError:
        return False


def recover_into(into: Path) -> str | None:
    """Finish or undo an apply into ``into`` that was killed; say which. Only under DIR's lock."""
    state = into / STATE
    message = recover(state)
    if message is None and (state / STAGING).exists():
        message = "an interrupted run had not started changing it; removed its unfinished checkouts"
    shutil.rmtree(state / STAGING, ignore_errors=True)
    shutil.rmtree(state / REPLACED, ignore_errors=True)
    return f"recovered {into}: {message}" if message else None
