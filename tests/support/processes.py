"""Processes the tests start and must see end: whether one is gone, the ones whose command line names something,
and a server that accepts connections and never answers (a stalled git remote or package index)."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
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
