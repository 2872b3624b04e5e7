"""The project's own files as a target of writes: the journaled transaction of refresh, bump and export.

Every command recovers an interrupted one first (``recover_project``, called by the command line
before any manifest is read), so that nothing is ever planned from half-written files.

Every write, and every file a recovery puts back, stays inside the project root (``place_problem``):
a ``patches/<upstream>`` or ``manifests`` folder that is a link out of the project is refused, and a
journal naming a path outside it is damaged, so nothing is written or put back through it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from functools import partial
from pathlib import Path

from patchmgr.io.confine import leaves
from patchmgr.io.disk import nearest_existing
from patchmgr.io.journal import JOURNAL, apply_transaction, locked_recovery
from patchmgr.model.errors import StateError

STATE = ".patchmgr-state"  # in the project root: the lock and the journal of refresh, bump and export
# export writes the edit checkout's record (maintain/edit_record.py RECORD) in the same transaction as the
# patches: the one file outside the project root that a project transaction writes
CHECKOUT_RECORD = "patchmgr-edit.json"


def state_dir(root: Path) -> Path:
    return root / STATE


_RECOVER_HINT = "fix the cause (permissions, space), then run again"


def recover_project(root: Path) -> str | None:
    """Roll back (or finish) a refresh, bump or export that was killed while writing; say which.

    Run before anything is read, so that a plan never starts from half-written files.
    Takes the lock only when there is a journal: a run that finds none writes nothing.
    """
    state = state_dir(root)
    if not os.path.lexists(state / JOURNAL):
        return None
    with locked_recovery(state, _RECOVER_HINT, place=partial(place_problem, root)) as done:
        return done.message


def write_files(root: Path, writes: Mapping[Path, bytes | None], expected: Mapping[Path, bytes | None]) -> None:
    """Write each of ``writes`` (None: remove it) in one journaled transaction, after checking them all.

    ``expected`` holds the bytes each file had when the plan read it (None:
    absent); a file that changed since (another run, an editor) refuses the
    whole write, so a plan never overwrites work it did not see. Every path must
    be a regular file or absent, in a folder patchmgr may write, inside ``root``
    (no folder on the way a link out of it). Only then is anything written, all
    of it or (on any failure, or a crash) none. Refresh, bump, export, edit and
    import all write through here.
    """
    if not writes:
        return
    _check_paths(root, writes)
    state = state_dir(root)
    try:
        # a run killed since this one planned: its files are put back first
        with locked_recovery(state, _RECOVER_HINT, lock_error=_cannot_write, place=partial(place_problem, root)):
            for path, data in expected.items():
                if _current(path) != data:
                    raise StateError(
                        f"{path} changed while patchmgr was working on it; nothing was written", "run the command again"
                    )
            apply_transaction(state, writes)
    except OSError as exc:  # the journal folder could not be made
        raise _cannot_write(exc) from None


def _cannot_write(exc: OSError) -> StateError:
    where = f" {exc.filename}" if exc.filename else ""
    return StateError(
        f"cannot write{where}: {exc.strerror or exc}; nothing was changed", "fix the cause, then run again"
    )


def place_problem(root: Path, path: Path) -> str | None:
    """Why a project transaction may not write ``path``, or None: it stays inside ``root`` (no link out of it),
    or it is an edit checkout's record in that checkout's own ``.git`` folder."""
    if path.name == CHECKOUT_RECORD and path.parent.name == ".git":
        return leaves(path.parent.parent, path)
    return leaves(root, path)


def check_places(root: Path, paths: Iterable[Path]) -> None:
    """Refuse (``StateError``, nothing written) a path outside ``root`` or through a link out of it: what a plan
    (a dry run too) can say before any work is written."""
    for path in paths:
        why = place_problem(root, path)
        if why is not None:
            raise StateError(
                f"{why}: patchmgr writes the project's files only inside its root; nothing was written",
                "put a real folder (or the file) inside the project in place of the link, then run again",
            )


def _check_paths(root: Path, writes: Iterable[Path]) -> None:
    """``check_places``, and every path a regular file or absent, in a folder that can be written."""
    check_places(root, writes)
    for path in writes:
        if path.is_symlink() or (path.exists() and not path.is_file()):
            raise StateError(
                f"{path} is not a regular file; nothing was written",
                "put the file back as a plain file, then run again",
            )
        folder = nearest_existing(path.parent)
        if not folder.is_dir():
            raise StateError(f"{folder} is not a folder; nothing was written", "fix the project layout")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise StateError(
                f"cannot write in {folder}: permission denied; nothing was written",
                "make the folder writable, then run again",
            )


def _current(path: Path) -> bytes | None:
    try:
        return path.read_bytes() if path.is_file() else None
    except OSError as exc:
        raise StateError(f"cannot read {path}: {exc.strerror}", "fix its permissions, then run again") from None
