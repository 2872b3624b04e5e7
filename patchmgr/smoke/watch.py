"""The pytest plugin patchmgr loads into every smoke process (``-p patchmgr.smoke.watch``): it writes a line
when each test starts and ends to the file named by PATCHMGR_SMOKE_EVENTS, so that the watchdog in
``smoke.bounded`` knows which test is running and for how long. It imports nothing but the standard
library (it runs in the smoke environment, on the upstream's interpreter) and never changes an outcome."""

from __future__ import annotations

import os


def _event(kind: str, nodeid: str) -> None:
    path = os.environ.get("PATCHMGR_SMOKE_EVENTS")
    if path:
        with open(path, "a", encoding="utf-8") as events:
            events.write(f"{kind}\t{nodeid}\n")


def pytest_runtest_logstart(nodeid: str, location: object) -> None:
    _event("start", nodeid)


def pytest_runtest_logfinish(nodeid: str, location: object) -> None:
    _event("end", nodeid)
