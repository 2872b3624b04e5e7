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
    (a handler that does nothing, not SIG_IGN, which the processes cleanup starts would inherit). After it,
    ``signum`` is the signal that came, if one did. (A class, not contextlib: the start-up of ``patchmgr
    status`` pays for every import.)"""

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
        for number, handler in self._before.items():
            signal.signal(number, _passed if self.signum is not None else handler)  # type: ignore[arg-type]
        if self.signum is not None:
            print(f"patchmgr: stopped by {signal.Signals(self.signum).name}", file=sys.stderr)


def _passed(signum: int, frame: FrameType | None) -> None:
    """A second signal while the first one's cleanup runs: let it pass (SIGKILL still ends everything)."""
