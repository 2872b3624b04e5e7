"""A smoke process with a per-test time limit, whose whole process tree ends with it.

The pytest process starts in its own session and loads ``smoke.watch``, which writes a line as each test
starts, ends each phase, and ends. A watchdog here polls that file: each line restarts the clock, so every
test (with its setup and teardown; the first one with collection and imports too) gets the whole limit. Past
it, the process tree is killed (SIGKILL: a hung C call or a blocked read cannot ignore it) and the running test
is named as the one that timed out; the tests that ended before it keep the outcomes the plugin wrote (pytest
writes its junit file only at its end, so a killed run has none). The tree is killed as well when pytest ends
on its own or patchmgr is interrupted, so that no child a test started (a server, a ``sleep``) outlives the
run. The tree is ended the one way every child's is, ``io.children``: pytest's descendants and every process
of its session, so a child that made a process group of its own, or whose parent ended first, ends too. The
limit is enforced from outside, so it holds for a test stuck in C code, where a signal or timer inside the
interpreter would never fire. A child that makes a session of its own leaves the tree; that is the one way
out, and a smoke test has no reason to take it.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from patchmgr.io import children

DEFAULT_TIMEOUT = 300.0  # seconds per test: the default of `smoke --timeout`
WATCH_PLUGIN = "patchmgr.smoke.watch"
EXIT_PLUGIN = "patchmgr.smoke.exit"


@dataclass(frozen=True)
class Finished:
    """How a bounded pytest process ended: its exit status and output, or the test it was killed in."""

    code: int
    output: str
    seconds: float
    timed_out: bool = False
    running: str = ""  # the node id of the test past the limit; empty when it was killed between tests
    tests_ran: bool = False  # a test had started before the limit passed (else: collecting, importing)
    ended: tuple[Ended, ...] = ()  # when killed: the tests that had ended before, each with its outcome
    collected: tuple[str, ...] | None = None  # the node ids of the tests collected; None if collection never ended
    collect_errors: tuple[str, ...] = ()  # the node ids of what failed to collect (files, folders, classes)
    # each test whose call raised, with what (``smoke.watch.raised``: "assertion" for a failed assertion)
    raised: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Ended:
    """A test that ended before its process was killed, as the plugin reported it (pytest's words)."""

    nodeid: str
    outcome: str  # passed, failed (in its call), error (failed in setup or teardown), skipped
    seconds: float
    message: str
    raised: str = ""  # what its call raised when it failed ("assertion" for a failed assertion)


Heard = Callable[[list[list[str]]], None]


class Stopped(Exception):
    """The run was told to stop (``stop`` set: the smoke call was interrupted while upstreams ran side by side)."""


def run_bounded(
    command: list[str],
    cwd: Path,
    env: dict[str, str],
    scratch: Path,
    limit: float,
    heard: Heard | None = None,
    stop: threading.Event | None = None,
) -> Finished:
    """Run ``command`` (a pytest call) with ``-p smoke.watch`` loaded by the caller, at most ``limit`` seconds
    without a test starting or ending. ``heard`` is given the plugin's lines (each split in fields) whenever
    they grow, while pytest runs; once ``stop`` is set the process tree is killed and Stopped raised."""
    events = scratch / "events"
    log = scratch / "output"
    started = time.monotonic()
    with log.open("wb") as out:
        process = children.popen(
            command,
            cwd=cwd,
            env={**env, "PATCHMGR_SMOKE_EVENTS": str(events)},
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            timed_out, running, tests_ran = _watch(process, events, limit, heard, stop)
        finally:
            try:
                children.end_tree(process)  # ended or not, what it left in its session ends with it
            finally:
                children.forget(process)
    output = log.read_text("utf-8", "replace")
    seconds = round(time.monotonic() - started, 2)
    lines = _lines(events)
    ended = ended_tests(lines) if timed_out else ()
    collected = tuple(f[1] for f in lines if f[0] == "item" and len(f) > 1)
    errors = tuple(f[1] if len(f) > 1 else "" for f in lines if f[0] == "collecterror")
    known = collected if any(f[0] == "collected" for f in lines) else None
    return Finished(
        process.returncode, output, seconds, timed_out, running, tests_ran, ended, known, errors, raised_in(lines)
    )


def _watch(
    process: subprocess.Popen[bytes], events: Path, limit: float, heard: Heard | None, stop: threading.Event | None
) -> tuple[bool, str, bool]:
    """Whether the limit passed, the test then running, and whether any test had started."""
    tick = min(0.1, limit / 4)
    last, seen, running = time.monotonic(), 0, ""
    while True:
        # WNOWAIT: an ended pytest stays a zombie, unreaped, so that its session is still known by its number when
        # children.end_tree looks for what it left there (a patchmgr told to stop may have ended it: ECHILD)
        try:
            if os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return False, "", seen > 0
        except ChildProcessError:
            return False, "", seen > 0
        time.sleep(tick)
        if stop is not None and stop.is_set():
            raise Stopped()
        size = events.stat().st_size if events.exists() else 0
        now = time.monotonic()
        if size != seen:
            seen, last = size, now
            lines = _lines(events)
            running = _running(lines)
            if heard is not None:
                heard(lines)
        elif now - last > limit:
            return True, running, seen > 0


def _lines(events: Path) -> list[list[str]]:
    """The plugin's whole lines, split in fields (one it is still writing is left for the next look); none before
    its first (a run killed while collecting)."""
    if not events.is_file():
        return []
    text = events.read_text("utf-8", "replace")
    return [line.split("\t") for line in text[: text.rfind("\n") + 1].splitlines()]


def _running(lines: list[list[str]]) -> str:
    """The test that started last and has not ended, from the plugin's lines."""
    marks = [fields for fields in lines if fields[0] in ("start", "end") and len(fields) > 1]
    return marks[-1][1] if marks and marks[-1][0] == "start" else ""


def raised_in(lines: list[list[str]]) -> dict[str, str]:
    """Each test whose call raised, with what (the plugin's ``raised`` lines)."""
    return {f[1]: f[3] for f in lines if f[0] == "raised" and len(f) == 4 and f[2] == "call"}


def ended_tests(lines: list[list[str]]) -> tuple[Ended, ...]:
    """Every test whose end the plugin wrote (``lines``: its lines split in fields), with the outcome of its
    phases (a failed call is a failure, a failed setup or teardown an error, a skip a skip) and what its call
    raised."""
    raised = raised_in(lines)
    phases: dict[str, list[list[str]]] = {}
    done: list[str] = []
    for fields in lines:
        if fields[0] == "report" and len(fields) == 6:
            phases.setdefault(fields[1], []).append(fields[2:])
        elif fields[0] == "end" and len(fields) > 1:
            done.append(fields[1])
    ended = []
    for nodeid in done:
        reports = phases.get(nodeid, [])
        outcome, message = "passed", ""
        for when, said, _, text in reports:
            if said == "failed":
                outcome, message = ("failed" if when == "call" else "error"), text
                break
            if said == "skipped":
                outcome, message = "skipped", text
        seconds = sum(float(r[2]) for r in reports if r[2].replace(".", "", 1).isdigit())
        ended.append(Ended(nodeid, outcome, round(seconds, 2), message, raised.get(nodeid, "")))
    return tuple(ended)


def timed_out_reason(limit: float, finished: Finished) -> str:
    """Why a bounded run that was killed proves nothing, naming where it was when the limit passed."""
    reason = f"timed out after {limit:g} s (its process tree was ended)"
    if finished.running:
        return reason
    if finished.tests_ran:
        return reason + " between tests or after the last one (a fixture's teardown, pytest's own end)"
    return reason + " before any test started (collecting or importing)"
