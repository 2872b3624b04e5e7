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
import fcntl
import json
import os
import shutil
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from patchmgr.errors import StateError
from patchmgr.ledger import text_or_none, typed

JOURNAL = "journal"
_KILL_AT = "PATCHMGR_FAULT_KILL_AT"  # fault injection for the kill tests: SIGKILL at step N
_PAUSE_AT = "PATCHMGR_FAULT_PAUSE_AT"  # for the race and full-disk tests: "N:SECONDS" waits at step N ...
_PAUSED = "PATCHMGR_FAULT_PAUSED"  # ... and, if this names a file, creates it and waits only while it exists
_LOCK_TIMEOUT = "PATCHMGR_LOCK_TIMEOUT"  # seconds a second run waits for a lock before it gives up


class _Steps:
    """Counts durable steps so tests can kill the process at each one (PATCHMGR_FAULT_KILL_AT=N)."""

    def __init__(self) -> None:
        self.count = 0
        self.pid = os.getpid()
        self.kill_at = int(os.environ.get(_KILL_AT, "0") or 0)
        pause = os.environ.get(_PAUSE_AT, "")
        self.pause_at, _, seconds = pause.partition(":")
        self.pause_for = float(seconds or 0)

    def step(self) -> None:
        self.count += 1
        if self.kill_at and self.count == self.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        if self.pause_at == str(self.count):
            self._pause()

    def _pause(self) -> None:
        deadline = time.monotonic() + self.pause_for
        marker = os.environ.get(_PAUSED)
        if marker:
            Path(marker).touch()
        while time.monotonic() < deadline and (not marker or os.path.exists(marker)):
            time.sleep(0.01)


_steps: _Steps | None = None


def step() -> None:
    """One more step of a run is on disk: where the kill tests stop the process (one count per process)."""
    global _steps
    if _steps is None or _steps.pid != os.getpid():  # a forked child counts its own steps
        _steps = _Steps()
    _steps.step()


def temp_path(path: Path) -> Path:
    """The temporary file ``write_atomic`` writes next to ``path`` before it renames it into place."""
    return path.with_name(f".{path.name}.patchmgr-tmp")


def write_atomic(path: Path, data: bytes, written: Callable[[], None] | None = None) -> None:
    """Replace ``path`` with ``data`` by a rename; ``written()`` is called between writing the temporary
    file and the rename (a kill point of the transactions)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = temp_path(path)
    try:
        with open(temp, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if path.exists():
            shutil.copymode(path, temp)
        if written is not None:
            written()
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)  # a half-written temporary file would hold on to the space
        raise


LINK_HINT = "remove that link (and put a real folder there, or nothing), then run again"


def require_real_folder(root: Path, *below: str | Path, children: bool = False, walk: bool = False) -> None:
    """Refuse a symbolic link at ``root`` or on the way down from it to each of ``below``.

    ``below`` are paths relative to ``root`` (or absolute ones inside it); each
    component that exists is checked, from ``root`` down. With ``children``,
    every entry directly inside ``root`` is checked too; with ``walk``, every
    entry anywhere below it. patchmgr creates, replaces and removes folders and
    files there: through a link it would do so wherever the link points.
    """
    candidates = [root]
    for path in below:
        relative = Path(path)
        if relative.is_absolute():
            try:
                relative = relative.relative_to(root)
            except ValueError:
                continue  # not inside the state folder: not ours to police
        current = root
        for part in relative.parts:
            current = current / part
            candidates.append(current)
    if (children or walk) and root.is_dir() and not root.is_symlink():
        candidates += sorted(root.iterdir())
    for path in candidates:
        if path.is_symlink():
            raise StateError(f"{path} is a symbolic link; patchmgr never writes through links in its state folder",
                             LINK_HINT)
    if walk and root.is_dir():
        for folder, dirs, files in os.walk(root):  # never follows a link (and any link was refused above)
            for name in dirs + files:
                path = Path(folder) / name
                if path.is_symlink():
                    raise StateError(f"{path} is a symbolic link; patchmgr never writes through links in its "
                                     "state folder", LINK_HINT)


def _journal_paths(state_dir: Path) -> None:
    require_real_folder(state_dir, Path(JOURNAL) / "saved", Path(JOURNAL) / "journal.json", children=True)
    saved = state_dir / JOURNAL / "saved"
    if saved.is_dir():
        require_real_folder(saved, children=True)


def _remove_tree(path: Path | str) -> None:
    """Remove a folder patchmgr made; a symbolic link in its place is removed itself, never followed."""
    if os.path.islink(path):
        os.unlink(path)
        return
    shutil.rmtree(path, ignore_errors=True)  # removes links inside as links, never what they point to


def _fsync_file(path: Path) -> None:
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def apply_transaction(state_dir: Path, writes: Mapping[Path, bytes | None],
                      moves: Sequence[tuple[Path, Path]] = (), discard: Sequence[Path] = ()) -> None:
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
    _remove_tree(journal)
    doc = {"state": "prepared", "entries": [], "moves": [[str(s), str(d)] for s, d in moves],
           "discard": [str(path) for path in discard], "made": _missing_folders(writes)}
    try:
        (journal / "saved").mkdir(parents=True)
        for index, path in enumerate(writes):
            saved = None
            if path.is_file():
                saved = f"{index}"
                shutil.copy2(path, journal / "saved" / saved)
                _fsync_file(journal / "saved" / saved)
            doc["entries"].append({"path": str(path), "saved": saved})
            step()
        _fsync_dir(journal / "saved")
        write_atomic(marker, json.dumps(doc).encode())
        _fsync_dir(journal)
    except OSError as exc:
        _settle(journal, doc)
        raise _failed(exc, "nothing was changed") from None
    step()
    try:
        for source, destination in moves:
            os.rename(source, destination)
            _fsync_dir(destination.parent)
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
    missing = set()
    for path in writes:
        folder = path.parent
        while not folder.exists() and folder != folder.parent:
            missing.add(folder)
            folder = folder.parent
    return [str(folder) for folder in sorted(missing, key=lambda f: len(f.parts), reverse=True)]


def _failed(exc: OSError, outcome: str) -> StateError:
    where = f" ({exc.filename})" if exc.filename else ""
    hint = "free some space on that disk, then run again" if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG) \
        else "fix the cause, then run again"
    return StateError(f"cannot write{where}: {exc.strerror or exc}; {outcome}", hint)


def _settle(journal: Path, doc: dict) -> None:
    for entry in doc.get("entries", []):
        _remove_temp(Path(entry["path"]))
    for folder in doc.get("discard", []):
        _remove_tree(folder)
    _remove_tree(journal)


def _remove_temp(path: Path) -> None:
    """A temporary file a killed ``write_atomic`` left next to ``path``."""
    temp = temp_path(path)
    if os.path.lexists(temp):
        temp.unlink()


def recover(state_dir: Path) -> str | None:
    """Finish or undo an interrupted transaction; say which, or None when there was none.

    Safe to run again if it is itself interrupted: each undo is a rename or an
    atomic write, and the journal goes last.
    """
    journal = state_dir / JOURNAL
    marker = journal / "journal.json"
    if not os.path.lexists(journal):
        return None
    _journal_paths(state_dir)
    if not marker.is_file():
        # killed while saving: nothing was written yet
        _remove_tree(journal)
        return "an interrupted run had not started writing; nothing to undo"
    doc = _read_journal(marker)
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


DAMAGED_HINT = ("patchmgr cannot tell what the interrupted run changed: check those files (or restore them from a "
                "backup, or reinstall), then remove the journal folder")


def _read_journal(marker: Path) -> dict:
    """The journal, every field checked before anything is undone: a damaged one changes nothing."""
    try:
        doc = json.loads(marker.read_text(encoding="utf-8"))
        typed(doc, dict, "the document")
        if typed(doc["state"], str, "state") not in ("prepared", "committed"):
            raise ValueError(f"state {doc['state']!r} is neither 'prepared' nor 'committed'")
        for entry in typed(doc["entries"], list, "entries"):
            typed(entry, dict, "an entry")
            typed(entry["path"], str, "an entry's path")
            saved = text_or_none(entry["saved"], "an entry's saved copy")
            if saved is not None and not saved.isdigit():
                raise ValueError(f"saved copy {saved!r} is not one this journal names")
        for move in typed(doc.get("moves", []), list, "moves"):
            if len(typed(move, list, "a move")) != 2:
                raise ValueError("a move is not a pair of paths")
            for path in move:
                typed(path, str, "a moved path")
        for key in ("discard", "made"):
            for path in typed(doc.get(key, []), list, key):
                typed(path, str, f"a path in {key}")
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        why = f"no {exc}" if isinstance(exc, KeyError) else str(exc)
        raise StateError(f"{marker} is damaged ({why}); nothing was changed",
                         f"{DAMAGED_HINT} {marker.parent}") from None
    return doc


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


def lock_timeout(default: float) -> float:
    value = os.environ.get(_LOCK_TIMEOUT)
    try:
        return float(value) if value else default
    except ValueError:
        return default


class FileLock:
    """An exclusive lock on ``path`` (flock): a second holder waits up to ``timeout`` seconds, then fails clearly.

    Re-entering the same lock in one process (a fetch inside a fetch) does not wait on itself.
    """

    _held: dict[str, int] = {}

    def __init__(self, path: Path, timeout: float, what: str, on_wait=None) -> None:
        self.path = path
        self.timeout = timeout
        self.what = what
        self.on_wait = on_wait
        self.waited = 0.0  # seconds spent waiting for another run
        self._handle = None

    def __enter__(self) -> FileLock:
        key = str(self.path)
        if self._held.get(key):
            self._held[key] += 1
            return self
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = open(self.path, "a+")
        started = time.monotonic()
        deadline = started + self.timeout
        while True:
            try:
                fcntl.flock(self._handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self._held[key] = 1
                return self
            except BlockingIOError:
                if not self.waited and self.on_wait:
                    self.on_wait(f"waiting for another patchmgr run that holds {self.path}")
                self.waited = time.monotonic() - started or 1e-6
                if time.monotonic() >= deadline:
                    self._handle.close()
                    self._handle = None
                    raise StateError(f"another patchmgr run holds {self.path} ({self.what}); "
                                     f"gave up after {self.timeout:g}s",
                                     "wait for it to finish, then run again") from None
                time.sleep(0.1)

    def __exit__(self, *exc) -> None:
        key = str(self.path)
        self._held[key] -= 1
        if self._held[key] == 0 and self._handle:
            del self._held[key]
            fcntl.flock(self._handle, fcntl.LOCK_UN)
            self._handle.close()
            self._handle = None


class StateLock(FileLock):
    """One patchmgr at a time per environment (or --into folder): a second waits, then fails clearly."""

    def __init__(self, state_dir: Path, timeout: float | None = None) -> None:
        super().__init__(state_dir / "lock", lock_timeout(60.0) if timeout is None else timeout,
                         "it is changing that environment or folder")
        self.state_dir = state_dir

    def __enter__(self) -> StateLock:
        # before the folder is made or the lock opened: a linked state folder is never written through
        _journal_paths(self.state_dir)
        super().__enter__()
        return self
