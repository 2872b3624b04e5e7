"""The pytest plugin patchmgr loads into every smoke process (``-p patchmgr.smoke.watch``): it writes a line
for each test collected, each collection error, when each test starts and ends, and what a failing test raised
to the file named by PATCHMGR_SMOKE_EVENTS, so that the watchdog in ``smoke.bounded`` knows which test is running
and for how long, a run of many patches' tests can tell each patch its own, and smoke can tell a failed assertion
(the one failure that detects a bug) from any other exception. It imports nothing but the standard library and
pytest, in whose process it runs (in the smoke environment, on the upstream's interpreter), and never changes an
outcome."""

from __future__ import annotations

import os
import re
from typing import Any


def _event(kind: str, nodeid: str, *more: str) -> None:
    path = os.environ.get("PATCHMGR_SMOKE_EVENTS")
    if path:
        with open(path, "a", encoding="utf-8") as events:
            # one line, fields split by tabs: no field holds a line break or a tab
            events.write("\t".join(" ".join(f.splitlines()).replace("\t", " ") for f in (kind, nodeid, *more)) + "\n")


def pytest_collection_finish(session: Any) -> None:
    """Every test collected (after deselection), so that a run of many patches' tests can tell each its own."""
    for item in session.items:
        _event("item", item.nodeid)
    _event("collected", str(len(session.items)))


def pytest_collectreport(report: Any) -> None:
    """A file (or folder, or class) that failed to collect: only the patches whose tests are in it get it."""
    if report.failed:
        _event("collecterror", report.nodeid)


def pytest_runtest_logstart(nodeid: str, location: object) -> None:
    _event("start", nodeid)


def pytest_runtest_logfinish(nodeid: str, location: object) -> None:
    _event("end", nodeid)


def pytest_runtest_logreport(report: Any) -> None:
    """Each phase's outcome (setup, call, teardown), so that the tests that ended before a kill keep theirs, with
    the reason pytest's junit file would have given (``one_line`` of its message and text)."""
    message = ""
    if report.failed:
        crash = getattr(report.longrepr, "reprcrash", None)
        said = crash.message if crash is not None else str(report.longrepr)
        if report.when != "call":
            said = f'failed on {report.when} with "{said}"'
        message = one_line(said, str(report.longrepr), "failure" if report.when == "call" else "error")
    elif report.skipped and isinstance(report.longrepr, tuple):
        message = str(report.longrepr[-1]).strip()
        message = message[len("Skipped: ") :] if message.startswith("Skipped: ") else message
    _event("report", report.nodeid, report.when, report.outcome, f"{report.duration:.2f}", message)


ASSERTION = "assertion"  # what a test raised when it failed its own assertion (``raised`` events)


def pytest_exception_interact(node: Any, call: Any, report: Any) -> None:
    """What a test's call raised when it failed: ``assertion`` for a failed assertion, else the exception's type.
    pytest calls this after the call's report and before the test's end, for every exception but a skip."""
    if call.when == "call" and call.excinfo is not None:
        _event("raised", node.nodeid, call.when, raised(call.excinfo.value))


def raised(error: BaseException) -> str:
    """``assertion`` for an AssertionError (``assert``, ``torch.testing.assert_close``, ``unittest``'s asserts) or
    pytest's own failure (``pytest.fail``, a ``pytest.raises`` that saw nothing raised); else the exception's type
    (``AttributeError``, ``mylib.core.CentsError``): an error in the test or the code it runs, which proves nothing."""
    import pytest  # this runs in pytest's own process: nothing to load

    kind = type(error)
    if isinstance(error, (AssertionError, pytest.fail.Exception)):
        return ASSERTION
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def one_line(message: str, text: str, tag: str) -> str:
    """One line saying why a test failed or errored, from pytest's message and its report's text (as in its junit
    file): the message, or the error line of its traceback where the message says too little; a SyntaxError with
    its message and place (Python writes it on several lines, the place first)."""
    message = message.strip()
    error_lines = [line[1:].strip() for line in text.splitlines() if line.startswith("E ") and line[1:].strip()]
    says_little = not message or message == "collection failure" or "\n" in message
    head = message.split(" with ", 1)[0] if message.startswith("failed on ") else message
    syntax = _syntax_error(message.splitlines()) or (_syntax_error(error_lines) if says_little else "")
    if syntax:
        head = head if head == "collection failure" or message.startswith("failed on ") else ""
        message = f"{head}: {syntax}" if head else syntax
    elif error_lines and says_little:
        # the first line alone says too little: pytest's own error line (an exception, a missing fixture) does
        message = f"{head}: {error_lines[-1]}" if head else error_lines[-1]
    elif not message:
        message = next((line.strip() for line in text.splitlines() if line.strip()), tag)
    return message.splitlines()[0][:300] if message else tag


_SYNTAX_AT = re.compile(r'^File "(?P<file>[^"]+)", line (?P<line>\d+)')
_SYNTAX_ERROR = re.compile(r"^(?:\w+\.)*(?:SyntaxError|IndentationError|TabError)\b")


def _syntax_error(lines: list[str]) -> str:
    """A SyntaxError as Python writes it (its place, the line, a caret, then the error) on one line:
    ``SyntaxError: '(' was never closed (calc.py, line 2)``; "" for anything else."""
    where = next((found for line in lines if (found := _SYNTAX_AT.match(line.strip()))), None)
    error = next((line.strip() for line in reversed(lines) if _SYNTAX_ERROR.match(line.strip())), "")
    return f"{error} ({where['file']}, line {where['line']})" if where and error else ""
