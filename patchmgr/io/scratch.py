"""patchmgr's temporary folders, and those a killed patchmgr left behind.

A process killed outright (SIGKILL, the out-of-memory killer, a container stopped after its grace period) runs no
cleanup, so the temporary folder it was using stays; for ``smoke --unpatched`` that is a view of a whole upstream
tree. So each folder is named for patchmgr, what it holds and the process that made it
(``patchmgr-smoke-4242-k2j8x0qa``), and marked as patchmgr's own as it is made: a file ``.patchmgr-scratch`` in it
names that process by its number and its start time, with the machine's boot and the process's PID namespace. The
first folder a process makes sweeps the temporary directory; a folder there is removed only when all of this holds:

- it is a real folder of this user's (never a link, never another user's) holding the mark, a real file of this
  user's as patchmgr writes it. A folder without one is never touched, whatever its name and age (a user's own
  ``patchmgr-backup-…``);
- the process the mark names is gone: no process has its number, or the one that has it started at another time,
  or the machine has booted since. A folder made in another PID namespace (a container sharing the folder), whose
  numbers mean nothing here, is kept;
- nothing in it has changed for ``STALE_AFTER`` seconds: the newest modification time of anything in it, walked
  without following a link, not the folder's own (which a write into a file inside does not change).

The folder is then removed without following any link in it.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
import time
from dataclasses import dataclass

STALE_AFTER = 600.0  # seconds since anything in a left folder last changed
MARK = ".patchmgr-scratch"  # the file in each folder patchmgr makes that names the process that made it
_MARK_TITLE = "patchmgr scratch folder"
_NAME = re.compile(r"patchmgr-(?:[a-z]+-)+?\d+-[a-z0-9_]{8}\Z")
_UNKNOWN = "-"  # a fact this system does not give (not Linux): a folder marked so is never judged gone
_swept_by: set[int] = set()  # the processes that have swept (a forked child sweeps for itself)


@dataclass(frozen=True)
class Maker:
    """The process that made a folder, as its mark names it: enough to tell it from a later one with its number."""

    pid: int
    start: str  # its start time, in clock ticks since the boot (/proc/PID/stat field 22)
    boot: str  # the boot it ran in (/proc/sys/kernel/random/boot_id)
    namespace: str  # the PID namespace its number belongs to

    @classmethod
    def this_process(cls) -> Maker:
        pid = os.getpid()
        return cls(pid, _start_time(pid) or _UNKNOWN, _boot(), _namespace())

    def text(self) -> str:
        return f"{_MARK_TITLE}\npid {self.pid}\nstart {self.start}\nboot {self.boot}\nnamespace {self.namespace}\n"

    @classmethod
    def read(cls, text: str) -> Maker | None:
        """The maker a mark names, or None when the text is not a mark patchmgr writes."""
        lines = text.split("\n")
        if lines[:1] != [_MARK_TITLE]:
            return None
        fields = dict(line.split(" ", 1) for line in lines[1:] if " " in line)
        if set(fields) != {"pid", "start", "boot", "namespace"} or not fields["pid"].isdigit():
            return None
        return cls(int(fields["pid"]), fields["start"], fields["boot"], fields["namespace"])

    def gone(self) -> bool:
        """Whether this process no longer runs; False where that cannot be told."""
        boot = _boot()
        if _UNKNOWN not in (self.boot, boot) and self.boot != boot:
            return True  # the machine has booted since: every process of that boot is gone
        if _UNKNOWN in (self.start, self.namespace) or self.namespace != _namespace():
            return False  # its number means nothing here, or nothing tells its process from another
        start = _start_time(self.pid)
        return start is None or start not in (self.start, _UNKNOWN)  # _UNKNOWN: its stat cannot be read


def folder(what: str) -> tempfile.TemporaryDirectory[str]:
    """A new temporary folder for ``what`` (lower-case words joined by ``-``), marked as patchmgr's own, removed
    when it is closed."""
    if os.getpid() not in _swept_by:
        _swept_by.add(os.getpid())
        sweep()
    made = tempfile.TemporaryDirectory(prefix=f"patchmgr-{what}-{os.getpid()}-")
    try:
        descriptor = os.open(os.path.join(made.name, MARK), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(descriptor, "w", encoding="ascii") as mark:
            mark.write(Maker.this_process().text())
    except BaseException:
        made.cleanup()
        raise
    return made


def sweep(now: float | None = None) -> list[str]:
    """Remove the folders killed patchmgr processes left in the temporary directory; the names removed."""
    now = time.time() if now is None else now
    removed: list[str] = []
    try:
        entries = list(os.scandir(tempfile.gettempdir()))
    except OSError:
        return removed
    for entry in entries:
        if _NAME.match(entry.name) is None:
            continue
        try:
            maker = _marked_by(entry.path)
            if maker is None or not maker.gone() or _changed_since(entry.path, now - STALE_AFTER):
                continue
        except OSError:
            continue
        shutil.rmtree(entry.path, ignore_errors=True)  # never through a link: a link is removed, not followed
        removed.append(entry.name)
    return removed


def _marked_by(path: str) -> Maker | None:
    """The maker that ``path``'s mark names, when ``path`` is a real folder of this user's and its mark a real file
    of this user's (neither is followed if it is a link); else None."""
    uid = os.getuid()
    try:
        where = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return None  # not a folder, or a link
    try:
        if os.fstat(where).st_uid != uid:
            return None
        try:
            descriptor = os.open(MARK, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=where)
        except OSError:
            return None  # no mark, or a link in its place
        with os.fdopen(descriptor, "rb") as mark:
            info = os.fstat(mark.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_uid != uid or info.st_size > 4096:
                return None
            return Maker.read(mark.read().decode("ascii", "replace"))
    finally:
        os.close(where)


def _changed_since(top: str, since: float) -> bool:
    """Whether anything in ``top``, or ``top`` itself, was modified after ``since`` (no link is followed)."""
    if os.lstat(top).st_mtime > since:
        return True
    for root, folders, files in os.walk(top, followlinks=False):
        for name in folders + files:
            if os.lstat(os.path.join(root, name)).st_mtime > since:
                return True
    return False


def _start_time(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since the boot), or None when no process has that number."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as info:
            return info.read().rsplit(b")", 1)[1].split()[19].decode()  # field 22; the name (field 2) may hold ")"
    except FileNotFoundError:
        return None
    except (OSError, IndexError):
        return _UNKNOWN


def _boot() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as boot:
            return boot.read().strip() or _UNKNOWN
    except OSError:
        return _UNKNOWN


def _namespace() -> str:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return _UNKNOWN
