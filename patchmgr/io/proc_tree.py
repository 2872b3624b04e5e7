"""The tree of a process as /proc shows it: every process's parent and session, the tree below a process, and a
count of it from /proc's lists of children (a few files read, where reading every process's stat is hundreds).

A process that made a process group of its own is found by its parent like any other; a process whose parent ended
first was given to init and is found only by its session (``tree``'s ``session``).
"""

from __future__ import annotations

import os
import threading

Table = dict[int, tuple[int, int]]  # each process's number: its parent's and its session's


def processes() -> Table:
    """Every process's parent and session, from /proc (empty where there is none)."""
    table: Table = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return table
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
            table[int(name)] = (int(fields[1]), int(fields[3]))  # after the name: state, ppid, pgrp, session
        except (OSError, IndexError, ValueError):
            continue
    return table


def tree(root: int, table: Table, session: bool, known: set[int] | None = None) -> set[int]:
    """``root``, its descendants (by parent: a process that made a group of its own is one) and, with ``session``,
    every process of the session it leads; ``known``: processes already found, whose children are looked for too."""
    found = {root} | (known or set())
    if session:
        found |= {pid for pid, (_parent, sid) in table.items() if sid == root}
    children: dict[int, list[int]] = {}
    for pid, (parent, _sid) in table.items():
        children.setdefault(parent, []).append(pid)
    todo = list(found)
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def counted(root: int, limit: int) -> int:
    """How many processes ``root``'s tree holds, from /proc's lists of each thread's children, counted no further
    than one past ``limit`` (a few files read per look: a look every few milliseconds costs next to nothing)."""
    found, todo = {root}, [root]
    while todo and len(found) <= limit:
        pid = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue  # it has ended meanwhile
        for task in tasks:
            try:
                with open(f"/proc/{pid}/task/{task}/children", "rb") as listed:
                    numbers = listed.read().split()
            except OSError:
                continue
            for child in map(int, numbers):
                if child not in found:
                    found.add(child)
                    todo.append(child)
    return len(found)


def child_lists() -> bool:
    """Whether /proc lists each thread's children (Linux built with CONFIG_PROC_CHILDREN, as distributions are)."""
    return os.path.exists(f"/proc/{os.getpid()}/task/{threading.get_native_id()}/children")
