"""Fault injection for the reliability tests: a run counts its durable steps and can be killed or paused at one.

``PATCHMGR_FAULT_KILL_AT=N`` sends SIGKILL at step N, ``PATCHMGR_FAULT_TERM_AT=N`` SIGTERM (which the command
line turns into an interruption: cli/termination); ``PATCHMGR_FAULT_PAUSE_AT=N:SECONDS`` waits
there (while the file ``PATCHMGR_FAULT_PAUSED`` names exists, if it names one). Unset, ``step()``
only counts.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

_KILL_AT = "PATCHMGR_FAULT_KILL_AT"  # fault injection for the kill tests: SIGKILL at step N
_TERM_AT = "PATCHMGR_FAULT_TERM_AT"  # for the termination tests: SIGTERM at step N
_PAUSE_AT = "PATCHMGR_FAULT_PAUSE_AT"  # for the race and full-disk tests: "N:SECONDS" waits at step N ...
_PAUSED = "PATCHMGR_FAULT_PAUSED"  # ... and, if this names a file, creates it and waits only while it exists


class _Steps:
    """Counts durable steps so tests can kill the process at each one (PATCHMGR_FAULT_KILL_AT=N)."""

    def __init__(self) -> None:
        self.count = 0
        self.pid = os.getpid()
        self.kill_at = int(os.environ.get(_KILL_AT, "0") or 0)
        self.term_at = int(os.environ.get(_TERM_AT, "0") or 0)
        pause = os.environ.get(_PAUSE_AT, "")
        self.pause_at, _, seconds = pause.partition(":")
        self.pause_for = float(seconds or 0)

    def step(self) -> None:
        self.count += 1
        if self.kill_at and self.count == self.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        if self.term_at and self.count == self.term_at:
            os.kill(os.getpid(), signal.SIGTERM)  # the main thread's handler raises (here, in it)
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
