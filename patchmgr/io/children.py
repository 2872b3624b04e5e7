"""The processes patchmgr starts (git, pip, the interpreters it asks), and how each ends with the call that
started it: patchmgr leaves none of them, or anything they started, running behind it.

``subprocess.run`` kills only the child itself when the call is interrupted or times out. The processes the
child started live on: git's remote helpers (``git-remote-https``) and ``upload-pack``, pip started again under
the environment's own interpreter. And a child that a worker thread waits on (``matrix`` lists the remotes of its
upstreams side by side) is not ended at all when the main thread is interrupted, so the process would wait for it
at exit, however long a stalled server takes. So every child is started through ``run`` here: while it runs it
is known, and when its call does not complete, or ``end_all`` is called (patchmgr told to stop:
``cli/termination``), its whole tree is killed. The tree is found through /proc and stopped from the top down
before it is killed, so that no process in it can start another unseen; without /proc (not Linux) only the
child is killed.

Children stay in patchmgr's process group: Ctrl-C at a terminal reaches them as it always did, and ssh can still
ask on the terminal for a passphrase or a host key.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections.abc import Sequence
from typing import Any

_LIVE: dict[int, subprocess.Popen[Any]] = {}
_LOCK = threading.Lock()


def run(
    command: Sequence[str],
    *,
    input: bytes | str | None = None,  # noqa: A002 (subprocess.run's own name for it)
    capture_output: bool = False,
    timeout: float | None = None,
    check: bool = False,
    **popen: Any,
) -> subprocess.CompletedProcess[Any]:
    """``subprocess.run``: the same arguments and result; the child's whole tree is killed when the call ends
    without the child having ended (an interruption, ``timeout``, a stop of patchmgr)."""
    if input is not None:
        popen["stdin"] = subprocess.PIPE
    if capture_output:
        popen["stdout"] = popen["stderr"] = subprocess.PIPE
    with subprocess.Popen(command, **popen) as process:
        with _LOCK:
            _LIVE[process.pid] = process
        try:
            out, err = process.communicate(input, timeout=timeout)
        except BaseException:
            end_tree(process)
            raise
        finally:
            with _LOCK:
                _LIVE.pop(process.pid, None)
    code = process.poll()
    if check and code:
        raise subprocess.CalledProcessError(code, process.args, out, err)
    return subprocess.CompletedProcess(process.args, code if code is not None else -1, out, err)


def end_all() -> None:
    """Kill the tree of every child still running (patchmgr is stopping): threads waiting on one go on at once."""
    with _LOCK:
        live = list(_LIVE.values())
    for process in live:
        end_tree(process)


def end_tree(process: subprocess.Popen[Any]) -> None:
    """Kill ``process`` and every process it started, then reap it."""
    for pid in sorted(_stopped_tree(process.pid)):
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    try:
        process.kill()
    except OSError:
        pass
    process.wait()


def _stopped_tree(root: int) -> set[int]:
    """``root`` and its descendants, each stopped (SIGSTOP) before its children are looked for, so the tree holds
    still while it is found; the root alone where /proc cannot be read."""
    found: set[int] = set()
    frontier = {root}
    while frontier:
        for pid in frontier:
            try:
                os.kill(pid, signal.SIGSTOP)
            except (ProcessLookupError, PermissionError):
                pass
        found |= frontier
        parents = _parents()
        frontier = {pid for pid, parent in parents.items() if parent in found} - found
    return found


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
