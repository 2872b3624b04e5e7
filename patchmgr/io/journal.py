"""Crash-safe changes: a journal makes a set of folder moves and file replacements all or nothing.

Before anything changes, the current bytes of every path to be written are
saved in the journal folder, and the journal, listing the planned folder moves
and file writes, is marked ``prepared`` (fsynced). Then the folders are moved
(renames, each atomic) and each file is replaced atomically. Only when all are
done is the journal marked ``committed``; the folders it lists to discard are
removed, then the journal. A run killed in between leaves a ``prepared``
journal, and the next run (``recover``) undoes the moves that happened and puts
every file back as it was; a ``committed`` one is only cleaned up. Either way
everything ends up fully changed or untouched, never half.

A write that fails (a full disk) rolls back at once: putting the saved files
back renames them, which needs no free space. A run killed between writing a
file's temporary copy and renaming it leaves that ``.<name>.patchmgr-tmp``;
recovery removes it. A symbolic link anywhere in a state or journal path
stops every run before it writes (``require_real_folder``), and no removal
here ever follows a link.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypedDict

from patchmgr.io.disk import FREE_SPACE, FULL_ERRNOS, missing_folders
from patchmgr.io.faults import step
from patchmgr.io.files import fsync_dir, fsync_file, remove_tree, require_real_folder, temp_path, write_atomic
from patchmgr.io.locks import FileLock, lock_timeout
from patchmgr.model.errors import StateError
from patchmgr.model.records import text_or_none, typed

JOURNAL = "journal"
PlaceCheck = Callable[[Path], "str | None"]  # why a path may not be written there, or None
_State = Literal["prepared", "committed"]
_STATES: dict[str, _State] = {"prepared": "prepared", "committed": "committed"}  # a state read back, as its Literal


class _Entry(TypedDict):
    path: str
    saved: str | None  # the saved copy's name in journal/saved; None: the path did not exist


class _Journal(TypedDict):
    """journal.json: what ``recover`` needs to finish or undo the run."""

    state: _State
    entries: list[_Entry]  # the file writes
    moves: list[list[str]]  # the folder renames, each [source, destination]
    discard: list[str]  # folders removed once settled
    made: list[str]  # folders the writes create, removed again by a rollback


def _journal_paths(state_dir: Path) -> None:
    require_real_folder(state_dir, Path(JOURNAL) / "saved", Path(JOURNAL) / "journal.json", children=True)
    saved = state_dir / JOURNAL / "saved"
    if saved.is_dir():
        require_real_folder(saved, children=True)


def apply_transaction(
    state_dir: Path,
    writes: Mapping[Path, bytes | None],
    moves: Sequence[tuple[Path, Path]] = (),
    discard: Sequence[Path] = (),
) -> None:
    """Write (or, for None, delete) every path in ``writes``, all or nothing across a crash.

    ``moves`` are folder renames (source, destination), done in order before the
    writes, each destination absent until then; ``discard`` are folders removed
    once the outcome is settled, either way. A failure to write raises
    ``StateError`` after putting everything back.
    """
    journal = state_dir / JOURNAL
    marker = journal / "journal.json"
    _journal_paths(state_dir)
    require_real_folder(state_dir, *[path for path in writes if state_dir in path.parents])
    remove_tree(journal)
    doc: _Journal = {
        "state": "prepared",
        "entries": [],
        "moves": [[str(s), str(d)] for s, d in moves],
        "discard": [str(path) for path in discard],
        "made": _missing_folders(writes),
    }
    try:
        (journal / "saved").mkdir(parents=True)
        for index, path in enumerate(writes):
            saved = None
            if path.is_file():
                saved = f"{index}"
                shutil.copy2(path, journal / "saved" / saved)
                fsync_file(journal / "saved" / saved)
            doc["entries"].append({"path": str(path), "saved": saved})
            step()
        fsync_dir(journal / "saved")
        write_atomic(marker, json.dumps(doc).encode())
        fsync_dir(journal)
    except OSError as exc:
        _settle(journal, doc)
        raise _failed(exc, "nothing was changed") from None
    step()
    try:
        for source, destination in moves:
            os.rename(source, destination)
            fsync_dir(destination.parent)
            step()
        for path, data in writes.items():
            if data is None:
                path.unlink(missing_ok=True)
            else:
                write_atomic(path, data, written=step)  # a kill there leaves the temporary file: recover removes it
            step()
        doc["state"] = "committed"
        write_atomic(marker, json.dumps(doc).encode())
    except OSError as exc:
        try:
            recover(state_dir)
        except OSError:
            raise _failed(exc, "the next patchmgr run puts everything back") from None
        raise _failed(exc, "everything was put back as it was") from None
    step()
    _settle(journal, doc)


def _missing_folders(writes: Mapping[Path, bytes | None]) -> list[str]:
    """Folders the writes will create, deepest first: a rollback removes them again."""
    missing = {folder for path in writes for folder in missing_folders(path.parent)}
    return [str(folder) for folder in sorted(missing, key=lambda f: len(f.parts), reverse=True)]


def _failed(exc: OSError, outcome: str) -> StateError:
    where = f" ({exc.filename})" if exc.filename else ""
    hint = f"{FREE_SPACE}, then run again" if exc.errno in FULL_ERRNOS else "fix the cause, then run again"
    return StateError(f"cannot write{where}: {exc.strerror or exc}; {outcome}", hint)


def _settle(journal: Path, doc: _Journal) -> None:
    for entry in doc.get("entries", []):
        _remove_temp(Path(entry["path"]))
    for folder in doc.get("discard", []):
        remove_tree(folder)
    remove_tree(journal)


def _remove_temp(path: Path) -> None:
    """A temporary file a killed ``write_atomic`` left next to ``path``."""
    temp = temp_path(path)
    if os.path.lexists(temp):
        temp.unlink()


def recover_or_fail(state_dir: Path, hint: str, place: PlaceCheck | None = None) -> str | None:
    """``recover`` (under the caller's lock), or one ``StateError`` naming the cause: the same words for every
    state folder (an environment's, the project's)."""
    try:
        return recover(state_dir, place)
    except OSError as exc:
        raise _recovery_failed(state_dir, exc, hint) from None


def _recovery_failed(state_dir: Path, exc: OSError, hint: str) -> StateError:
    where = f"{exc.filename}: " if exc.filename else ""
    return StateError(f"cannot finish or undo the interrupted run in {state_dir} ({where}{exc.strerror or exc})", hint)


def recover(state_dir: Path, place: PlaceCheck | None = None) -> str | None:
    """Finish or undo an interrupted transaction; say which, or None when there was none.

    Safe to run again if it is itself interrupted: each undo is a rename or an
    atomic write, and the journal goes last. With ``place``, a journal naming a
    path that ``place`` refuses (one outside the project, or through a link out
    of it) is damaged: nothing is put back through it.
    """
    journal = state_dir / JOURNAL
    marker = journal / "journal.json"
    if not os.path.lexists(journal):
        return None
    _journal_paths(state_dir)
    if not marker.is_file():
        # killed while saving: nothing was written yet
        remove_tree(journal)
        return "an interrupted run had not started writing; nothing to undo"
    doc = _read_journal(marker, place)
    if doc["state"] == "committed":
        _settle(journal, doc)
        return "an interrupted run had finished writing; cleaned up after it"
    for entry in doc["entries"]:
        _remove_temp(Path(entry["path"]))
        _put_back(Path(entry["path"]), None if entry["saved"] is None else journal / "saved" / entry["saved"])
    undone = 0
    for source, destination in reversed(doc.get("moves", [])):
        if not os.path.lexists(source) and os.path.lexists(destination):
            os.rename(destination, source)
            undone += 1
    for folder in doc.get("made", []):
        try:
            os.rmdir(folder)
        except OSError:
            pass  # not empty (something else lives there now) or already gone
    _settle(journal, doc)
    undid = _count(len(doc["entries"]), "file write") + (f" and {_count(undone, 'folder move')}" if undone else "")
    return f"an interrupted run was rolled back ({undid} undone): everything is as it was before it"


DAMAGED_HINT = (
    "patchmgr cannot tell what the interrupted run changed: check those files (or restore them from a "
    "backup, or reinstall), then remove the journal folder"
)


def _read_journal(marker: Path, place: PlaceCheck | None = None) -> _Journal:
    """The journal, every field checked before anything is undone: a damaged one changes nothing."""
    try:
        doc = typed(json.loads(marker.read_text(encoding="utf-8")), dict, "the document")
        state = _STATES.get(typed(doc["state"], str, "state"))
        if state is None:
            raise ValueError(f"state {doc['state']!r} is neither 'prepared' nor 'committed'")
        entries = [_entry(entry) for entry in typed(doc["entries"], list, "entries")]
        moves = [_move(move) for move in typed(doc.get("moves", []), list, "moves")]
        discard, made = (
            [typed(path, str, f"a path in {key}") for path in typed(doc.get(key, []), list, key)]
            for key in ("discard", "made")
        )
        if place is not None:
            named = [e["path"] for e in entries] + [p for m in moves for p in m] + discard + made
            why = next(filter(None, (place(Path(path)) for path in named)), None)
            if why:
                raise ValueError(f"it names a path out of its place: {why}")
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        why = f"no {exc}" if isinstance(exc, KeyError) else str(exc)
        raise StateError(
            f"{marker} is damaged ({why}); nothing was changed", f"{DAMAGED_HINT} {marker.parent}"
        ) from None
    return {"state": state, "entries": entries, "moves": moves, "discard": discard, "made": made}


def _entry(raw: object) -> _Entry:
    entry = typed(raw, dict, "an entry")
    path = typed(entry["path"], str, "an entry's path")
    saved = text_or_none(entry["saved"], "an entry's saved copy")
    if saved is not None and not saved.isdigit():
        raise ValueError(f"saved copy {saved!r} is not one this journal names")
    return {"path": path, "saved": saved}


def _move(raw: object) -> list[str]:
    move = typed(raw, list, "a move")
    if len(move) != 2:
        raise ValueError("a move is not a pair of paths")
    return [typed(path, str, "a moved path") for path in move]


def _count(number: int, what: str) -> str:
    return f"{number} {what}" + ("" if number == 1 else "s")


def _put_back(path: Path, saved: Path | None) -> None:
    """Restore ``path`` from its saved copy by a rename (no free space needed); None: it did not exist."""
    if saved is None:
        path.unlink(missing_ok=True)
        return
    if not saved.exists():
        return  # an earlier, interrupted recovery already moved it back
    try:
        os.replace(saved, path)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        write_atomic(path, saved.read_bytes())
        shutil.copymode(saved, path)
        saved.unlink()


class StateLock(FileLock):
    """One patchmgr at a time per environment (or --into folder): a second waits, then fails clearly."""

    def __init__(self, state_dir: Path, timeout: float | None = None) -> None:
        super().__init__(
            state_dir / "lock",
            lock_timeout(60.0) if timeout is None else timeout,
            "it is changing that environment or folder",
        )
        self.state_dir = state_dir

    def __enter__(self) -> StateLock:
        # before the folder is made or the lock opened: a linked state folder is never written through
        _journal_paths(self.state_dir)
        super().__enter__()
        return self


@dataclass
class Recovered:
    """What ``locked_recovery`` did: the note on an interrupted run it finished or undid (None: there was none),
    the seconds it waited for another run, and whether it holds the lock (False: a read-only place read as is)."""

    message: str | None = None
    waited: float = 0.0
    locked: bool = True


@contextmanager
def locked_recovery(
    state_dir: Path,
    hint: str,
    *,
    leftovers: Callable[[], str | None] | None = None,
    lock_error: Callable[[OSError], StateError | None] | None = None,
    place: PlaceCheck | None = None,
) -> Iterator[Recovered]:
    """Lock, recover, report: the one way every state folder is recovered (DIR's, an environment's, the
    project's, an edit checkout's staging).

    Holds ``state_dir``'s lock (a lock file a failed run removed while this one waited is locked anew), then
    finishes or undoes an interrupted journal (``recover_or_fail``), then runs ``leftovers`` (a target's own
    clean-up of what a killed run left outside the journal, saying what it did), and yields what was done.
    A lock that cannot be taken is ``lock_error``'s error (or, when it returns None, the body runs without the
    lock and without recovering: a read-only place nothing can be changing); by default "cannot lock".
    ``place``: why a path the journal names may not be written (None: it may), for a state folder whose
    writes stay in one place (the project's).
    """
    waited = 0.0
    while True:
        with ExitStack() as stack:
            try:
                lock = stack.enter_context(StateLock(state_dir))
            except OSError as exc:
                error = (
                    lock_error(exc)
                    if lock_error
                    else StateError(
                        f"cannot lock {state_dir}: {exc.strerror or exc} ({exc.filename or state_dir / 'lock'})", hint
                    )
                )
                if error is not None:
                    raise error from None
                yield Recovered(locked=False)
                return
            waited += lock.waited
            if not _lock_file_current(lock):
                continue  # a failed run removed the folder it had made while this one waited: lock it anew
            message = recover_or_fail(state_dir, hint, place)
            if leftovers is not None:
                try:
                    extra = leftovers()
                    message = message or extra
                except OSError as exc:
                    raise _recovery_failed(state_dir, exc, hint) from None
            yield Recovered(message, waited)
            return


def remove_idle_state(state_dir: Path) -> bool:
    """Remove ``state_dir`` when it holds its lock file alone and no other run holds that lock: for a folder where
    patchmgr keeps no state between runs (the folder ``export --format series`` writes). Whether it went.

    The lock file is unlinked while this run holds it, so a run that waited on it locks the new one
    (``locked_recovery`` checks that the file it locked is still the one at the path); a run holding it now,
    or a folder that cannot be changed, leaves it as it is: it does no harm, and the next run removes it.
    """
    if not state_dir.is_dir() or state_dir.is_symlink():
        return False
    try:
        with StateLock(state_dir, timeout=0) as lock:
            if not _lock_file_current(lock) or {e.name for e in state_dir.iterdir()} != {lock.path.name}:
                return False
            lock.path.unlink()
            state_dir.rmdir()
            return True
    except (StateError, OSError):
        return False


def _lock_file_current(lock: StateLock) -> bool:
    """Whether the file this process locked is still the one at the lock's path."""
    handle = getattr(lock, "_handle", None)
    if handle is None:
        return True  # held already by this process (re-entered)
    try:
        return os.stat(lock.path).st_ino == os.fstat(handle.fileno()).st_ino
    except OSError:
        return False
