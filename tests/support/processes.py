"""Processes the tests start and must see end: whether one is gone, the ones whose command line names something,
a server that accepts connections and never answers (a stalled git remote or package index), and a command run
with its git processes counted and bounded."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


def gone(pid: int) -> bool:
    """No such process, or a zombie nobody has reaped yet (it runs nothing)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")


def ended(*pids: int, seconds: float = 5.0) -> bool:
    """Whether every one of ``pids`` is gone within ``seconds`` (killed, then reaped by whoever adopted it)."""
    deadline = time.monotonic() + seconds
    while not all(gone(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return all(gone(pid) for pid in pids)


def processes_naming(text: str) -> list[int]:
    """The running processes whose command line holds ``text``."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                line = Path(f"/proc/{name}/cmdline").read_bytes().replace(b"\0", b" ")
            except OSError:
                continue
            if text.encode() in line and not gone(int(name)):
                found.append(int(name))
    return found


@contextmanager
def silent_server() -> Iterator[str]:
    """An HTTP address that accepts connections and never answers: a stalled git server."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join()
        for connection in accepted:
            connection.close()
        server.close()


@dataclass(frozen=True)
class Watched:
    """How a command run by ``watched`` ended: its exit status and output, or why the watch stopped it."""

    code: int | None  # None: stopped by the watch
    out: str
    err: str
    most_git: int  # the most git processes of its session seen at once
    stopped: str  # why the watch stopped it; empty when it ended by itself


def watched(command: list[str], *, most_git: int, seconds: float, env: dict[str, str] | None = None) -> Watched:
    """``command`` in a session of its own, its git processes counted every 20 ms: past ``most_git`` at once, or
    past ``seconds``, the whole session is stopped and killed. A command that starts git processes without end then
    fails its test in a second or two instead of choking the machine. Whatever the command left in its session is
    killed in the end too; its output goes to files, which a process left behind cannot hold open."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=err, start_new_session=True)
        started, most, stopped = time.monotonic(), 0, ""
        try:
            while process.poll() is None:
                gits = sum(1 for _pid, name in _session(process.pid) if name.startswith(b"git"))
                most = max(most, gits)
                if gits > most_git:
                    stopped = f"{gits} git processes at once"
                elif time.monotonic() - started > seconds:
                    stopped = f"still running after {seconds:g} s"
                if stopped:
                    break
                time.sleep(0.02)
        finally:
            _end_session(process.pid)
            process.wait()
        out.seek(0)
        err.seek(0)
        code = None if stopped else process.returncode
        return Watched(code, out.read().decode(errors="replace"), err.read().decode(errors="replace"), most, stopped)


def _session(sid: int) -> list[tuple[int, bytes]]:
    """The processes of session ``sid`` that run, with their names."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = Path(f"/proc/{name}/stat").read_bytes()
            except OSError:
                continue
            fields = stat.rsplit(b")", 1)[1].split()
            if int(fields[3]) == sid and fields[0] not in (b"Z", b"X"):
                found.append((int(name), stat[stat.index(b"(") + 1 : stat.rindex(b")")]))
    return found


def _end_session(sid: int) -> None:
    """Stop every process of session ``sid``, then kill them, until none is left (one that forks is caught next)."""
    for _ in range(200):
        members = [pid for pid, _name in _session(sid)]
        if not members:
            return
        for number in (signal.SIGSTOP, signal.SIGKILL):
            for pid in members:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, number)
        time.sleep(0.05)
