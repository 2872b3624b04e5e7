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
ask on the terminal for a passphrase or a host key. The one exception is a child started with
``start_new_session=True`` (smoke's pytest): it leads a session of its own, and every process of that session is
part of its tree, found by its session id as well as by parent. A test's child that made a process group of its
own (``os.setpgid(0, 0)``) is found so, and so is one whose parent ended first and which was given to init: the
kernel never gives the session's number to another process while any process of the session lives. (patchmgr is
not made a subreaper, ``PR_SET_CHILD_SUBREAPER``, to keep such orphans: they would become patchmgr's own
children, zombies until something reaped them, and a reaper that waits for any child takes the exit statuses that
``subprocess`` waits for.)

A child's tree may hold at most ``TREE_LIMITS[program]`` processes at once (git: 12). A git lazy fetch from a
source that cannot give what it asks for (a shallow clone) starts another fetch that starts another, some 300
processes a second; one thread looks at every such child's tree every ``WATCH_TICK`` seconds (through /proc's lists
of children: a few files per look) and ends one past its bound: the call raises ``Overgrown``. Worker threads that
start children side by side are at most ``SIDE_BY_SIDE`` (``worker_pool``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

from patchmgr.io import proc_tree

if TYPE_CHECKING:  # imported where a pool is made: a warm status starts no thread and pays for no import
    from concurrent.futures import ThreadPoolExecutor

_LIVE: dict[subprocess.Popen[Any], int | None] = {}  # each child, and a pidfd on it (None: the system has none)
_SESSIONS: set[subprocess.Popen[Any]] = set()  # the children that lead a session of their own
_WATCHED: dict[subprocess.Popen[Any], int] = {}  # a child whose tree is bounded, and its bound
_OVERGROWN: dict[subprocess.Popen[Any], int] = {}  # a child ended for its tree's size, and the size it had then
_LOCK = threading.Lock()
STOP_WAIT = 2.0  # seconds a child has to stop before its tree is looked for (else it is killed alone)
_closed = False  # end_all has run: the command is over, and no child starts any more

# The most processes one child's tree may hold at once, by the program the child runs. A fetch over a local path
# is fetch, sh, upload-pack, pack-objects, index-pack, rev-list and an auto maintenance; a lazy fetch under
# cat-file or checkout about as many. A lazy fetch that starts another one without end passes it within a second.
TREE_LIMITS = {"git": 12}
# seconds between two looks at the bounded trees: such a loop of lazy fetches grows by some 300 processes a second
WATCH_TICK = 0.005
WATCH_TICK_IDLE = 0.02  # while no watched child has a child of its own (cat-file waiting for the next request)
WATCH_TICK_SCANNING = 0.05  # where /proc lists no children, and each look reads every process's stat
SIDE_BY_SIDE = 4  # the most worker threads one command starts children from at once (``worker_pool``)
_watcher: list[int] = []  # the process whose watching thread runs (a forked child starts its own)
_watching = threading.Event()  # set while a child is watched


class Closed(OSError):
    """A child asked for after the command ended (a worker thread still at work): it is not started."""


class Overgrown(Exception):
    """A child's tree held more processes than its program's ``TREE_LIMITS``: it was ended with all of them."""

    def __init__(self, command: Sequence[str], count: int, limit: int) -> None:
        super().__init__(f"{PurePath(command[0]).name}: {count} processes at once, more than {limit}")
        self.command, self.count, self.limit = list(command), count, limit


def popen(command: Sequence[str], **options: Any) -> subprocess.Popen[Any]:
    """A started child, known until ``forget``: ``end_all`` ends its tree. Raises Closed after ``end_all``."""
    process = subprocess.Popen(command, **options)
    handle = _pidfd(process.pid)  # before anything can reap it: the handle is on this very process
    limit = TREE_LIMITS.get(PurePath(command[0]).name)
    with _LOCK:
        closed = _closed
        _LIVE[process] = handle  # known even when it came too late: its tree is ended through the handle
        if options.get("start_new_session"):
            _SESSIONS.add(process)
        if not closed and limit is not None and handle is not None:
            _WATCHED[process] = limit
            _start_watching()
    if closed:
        try:
            end_tree(process)
        finally:
            forget(process)
        raise Closed(f"not started, patchmgr is stopping: {command[0]}")
    return process


def forget(process: subprocess.Popen[Any]) -> None:
    """``process`` has been waited for: it is no longer this process's to end."""
    with _LOCK:
        handle = _LIVE.pop(process, None)
        _SESSIONS.discard(process)
        _WATCHED.pop(process, None)
        _OVERGROWN.pop(process, None)
    _close(handle)


def overgrown(process: subprocess.Popen[Any]) -> Overgrown | None:
    """Why ``process`` was ended while it ran, if it was for its tree's size (asked before ``forget``)."""
    with _LOCK:
        count = _OVERGROWN.get(process)
        limit = _WATCHED.get(process)
    if count is None or limit is None:
        return None
    args = process.args
    command = [str(args)] if isinstance(args, (str, bytes, os.PathLike)) else [str(arg) for arg in args]
    return Overgrown(command, count, limit)


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
    without the child having ended (an interruption, ``timeout``, the end of the command). Raises Overgrown when
    its tree passed its bound (``TREE_LIMITS``) and was ended for it."""
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
        grown = overgrown(process)
    finally:
        forget(process)
    if grown is not None:
        raise grown
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
        # a handle of its own: the thread that waits on the child may reap it and ``forget`` it (closing the
        # child's handle, whose number can then name another file) while its tree is being ended here
        handle = _LIVE.get(process)
        handle = os.dup(handle) if handle is not None else None
        session = process in _SESSIONS
    try:
        if handle is not None:
            _end_unreaped(handle, process.pid, session)
        elif session and process.returncode is None:  # no pidfd (before Linux 5.3), not reaped: its number is its own
            _signal_group(process.pid, signal.SIGKILL)
    finally:
        try:
            if handle is not None:
                _send(handle, signal.SIGKILL)
            else:
                process.kill()  # Popen checks first whether it has reaped the child (no pidfd: its tree is left)
            process.wait()
        finally:
            _close(handle)


def _end_unreaped(handle: int, pid: int, session: bool, stopped: Callable[[], None] | None = None) -> None:
    """Kill the tree of the child behind ``handle`` while its number is still its own; ``stopped`` is called once it
    is stopped, still running, before anything is killed.

    A child that leads a session and has ended, unreaped, still has one: the rest of its session is killed."""
    state = _stop(handle)
    if state == os.CLD_STOPPED and stopped is not None:
        stopped()
    if state == os.CLD_STOPPED or (session and state is not None):
        _kill_tree(pid, session)


def _stop(handle: int) -> int | None:
    """Stop the child through its pidfd; ``CLD_STOPPED`` once it is stopped and not reaped, so that its number
    stays its own until it is killed (a stopped child cannot end, so nobody can reap it); the code of its end when
    it has ended but is not reaped; None once it is reaped, and when it is not stopped within STOP_WAIT seconds (a
    process in uninterruptible sleep stops only after it)."""
    if not _send(handle, signal.SIGSTOP):
        return None  # reaped already
    deadline = time.monotonic() + STOP_WAIT
    while True:
        try:  # WNOWAIT: looked at, not reaped; the stop is delivered when the child next runs
            seen = os.waitid(os.P_PIDFD, handle, os.WSTOPPED | os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except (ChildProcessError, AttributeError, OSError):
            return None
        if seen is not None:
            return seen.si_code
        if time.monotonic() > deadline:
            return None
        time.sleep(0.001)


def _kill_tree(root: int, session: bool = False) -> None:
    """SIGSTOP ``root`` and its descendants from the top down (with ``session``, every process of the session it
    leads too), so the tree holds still while it is found, then SIGKILL all of them, also when this is interrupted
    half-way (a stopped process is never left)."""
    found: set[int] = set()
    try:
        frontier = {root}
        while frontier:
            for pid in frontier:
                _signal(pid, signal.SIGSTOP)
            found |= frontier
            frontier = proc_tree.tree(root, proc_tree.processes(), session, found) - found
    finally:
        for pid in found:
            _signal(pid, signal.SIGKILL)


def worker_pool(tasks: int, name: str) -> ThreadPoolExecutor:
    """Threads for ``tasks`` that each start children (``git ls-remote``, a clone's object reader): at most
    ``SIDE_BY_SIDE``, so that no command runs more than a handful of git processes at once."""
    from concurrent.futures import ThreadPoolExecutor

    return ThreadPoolExecutor(max_workers=max(1, min(tasks, SIDE_BY_SIDE)), thread_name_prefix=name)


def _start_watching() -> None:
    """Wake the thread that bounds the watched trees, started once per process (called with _LOCK held)."""
    _watching.set()
    if os.getpid() in _watcher:
        return
    _watcher[:] = [os.getpid()]
    threading.Thread(target=_watch, name="patchmgr-children", daemon=True).start()


def _watch() -> None:
    lists = proc_tree.child_lists()
    busy = True
    while True:
        _watching.wait()  # nothing watched: asleep until a watched child starts
        time.sleep(WATCH_TICK_SCANNING if not lists else WATCH_TICK if busy else WATCH_TICK_IDLE)
        try:
            busy = _look_at_watched(lists)
        except Exception:  # noqa: BLE001 (a look that failed is made again at the next tick; the thread stays)
            continue


def _look_at_watched(lists: bool) -> bool:
    """End every watched child whose tree holds more processes than its bound, and say it did (``_OVERGROWN``);
    whether any of them has a child (else the next look can wait longer)."""
    with _LOCK:
        watched = []
        for process, limit in _WATCHED.items():
            handle = _LIVE.get(process)
            if handle is not None and process not in _OVERGROWN:
                try:  # a handle of its own: forget may close the child's meanwhile
                    watched.append((process, limit, os.dup(handle), process in _SESSIONS))
                except OSError:
                    continue
        if not _WATCHED:
            _watching.clear()
    busy = False
    try:
        processes: proc_tree.Table | None = None
        for process, limit, handle, session in watched:
            count = proc_tree.counted(process.pid, limit) if lists and not session else None
            if count is None:  # no lists of children here (or a session): every process is looked at
                processes = proc_tree.processes() if processes is None else processes
                count = len(proc_tree.tree(process.pid, processes, session))
            busy = busy or count > 1
            if count > limit:
                _end_unreaped(handle, process.pid, session, partial(_overgrown_by, process, count))
                _send(handle, signal.SIGKILL)  # never left stopped; the call that waits for it reaps it
    finally:
        for _process, _limit, handle, _session in watched:
            os.close(handle)
    return busy


def _overgrown_by(process: subprocess.Popen[Any], count: int) -> None:
    """Say that ``process`` is ended for its tree's size, before it is killed: its call looks as soon as it ends."""
    with _LOCK:
        _OVERGROWN[process] = count


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


def _signal_group(pgid: int, number: int) -> None:
    try:
        os.killpg(pgid, number)
    except (ProcessLookupError, PermissionError):
        pass
