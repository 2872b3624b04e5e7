"""One bounded pytest process of smoke tests and what it came to: its command, its junit file read into results,
and the reason pytest itself gives when it went wrong (``smoke.runner`` runs it per patch or, through
``smoke.batch``, for many patches at once)."""

from __future__ import annotations

import os
import re
import threading
import xml.etree.ElementTree as ElementTree
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from patchmgr.io import scratch
from patchmgr.model.patchfile import PatchFile
from patchmgr.model.project import Project
from patchmgr.smoke.bounded import EXIT_PLUGIN, WATCH_PLUGIN, Ended, run_bounded, timed_out_reason
from patchmgr.smoke.envs import Progress
from patchmgr.smoke.needs import package_parent
from patchmgr.smoke.verdicts import SmokeResult, TestOutcome
from patchmgr.smoke.watch import ASSERTION, one_line

PER_PATCH_ENV = "PATCHMGR_SMOKE_PER_PATCH"


def per_patch() -> bool:
    """Whether smoke runs the way before batches (``PATCHMGR_SMOKE_PER_PATCH=1``, for the benchmark that measures
    both): each patch in a process of its own, the upstreams one after another, the devices probed with torch
    imported whatever the lane, every installed pytest plugin loaded, and each pytest process left to its own end
    (summary, interpreter teardown)."""
    return os.environ.get(PER_PATCH_ENV, "") == "1"


@dataclass(frozen=True)
class SmokeRun:
    """How one smoke call runs each upstream's tests."""

    devices: list[str]
    probe: dict[str, str | None]
    auto: bool
    unpatched: bool
    python: str
    timeout: float
    say: Progress
    stop: threading.Event | None = None  # set when the call is interrupted: every running process is ended


PYTEST_EXITS = {
    2: "interrupted, e.g. by a collection error",
    3: "internal error",
    4: "usage error",
    5: "no tests were collected",
}


def outcomes(results: list[SmokeResult], seconds: float) -> str:
    """What one pytest run came to, for a progress line: ``passed in 3.2s``, ``1 passed, 1 failed in 4.0s``
    (the run's wall time: the interpreter's start and imports too)."""
    late = [r for r in results if r.result is TestOutcome.TIMED_OUT]
    if late:
        return f"{late[0].test}: {late[0].reason}"
    counts = Counter(r.result.value for r in results)
    said = next(iter(counts)) if len(counts) == 1 else ", ".join(f"{n} {what}" for what, n in counts.items())
    return f"{said} in {seconds:.1f}s"


def smoke_environ(root: Path, device: str) -> dict[str, str]:
    """The environment of a smoke process: the tree under test, the lane, patchmgr's fixtures importable, and no
    pytest plugin loaded because it happens to be installed (``PLUGINS_OFF``)."""
    return {
        **os.environ,
        "PATCHMGR_SMOKE_ROOT": str(root),
        "PATCHMGR_SMOKE_DEVICE": device,
        "PYTHONPATH": os.pathsep.join(filter(None, [package_parent(), os.environ.get("PYTHONPATH")])),
        "PYTHONDONTWRITEBYTECODE": "1",
        **({} if per_patch() else PLUGINS_OFF),
    }


# pytest loads every plugin installed in the environment (its ``pytest11`` entry points) unless told not to. A smoke
# verdict must not depend on what else is installed where it runs: pytest-randomly would reseed and reorder the
# tests of a batch, pytest-xdist would take an ``-n`` in PYTEST_ADDOPTS and split the batch over workers whose
# tests the watch plugin never sees. Smoke tests that need a plugin name it, as pytest documents: ``-p MODULE`` in
# the project's pytest configuration (addopts) or in PYTEST_ADDOPTS, or PYTEST_PLUGINS=MODULE,... (docs/smoke.md).
# The way before batches (PATCHMGR_SMOKE_PER_PATCH=1) loads them all, as it did.
PLUGINS_OFF = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


def pytest_command(project: Project, python: str, junit: Path, tests: list[str], *more: str) -> list[str]:
    """The pytest call for ``tests`` (ids checked by check_smoke_tests: after "--" pytest takes them as paths,
    never options). It ends as soon as its junit file is written when the tests passed or failed (``smoke.exit``),
    but for the way before batches."""
    early = [] if per_patch() else ["-p", EXIT_PLUGIN]
    return [
        python,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        WATCH_PLUGIN,
        *early,
        f"--junitxml={junit}",
        *more,
        "--rootdir",
        str(project.root),
        "--",
        *tests,
    ]


def run_pytest(
    project: Project, patch: PatchFile, upstream: str, tests: list[str], root: Path, device: str, run: SmokeRun
) -> list[SmokeResult]:
    """One patch's tests in a pytest process of their own."""
    with scratch.folder("smoke") as tmp:
        junit = Path(tmp) / "junit.xml"
        command = pytest_command(project, run.python, junit, tests)
        done = run_bounded(command, project.root, smoke_environ(root, device), Path(tmp), run.timeout, stop=run.stop)
        elapsed = done.seconds
        if done.timed_out:  # pytest was killed: its junit never written, the test past the limit is the outcome
            reason = timed_out_reason(run.timeout, done)
            test = done.running or " ".join(tests)
            before = [ended_result(patch.id, upstream, device, e, e.nodeid) for e in done.ended]
            return [*before, SmokeResult(patch.id, upstream, test, device, TestOutcome.TIMED_OUT, elapsed, reason)]
        results = parse_junit(junit, patch.id, upstream, device, done.raised) if junit.is_file() else []
        code = done.code
        # pytest's exit status must agree with what the report says: anything but 0 (all passed) or 1
        # (tests failed) without a reported error, or 1 with nothing failing, is an error of its own
        failing = any(r.result in (TestOutcome.FAILED, TestOutcome.ERROR) for r in results)
        erring = any(r.result is TestOutcome.ERROR for r in results)
        if (code not in (0, 1) and not erring) or not results or (code == 1 and not failing):
            meaning = PYTEST_EXITS.get(code, "tests failed" if code == 1 else "")
            what = "pytest did not run" if not junit.is_file() else "pytest"
            reason = f"{what} (exit {code}{': ' + meaning if meaning else ''}): {_tail(done.output)}"
            if not results and code in (0, 1):
                reason = f"no test was collected: {_tail(done.output)}"
            results.append(SmokeResult(patch.id, upstream, " ".join(tests), device, TestOutcome.ERROR, elapsed, reason))
        return results


def ended_result(patch: str, upstream: str, device: str, ended: Ended, name: str) -> SmokeResult:
    """The result of a test that ended in a process the time limit killed, as the watch plugin saw it."""
    outcome, reason = outcome_of(ended.outcome, ended.raised, ended.message)
    return SmokeResult(patch, upstream, name, device, outcome, ended.seconds, reason)


def outcome_of(said: str, raised: str, message: str = "") -> tuple[TestOutcome, str]:
    """A test's outcome from pytest's word for it and what its call raised (``smoke.watch.raised``), with its
    reason: a test fails only by its own failed assertion (``assert``, ``pytest.fail``, ``pytest.raises``). Any
    other exception (an ``AttributeError`` of a typo, an ``ImportError``, a ``SyntaxError``, an exception of the
    code under test that the test does not assert) is an error, which proves nothing either way: a test whose bug
    shows as an exception asserts it (``with pytest.raises(...)``)."""
    outcome = TestOutcome(said)
    if outcome is TestOutcome.FAILED and raised != ASSERTION:
        return TestOutcome.ERROR, f"{message} (an exception, not a failed assertion)" if message else message
    return outcome, message


def _tail(output: str, lines: int = 3) -> str:
    """The last lines pytest printed, on one line: what a reason can quote when pytest itself went wrong."""
    kept = [line.strip() for line in output.strip().splitlines() if line.strip()][-lines:]
    return (" | ".join(kept) or "no output")[-400:]


def junit_name(nodeid: str) -> str:
    """The ``classname::name`` pytest's junit file gives the test (or collector) ``nodeid``."""
    path, bracket, params = nodeid.partition("[")
    names = path.split("::")
    names[0] = re.sub(r"\.py$", "", names[0].replace("/", "."))
    names[-1] += bracket + params
    return f"{'.'.join(names[:-1])}::{names[-1]}"


def parse_junit(junit: Path, patch_id: str, upstream: str, device: str, raised: Mapping[str, str]) -> list[SmokeResult]:
    """The results of a junit file; ``raised``: what each failing test's call raised, by node id (the watch
    plugin's word, ``Finished.raised``), which tells a failed assertion from an error."""
    by_name = {junit_name(nodeid): kind for nodeid, kind in raised.items()}
    results = []
    try:
        cases = list(ElementTree.parse(junit).getroot().iter("testcase"))
    except ElementTree.ParseError:
        return []
    for case in cases:
        name = f"{case.get('classname', '')}::{case.get('name')}"
        seconds = float(case.get("time") or 0)
        outcome, reason = TestOutcome.PASSED, ""
        for child in case:
            if child.tag == "failure":
                outcome, reason = outcome_of(TestOutcome.FAILED, by_name.get(name, ""), _message(child))
            elif child.tag == "error":
                outcome, reason = TestOutcome.ERROR, _message(child)
            elif child.tag == "skipped" and outcome is TestOutcome.PASSED:
                outcome, reason = TestOutcome.SKIPPED, (child.get("message") or "").strip()
        results.append(SmokeResult(patch_id, upstream, name, device, outcome, round(seconds, 2), reason))
    return results


def _message(element: ElementTree.Element) -> str:
    """One line saying why a test failed or errored: pytest's message, or the error line of its traceback."""
    return one_line(element.get("message") or "", element.text or "", element.tag)
