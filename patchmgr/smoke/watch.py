"""The pytest plugin patchmgr loads into every smoke process (``-p patchmgr.smoke.watch``): it writes a line
when each test starts and ends to the file named by PATCHMGR_SMOKE_EVENTS, so that the watchdog in
``smoke.bounded`` knows which test is running and for how long. It imports nothing but the standard
library (it runs in the smoke environment, on the upstream's interpreter) and never changes an outcome."""

from __future__ import annotations

import os
from typing import Any


def _event(kind: str, nodeid: str, *more: str) -> None:
    path = os.environ.get("PATCHMGR_SMOKE_EVENTS")
    if path:
        with open(path, "a", encoding="utf-8") as events:
            events.write("\t".join(" ".join(field.split()) for field in (kind, nodeid, *more)) + "\n")


def pytest_runtest_logstart(nodeid: str, location: object) -> None:
    _event("start", nodeid)


def pytest_runtest_logfinish(nodeid: str, location: object) -> None:
    _event("end", nodeid)


def pytest_runtest_logreport(report: Any) -> None:
    """Each phase's outcome (setup, call, teardown), so that the tests that ended before a kill keep theirs."""
    message = ""
    if report.failed:
        text = str(report.longreprtext)
        errors = [line[1:].strip() for line in text.splitlines() if line.startswith("E ") and line[1:].strip()]
        message = errors[-1] if errors else (text.strip().splitlines() or [""])[-1]
    elif report.skipped and isinstance(report.longrepr, tuple):
        message = str(report.longrepr[-1])
    _event("report", report.nodeid, report.when, report.outcome, f"{report.duration:.2f}", message[:300])
