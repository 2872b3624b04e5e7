"""Many patches' smoke tests in one pytest process, each result given to the patches whose tests it is.

One process per upstream, device and side (patched or unpatched) starts the interpreter and imports the upstream
once instead of once per patch. The watch plugin lists the node ids pytest collected and the ones that failed to
collect; each junit case is matched to its node id (junit's ``classname::name`` is made from it) and given to
every patch one of whose ``Smoke-Test`` values names it (the file, a class or a test in it, a parameter of it).
The batch runs with ``--continue-on-collection-errors``, so a file that fails to collect keeps none but the
patches whose tests are in it from their outcomes: those run alone, where the error is theirs (or, when the batch
caused it, as two test files of one basename in two folders would, gone).

Where the batch cannot say what a patch's own process would have, that patch runs alone, as before: pytest ended
other than by passing or failing tests, a junit case that matches no node id, no test of the patch collected, a
collection error no patch owns. When the time limit ends the process, the patches whose tests all ended keep their
outcomes, the patch of the test that hung is timed out (with the outcomes of its tests that ended before), and
the rest run again in a new batch; a process killed while collecting or between tests sends each patch to a
process of its own. ``PATCHMGR_SMOKE_PER_PATCH=1`` runs every patch alone and the upstreams one after another
(the way before batches, with its fixed costs, kept for the benchmark that measures both).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

from patchmgr.io import scratch
from patchmgr.model.patchfile import PatchFile
from patchmgr.model.project import Project
from patchmgr.smoke.bounded import Finished, ended_tests, run_bounded, timed_out_reason
from patchmgr.smoke.pytest_run import (
    SmokeRun,
    ended_result,
    junit_name,
    outcome_of,
    outcomes,
    parse_junit,
    per_patch,
    pytest_command,
    run_pytest,
    smoke_environ,
)
from patchmgr.smoke.verdicts import SmokeResult, TestOutcome


@dataclass(frozen=True)
class Planned:
    """A patch and its ``Smoke-Test`` values."""

    patch: PatchFile
    tests: list[str]


@dataclass(frozen=True)
class Lane:
    """Where a batch runs: the upstream, the tree under test and the device."""

    project: Project
    upstream: str
    root: Path
    device: str


def run_alone(lane: Lane, planned: Planned, run: SmokeRun) -> list[SmokeResult]:
    """One patch's tests in a process of their own, said as they start and end."""
    where = f"{lane.upstream}/{planned.patch.id} {lane.device}"
    run.say(f"{where}: started")
    started = time.monotonic()
    ran = run_pytest(lane.project, planned.patch, lane.upstream, planned.tests, lane.root, lane.device, run)
    run.say(f"{where}: {outcomes(ran, time.monotonic() - started)}")
    return ran


def run_patches(lane: Lane, planned: list[Planned], run: SmokeRun) -> dict[str, list[SmokeResult]]:
    """Each patch's results on one device, from as few pytest processes as their results allow."""
    if per_patch():
        return {p.patch.id: run_alone(lane, p, run) for p in planned}
    settled: dict[str, list[SmokeResult]] = {}
    alone: list[Planned] = []
    pending = planned
    while len(pending) > 1:
        done, again, solo = _batch(lane, pending, run)
        settled.update(done)
        alone += solo
        if len(again) == len(pending):  # nothing settled (cannot happen): each alone rather than forever
            alone, again = alone + again, []
        pending = again
    alone += pending
    settled.update({p.patch.id: run_alone(lane, p, run) for p in alone})
    return {p.patch.id: settled[p.patch.id] for p in planned}


def _within(inner: str, outer: str) -> bool:
    """Whether node id ``inner`` is ``outer`` or inside it (a test of a file, a class, a parameter of a test)."""
    return inner == outer or inner.startswith((outer + "::", outer + "/", outer + "["))


def _owns(planned: Planned, nodeid: str) -> bool:
    return any(_within(nodeid, test) for test in planned.tests)


def _hit(planned: Planned, failed: str) -> bool:
    """Whether a collection error of ``failed`` (a file, a folder) keeps one of the patch's tests from running."""
    return any(_within(test, failed) or _within(failed, test) for test in planned.tests)


def _in_order(planned: Planned, results: list[SmokeResult], nodeids: dict[str, str]) -> list[SmokeResult]:
    """The patch's results in the order of its own ``Smoke-Test`` values (its own process's order)."""

    def rank(result: SmokeResult) -> int:
        nodeid = nodeids.get(result.test, result.test)
        return next((i for i, t in enumerate(planned.tests) if _within(nodeid, t) or _within(t, nodeid)), 0)

    return sorted((replace(r, patch=planned.patch.id) for r in results), key=rank)


Outcome = tuple[dict[str, list[SmokeResult]], list[Planned], list[Planned]]  # settled, again, alone


def _batch(lane: Lane, pending: list[Planned], run: SmokeRun) -> Outcome:
    tests = list(dict.fromkeys(t for p in pending for t in p.tests))
    run.say(f"{lane.upstream} {lane.device}: one pytest process for {', '.join(p.patch.id for p in pending)}")
    with scratch.folder("smoke") as tmp:
        junit = Path(tmp) / "junit.xml"
        command = pytest_command(lane.project, run.python, junit, tests, "--continue-on-collection-errors")
        heard = _Announcer(lane, pending, run)
        environ = smoke_environ(lane.root, lane.device)
        done = run_bounded(command, lane.project.root, environ, Path(tmp), run.timeout, heard, run.stop)
        if done.timed_out:
            return _killed(lane, pending, run, done)
        if done.code not in (0, 1) or done.collected is None or not junit.is_file():
            return {}, [], pending  # pytest itself went wrong: each patch's own process says how
        results = parse_junit(junit, "", lane.upstream, lane.device, done.raised)
    nodeids = {junit_name(n): n for n in (*done.collected, *done.collect_errors)}
    failing = any(r.result in (TestOutcome.FAILED, TestOutcome.ERROR) for r in results)
    errors = set(done.collect_errors)
    if (
        any(r.test not in nodeids for r in results)
        or failing != (done.code == 1)
        or any(not any(_hit(p, e) for p in pending) for e in errors)
    ):
        return {}, [], pending
    settled: dict[str, list[SmokeResult]] = {}
    alone: list[Planned] = []
    for planned in pending:
        # a collection error may be the batch's own doing (two test files of one basename in two folders clash
        # in one process): its patches run alone, where it is theirs or gone
        mine = [r for r in results if nodeids[r.test] not in errors and _owns(planned, nodeids[r.test])]
        if mine and not any(_hit(planned, e) for e in errors):
            settled[planned.patch.id] = _in_order(planned, mine, nodeids)
        else:
            alone.append(planned)
    return settled, [], alone


def _killed(lane: Lane, pending: list[Planned], run: SmokeRun, done: Finished) -> Outcome:
    """A batch the time limit ended: the hung test's patches time out, finished patches keep their outcomes."""
    if done.collected is None or not done.running:
        return {}, [], pending  # collecting, importing or between tests: whose it was is unknown
    ended = {e.nodeid: e for e in done.ended}
    reason = timed_out_reason(run.timeout, done)
    settled: dict[str, list[SmokeResult]] = {}
    again: list[Planned] = []
    alone: list[Planned] = []
    for planned in pending:
        items = [n for n in done.collected if _owns(planned, n)]
        pid = planned.patch.id

        if not items or any(_hit(planned, e) for e in done.collect_errors):
            alone.append(planned)
        elif done.running in items:  # its own process would have ended here too, named as it names them
            before = [ended_result(pid, lane.upstream, lane.device, ended[n], n) for n in items if n in ended]
            late = SmokeResult(
                pid, lane.upstream, done.running, lane.device, TestOutcome.TIMED_OUT, done.seconds, reason
            )
            settled[pid] = [*before, late]
            run.say(f"{lane.upstream}/{pid} {lane.device}: {outcomes([late], done.seconds)}")
        elif all(n in ended for n in items):  # named as its junit file would have
            settled[pid] = [ended_result(pid, lane.upstream, lane.device, ended[n], junit_name(n)) for n in items]
        else:
            again.append(planned)
    return settled, again, alone


class _Announcer:
    """The progress lines of a batch, from the plugin's lines as they come: a patch's start when its first test
    starts, its end (with its outcomes and the seconds since) when its last test ends."""

    def __init__(self, lane: Lane, pending: list[Planned], run: SmokeRun) -> None:
        self.lane, self.pending, self.say = lane, pending, run.say
        self.started: dict[str, float] = {}
        self.said_end: set[str] = set()
        self.lock = threading.Lock()

    def __call__(self, lines: list[list[str]]) -> None:
        with self.lock:
            items = [f[1] for f in lines if f[0] == "item" and len(f) > 1]
            starts = {f[1] for f in lines if f[0] == "start" and len(f) > 1}
            ended = {e.nodeid: e for e in ended_tests(lines)}
            for planned in self.pending:
                pid, mine = planned.patch.id, [n for n in items if _owns(planned, n)]
                where = f"{self.lane.upstream}/{pid} {self.lane.device}"
                if pid not in self.started and any(n in starts for n in mine):
                    self.started[pid] = time.monotonic()
                    self.say(f"{where}: started")
                if pid in self.started and pid not in self.said_end and all(n in ended for n in mine):
                    self.said_end.add(pid)
                    results = [
                        SmokeResult(pid, "", n, "", outcome_of(ended[n].outcome, ended[n].raised)[0]) for n in mine
                    ]
                    self.say(f"{where}: {outcomes(results, time.monotonic() - self.started[pid])}")
