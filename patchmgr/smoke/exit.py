"""The pytest plugin that ends a smoke process as soon as its junit file is written (``-p patchmgr.smoke.exit``).

A pytest process that has run the upstream's code spends seconds after its last test: the terminal summary,
unconfiguring, then the interpreter's own end (torch's and transformers' modules torn down, their threads
joined). Smoke reads nothing of that: the junit file and the exit status are all it needs, and both are known
once pytest's junit plugin has written its file in ``pytest_sessionfinish``. This hook runs after it (trylast),
checks that the file is whole, flushes the output and ends the process with pytest's own exit status.

It does so only when the tests passed (0) or some failed (1, with a failure counted): any other end (no test
collected, interrupted, a usage or internal error) takes pytest's own way out, with the summary whose last lines
a reason quotes. Only a pytest process imports this module; patchmgr passes it in its batched runs (the way
before batches, ``PATCHMGR_SMOKE_PER_PATCH=1``, does without).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

JUNIT_END = "</testsuites>"  # the last tag pytest's junit file writes: a file that ends so is whole


def ends_clean(exitstatus: int, collected: int, failed: int) -> bool:
    """Whether pytest ended by running tests: all passed (0, some collected), or some failed (1, a failure
    counted: collection errors count too)."""
    return (exitstatus == 0 and collected > 0 and failed == 0) or (exitstatus == 1 and failed > 0)


def junit_whole(path: Path) -> bool:
    """Whether ``path`` is a junit file written to its end."""
    try:
        with path.open("rb") as junit:
            junit.seek(0, os.SEEK_END)
            junit.seek(max(0, junit.tell() - 64))
            return junit.read().decode("utf-8", "replace").rstrip().endswith(JUNIT_END)
    except OSError:
        return False


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """After every other plugin's sessionfinish (the junit file written, session fixtures torn down): end here."""
    xmlpath = getattr(session.config.option, "xmlpath", None)
    if not xmlpath or not ends_clean(int(exitstatus), session.testscollected, session.testsfailed):
        return
    if not junit_whole(Path(xmlpath)):
        return
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(int(exitstatus))
