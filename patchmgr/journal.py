"""Crash-safe multi-file writes: a journal makes a set of file replacements all or nothing.

Before anything changes, the current bytes of every path to be written are
saved in the journal folder and the journal is marked ``prepared`` (fsynced).
Then each file is replaced atomically. Only when all are written is the
journal marked ``committed`` and removed. A run killed in between leaves a
``prepared`` journal, and the next run (``recover``) puts every path back as it
was; a ``committed`` one is only cleaned up. Either way the files end up fully
written or untouched, never half.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
from collections.abc import Mapping
from pathlib import Path

from patchmgr.errors import StateError

JOURNAL = "journal"
_KILL_AT = "PATCHMGR_FAULT_KILL_AT"  # fault injection for the kill tests: SIGKILL at step N


class _Steps:
    """Counts durable steps so tests can kill the process at each one (PATCHMGR_FAULT_KILL_AT=N)."""

    def __init__(self) -> None:
        self.count = 0
        self.kill_at = int(os.environ.get(_KILL_AT, "0") or 0)

    def step(self) -> None:
        self.count += 1
        if self.kill_at and self.count == self.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)


def write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.patchmgr-tmp")
    with open(temp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    if path.exists():
        shutil.copymode(path, temp)
    os.replace(temp, path)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def apply_transaction(state_dir: Path, writes: Mapping[Path, bytes | None]) -> None:
    """Write (or, for None, delete) every path in ``writes``, all or nothing across a crash."""
    steps = _Steps()
    journal = state_dir / JOURNAL
    shutil.rmtree(journal, ignore_errors=True)
    (journal / "saved").mkdir(parents=True)
    entries = []
    for index, (path, _data) in enumerate(writes.items()):
        saved = None
        if path.is_file():
            saved = f"{index}"
            shutil.copy2(path, journal / "saved" / saved)
        entries.append({"path": str(path), "saved": saved})
        steps.step()
    write_atomic(journal / "journal.json", json.dumps({"state": "prepared", "entries": entries}).encode())
    _fsync_dir(journal)
    steps.step()
    for path, data in writes.items():
        if data is None:
            path.unlink(missing_ok=True)
        else:
            write_atomic(path, data)
        steps.step()
    write_atomic(journal / "journal.json", json.dumps({"state": "committed", "entries": entries}).encode())
    steps.step()
    shutil.rmtree(journal, ignore_errors=True)


def recover(state_dir: Path) -> str | None:
    """Finish or undo an interrupted transaction; say which, or None when there was none."""
    journal = state_dir / JOURNAL
    marker = journal / "journal.json"
    if not journal.exists():
        return None
    if not marker.is_file():
        # killed while saving: nothing was written yet
        shutil.rmtree(journal, ignore_errors=True)
        return "an interrupted run had not started writing; nothing to undo"
    try:
        doc = json.loads(marker.read_text())
    except ValueError as exc:
        raise StateError(f"{marker} is damaged ({exc})", "restore the environment from a backup") from exc
    if doc["state"] == "committed":
        shutil.rmtree(journal, ignore_errors=True)
        return "an interrupted run had finished writing; cleaned up after it"
    for entry in doc["entries"]:
        path = Path(entry["path"])
        if entry["saved"] is None:
            path.unlink(missing_ok=True)
        else:
            write_atomic(path, (journal / "saved" / entry["saved"]).read_bytes())
    shutil.rmtree(journal, ignore_errors=True)
    return f"an interrupted run was rolled back: {len(doc['entries'])} files restored as they were"


class StateLock:
    """One patchmgr at a time per environment: a second waits up to ``timeout`` seconds, then fails clearly."""

    def __init__(self, state_dir: Path, timeout: float = 60.0) -> None:
        self.path = state_dir / "lock"
        self.timeout = timeout
        self._handle = None

    def __enter__(self) -> StateLock:
        import time

        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = open(self.path, "a+")
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                fcntl.flock(self._handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return self
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    self._handle.close()
                    raise StateError(f"another patchmgr run holds {self.path}",
                                     "wait for it to finish, then run again") from None
                time.sleep(0.1)

    def __exit__(self, *exc) -> None:
        if self._handle:
            fcntl.flock(self._handle, fcntl.LOCK_UN)
            self._handle.close()
