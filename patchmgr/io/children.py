"""The processes patchmgr starts (git, pip, the interpreters it asks), and how each ends with the call that
started it, with what it started in turn.

``subprocess.run`` kills only the child itself when the call is interrupted or times out. The processes the
child started live on: git's remote helpers (``git-remote-https``) and ``upload-pack``, pip started again under
the environment's own interpreter. And a child that a worker thread waits on (``matrix`` lists the remotes of its
upstreams side by side) is not ended at all when the main thread is interrupted, so the process would wait for it
at exit, however long a stalled server takes. So every child is started here: while it runs it is known, and
when its call does not complete, or ``end_all`` is called (the command is over: ``cli/termination``), its whole
tree is killed, and no new child starts after ``end_all``. The tree is found through /proc and stopped from the
top down before it is killed, so that no process in it can start another unseen; without /proc (not Linux) only
the child is killed. A process that left the tree on purpose (a daemon: ``setsid``, a double fork) is not found.

A child is signalled through a pidfd opened as it starts, so never after it has been reaped (a reaped child's
number can be given to another process at once), and its tree is looked for only once it is stopped, so that it
can neither end nor be reaped meanwhile.

Children stay in patchmgr's process group: Ctrl-C at a terminal reaches them as it always did, and ssh can still
ask on the terminal for a passphrase or a host key.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from typing import Any

_LIVE: dict[subprocess.Popen[Any], int | None] = {}  # each child, and a pidfd on it (None: the system has none)
_LOCK = threading.Lock()
STOP_WAIT = 2.0  # seconds a child has to stop before its tree is looked for (else it is killed alone)
_closed = False  # end_all has run: the command is over, and no child starts any more


class Closed(OSError):
    """A child asked for after the command ended (a worker thread still at work): it is not started."""


def popen(command: Sequence[str], **options: Any) -> subprocess.Popen[Any]:
    """A started child, known until ``forget``: ``end_all`` ends its tree. Raises Closed after ``end_all``."""
    process = subprocess.Popen(command, **options)
    handle = _pidfd(process.pid)  # before anything can reap it: the handle is on this very process
    with _LOCK:
        closed = _closed
        if not closed:
            _LIVE[process] = handle
    if closed:
        _close(handle)
        end_tree(process)
        raise Closed(f"not started, patchmgr is stopping: {command[0]}")
    return process


def forget(process: subprocess.Popen[Any]) -> None:
    """``process`` has been waited for: it is no longer this process's to end."""
    with _LOCK:
        handle = _LIVE.pop(process, None)
    _close(handle)


def run(
    command: Sequence[str],
    *,
    input: bytes | str | None = None,  # noqa: A002 (subprocess.run's own name for it)
    capture_output: bool = False,
    timeout: float | None = None,
    check: bool = False,
    **options: Any,
) -> subprocess.CompletedProcess[Any]:
    """``subprocess.run``: the same arguments and result; the child's whole tree is killed when the call ends
    without the child having ended (an interruption, ``timeout``, the end of the command)."""
    if input is not None:
        options["stdin"] = subprocess.PIPE
    if capture_output:
        options["stdout"] = options["stderr"] = subprocess.PIPE
    process = popen(command, **options)
    try:
        with process:
            try:
                out, err = process.communicate(input, timeout=timeout)
            except BaseException:
                end_tree(process)
                raise
    finally:
        forget(process)
    code = process.returncode if process.returncode is not None else -1
    if check and code:
        raise subprocess.CalledProcessError(code, process.args, out, err)
    return subprocess.CompletedProcess(process.args, code, out, err)


def end_all() -> None:
    """The command is over: kill the tree of every child still running (a worker thread waiting on one goes on
    at once), and start no more."""
    global _closed
    with _LOCK:
        _closed = True
        live = list(_LIVE)
    for process in live:
        end_tree(process)


def end_tree(process: subprocess.Popen[Any]) -> None:
    """Kill ``process`` and every process it started, then reap it (also when this is interrupted)."""
    with _LOCK:
        handle = _LIVE.get(process)
    try:
        if handle is not None and _stopped_and_unreaped(handle, process.pid):
            _kill_tree(process.pid)
    finally:
        if handle is not None:
            _send(handle, signal.SIGKILL)
        else:
            process.kill()  # Popen checks first whether it has reaped the child (no pidfd: its tree is left)
        process.wait()


def _stopped_and_unreaped(handle: int, pid: int) -> bool:
    """Stop the child through its pidfd; whether it is now stopped and not reaped, so that ``pid`` stays its
    number until it is killed (a stopped child cannot end, so nobody can reap it). False once it has ended, and
    when it is not stopped within STOP_WAIT seconds (a process in uninterruptible sleep stops only after it)."""
    if not _send(handle, signal.SIGSTOP):
        return False  # reaped already
    deadline = time.monotonic() + STOP_WAIT
    while True:
        try:  # WNOWAIT: looked at, not reaped; the stop is delivered when the child next runs
            seen = os.waitid(os.P_PIDFD, handle, os.WSTOPPED | os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except (ChildProcessError, AttributeError, OSError):
            return False
        if seen is not None:
            return seen.si_code == os.CLD_STOPPED
        if time.monotonic() > deadline:
            return False
        time.sleep(0.001)


def _kill_tree(root: int) -> None:
    """SIGSTOP ``root`` and its descendants from the top down, so the tree holds still while it is found, then
    SIGKILL all of them, also when this is interrupted half-way (a stopped process is never left)."""
    found: set[int] = set()
    try:
        frontier = {root}
        while frontier:
            for pid in frontier:
                _signal(pid, signal.SIGSTOP)
            found |= frontier
            parents = _parents()
            frontier = {pid for pid, parent in parents.items() if parent in found} - found
    finally:
        for pid in found:
            _signal(pid, signal.SIGKILL)


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None  # not Linux 5.3 or later


def _send(handle: int, number: int) -> bool:
    """``number`` sent through a pidfd; False when its process has been reaped."""
    try:
        signal.pidfd_send_signal(handle, number)
        return True
    except ProcessLookupError:
        return False


def _close(handle: int | None) -> None:
    if handle is not None:
        os.close(handle)


def _signal(pid: int, number: int) -> None:
    try:
        os.kill(pid, number)
    except (ProcessLookupError, PermissionError):
        pass


def _parents() -> dict[int, int]:
    """Every process's parent, from /proc (empty where there is none)."""
    parents: dict[int, int] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return parents
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
            parents[int(name)] = int(fields[1])
        except (OSError, IndexError, ValueError):
            continue
    return parents
