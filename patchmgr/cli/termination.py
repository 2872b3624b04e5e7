"""SIGTERM and SIGHUP end a command the way Ctrl-C does, not by dying on the spot.

Python's default for SIGTERM ends the process at once: no ``finally`` runs, no ``except BaseException`` rolls
back, no temporary folder is removed. A smoke run's pytest processes live in sessions of their own (so that
their whole tree can be killed), so they would outlive patchmgr, each still running a test whose time limit
nobody enforces any more. ``timeout``, ``docker stop``, a cancelled CI job and a closed terminal all send one of
these signals. Here they raise ``Terminated``, a KeyboardInterrupt, so every path that Ctrl-C already cleans up
cleans up for them too; the command then exits with 128 + the signal's number, as a shell reports it.

Only the first signal interrupts: cleanup that is under way is not interrupted by a second one (SIGKILL still
ends everything).
"""

from __future__ import annotations

import signal
import sys
from types import FrameType

ENDING = (signal.SIGTERM, signal.SIGHUP)


class Terminated(KeyboardInterrupt):
    """The command was told to end by ``signum``."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class EndingAsInterrupts:
    """While inside, the first SIGTERM or SIGHUP raises Terminated in the main thread; later ones are let pass
    while cleanup runs (this handler does nothing then: SIG_IGN would be inherited by the processes cleanup
    starts), and are ignored once it has left. Leaving ends every child process still running
    (``io/children``). After it, ``signum`` is the signal that came, if one did. Make it before ``with``: a
    signal can come while it is entered. (A class, not contextlib: the start-up of ``patchmgr status`` pays for
    every import.)"""

    def __init__(self) -> None:
        self.signum: int | None = None
        self._before: dict[int, object] = {}

    @property
    def exit_code(self) -> int | None:
        """What a shell reports for a command ended by the signal; None when none came."""
        return None if self.signum is None else 128 + self.signum

    def _interrupt(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is None:
            self.signum = signum
            raise Terminated(signum)

    def __enter__(self) -> EndingAsInterrupts:
        self._before = {number: signal.signal(number, self._interrupt) for number in ENDING}
        return self

    def __exit__(self, *exc_info: object) -> None:
        for number in self._before:  # from here on a signal interrupts nothing: what follows must run through
            signal.signal(number, _let_pass)
        # the command is over (done, failed or stopped, its KeyboardInterrupt perhaps caught and made an exit
        # code): a child still running is one a worker thread waits on, which nobody will read. Ended, with
        # what it started, so that the thread ends and the process can exit (never loaded: no child was started)
        started = sys.modules.get("patchmgr.io.children")
        if started is not None:
            started.end_all()
        for number, handler in self._before.items():
            # after a signal, the rest is exiting: ignored (Python's own handler would be reset to the default
            # while the interpreter shuts down, and a second signal would then kill it mid-way)
            signal.signal(number, signal.SIG_IGN if self.signum is not None else handler)  # type: ignore[arg-type]
        if self.signum is not None:
            try:
                print(f"patchmgr: stopped by {signal.Signals(self.signum).name}", file=sys.stderr)
            except (OSError, ValueError):
                pass  # stderr is gone with the terminal that sent SIGHUP, or closed: the exit status says it


def _let_pass(signum: int, frame: FrameType | None) -> None:
    """A signal while the command ends: its end runs through (SIGKILL still ends everything)."""
