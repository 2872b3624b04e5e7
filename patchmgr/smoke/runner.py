"""Smoke tests: prove that each patch fixes its bug, against the upstream's real code.

Each patch names its tests (``Smoke-Test:`` fields). They run in a fresh pytest
process per patch and device, pointed at the upstream's import root through
PATCHMGR_SMOKE_ROOT, so the function a patch changes is imported from the tree
under test. ``unpatched`` runs the same tests against the pinned upstream
without the patches: the red check that proves each test detects its bug.

Each patch gets one verdict. Patched, it is *proven* when at least one of its
tests ran and every test that ran passed; *failed* when a test failed its
assertions; *not proven* otherwise (nothing ran, every test was skipped, a
test errored in collection, a fixture or an import, pytest did not run).
Unpatched, it is *proven* (the tests detect its bug) when at least one test
ran and every test that ran failed its assertions; a test that passes without
the patch makes it *failed*; an error is never a red result. ``Smoke-Test``
values are pytest node ids under ``tests/smoke/<upstream>/``, checked before
anything runs and handed to pytest after ``--``. Each test has a time limit
(``--timeout``, 300 s by default; ``smoke.bounded``): a test past it is *not
proven* ("timed out after N s") and the pytest process's whole tree is ended.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections import Counter
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from pathlib import Path

from patchmgr.model.errors import UsageError
from patchmgr.model.manifest import Target
from patchmgr.model.patchfile import PatchFile
from patchmgr.model.project import Project
from patchmgr.model.records import text_or_none, typed
from patchmgr.smoke.bounded import DEFAULT_TIMEOUT, WATCH_PLUGIN, run_bounded, timed_out_reason
from patchmgr.smoke.choice import UpstreamPython, choose_python
from patchmgr.smoke.envs import Progress
from patchmgr.smoke.interpreter import interpreter_version, python_need
from patchmgr.smoke.needs import check_smoke_needs, check_smoke_tests, package_parent, smoke_tests
from patchmgr.smoke.verdicts import (
    NO_SMOKE_TEST,
    PatchVerdict,
    SmokeReport,
    SmokeResult,
    TestOutcome,
    Verdict,
    patch_verdict,
)
from patchmgr.sources.python_probe import cannot_run, interpreter_answer
from patchmgr.targets.trees import SmokeTree

DEVICES = ("cpu", "cuda", "npu")
# The cpu lane needs pytest alone (a pure-Python upstream is proven without torch); the device lanes need torch
# (cuda) or torch_npu (npu) and say so when they are absent. A smoke test that imports torch where it is missing
# fails by its own ImportError, which is never a proof.
_PROBE = """
import importlib.util, json
found = {"cpu": None, "cuda": "no CUDA device", "npu": "no NPU (torch_npu is not installed)"}
if importlib.util.find_spec("pytest") is None:
    found["cpu"] = "pytest is not installed in this environment"
try:
    import torch
except ImportError:
    found["cuda"] = "torch is not installed in this environment (the cuda lane needs it)"
    found["npu"] = "torch and torch_npu are not installed in this environment (the npu lane needs them)"
except Exception as exc:
    found["cuda"] = found["npu"] = "importing torch failed: %s: %s" % (type(exc).__name__, str(exc)[:200])
else:
    if torch.cuda.is_available():
        found["cuda"] = None
    try:
        import torch_npu  # noqa: F401
        if torch.npu.is_available():
            found["npu"] = None
        else:
            found["npu"] = "torch_npu is installed but sees no NPU"
    except ImportError:
        pass
print(json.dumps(found))
"""


def available_devices(python: str) -> dict[str, str | None]:
    """Each device mapped to None when usable, else the reason it is not.

    Its answer is read as strictly as the environment probe's (``--python`` that
    prints something else is bad input, exit 2, never a traceback).
    """
    try:
        done = subprocess.run([python, "-c", _PROBE], capture_output=True, timeout=300)
    except subprocess.TimeoutExpired:
        # only the device lanes import torch: the cpu lane needs pytest alone
        return {"cpu": None, **{d: "cannot probe devices: importing torch took more than 300s" for d in DEVICES[1:]}}
    except (OSError, ValueError) as exc:
        raise UsageError(
            f"--python {python}: cannot run it ({cannot_run(python, exc)})", "give the path of a Python 3 interpreter"
        ) from None
    if done.returncode != 0:
        last = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:]
        return {
            d: f"cannot probe devices: {last[0][:300] if last else f'exit status {done.returncode}'}" for d in DEVICES
        }
    return interpreter_answer(python, done.stdout, _devices_answer)


def _devices_answer(raw: object) -> dict[str, str | None]:
    answer = typed(raw, dict, "the answer")
    return {device: text_or_none(answer[device], device) for device in DEVICES}


def run_smoke(
    project: Project,
    target: Target,
    trees: list[SmokeTree],
    device: str,
    unpatched: bool,
    python: str | None = None,
    progress: Progress | None = None,
    timeout: float | None = None,
) -> SmokeReport:
    """``timeout``: seconds each test may run (``smoke.bounded``; None: DEFAULT_TIMEOUT); ``progress`` hears each
    upstream and each patch's pytest run start and end."""
    timeout = DEFAULT_TIMEOUT if timeout is None else timeout
    checked_python = python
    python = python or sys.executable
    chosen: dict[str, UpstreamPython] = {}
    if device not in ("auto", *DEVICES):
        raise UsageError(f"--device {device!r} is not one of auto, cpu, cuda, npu", "use --device auto")
    if not timeout > 0:
        raise UsageError(f"--timeout {timeout:g}: a time limit must be more than 0 seconds", "use --timeout 300")
    check_smoke_tests(project, trees)
    if checked_python is None:  # each upstream on its own Python (smoke.choice), environments made before any test
        chosen = {tree.upstream.name: choose_python(tree, progress) for tree in trees}
        needs = [c.need for c in chosen.values() if c.need is not None]
    else:
        version = interpreter_version(checked_python)[1]
        needs = [need for tree in trees if (need := python_need(tree, python, version)) is not None]
        check_smoke_needs(project, trees, checked_python)  # --python: the user's environment, checked first
    # each interpreter's devices, asked once: another Python's environment may lack torch
    probes = {p: available_devices(p) for p in dict.fromkeys([c.devices_python for c in chosen.values()] or [python])}
    report = SmokeReport(
        target.name, unpatched, notes=[note for tree in trees for note in tree.notes], python_needs=needs
    )
    report.notes += [n.problem for n in needs if n.problem]
    outside = {n.upstream: n for n in needs if not n.fits}
    own = [t.upstream for t in trees if t.upstream.smoke_requirements_for(t.upstream.version) and t.patched_root]
    if checked_python is not None and own:
        report.notes.append(
            f"--python {checked_python}: every upstream's smoke tests ran in it; the smoke "
            f"requirements of {', '.join(u.name for u in own)} were not installed"
        )
    for tree in trees:
        upstream_python, probed = python, python
        if (choice := chosen.get(tree.upstream.name)) is not None:
            upstream_python, probed = choice.python, choice.devices_python
            report.notes += [choice.note] if choice.note else []
        probe = probes[probed]
        devices = [d for d in DEVICES if probe[d] is None] if device == "auto" else [device]
        say = progress or (lambda message: None)
        say(f"{tree.upstream.name}: started")
        started = time.monotonic()
        run = _Run(devices, probe, device == "auto", unpatched, upstream_python, timeout, say)
        results, verdicts = _smoke_upstream(project, tree, run)
        say(f"{tree.upstream.name}: done in {time.monotonic() - started:.1f}s")
        need = outside.get(tree.upstream.name)
        if need is not None:  # on an interpreter the upstream does not declare: only a proof counts
            # a patch none of whose tests ran (it names no Smoke-Test, its tree is not applied, no device) keeps
            # that reason, its own: another Python would not help
            ran = {r.patch for r in results if r.result is not TestOutcome.SKIPPED}
            verdicts = [
                v
                if v.verdict is Verdict.PROVEN or v.patch not in ran
                else replace(v, verdict=Verdict.NOT_PROVEN, reason=need.reason(v.reason))
                for v in verdicts
            ]
            report.notes.append(
                need.note(bool(ran) and all(v.verdict is Verdict.PROVEN for v in verdicts if v.patch in ran))
            )
        report.results += results
        report.verdicts += verdicts
    return report


@dataclass(frozen=True)
class _Run:
    """How one smoke call runs each upstream's tests."""

    devices: list[str]
    probe: dict[str, str | None]
    auto: bool
    unpatched: bool
    python: str
    timeout: float
    say: Progress


def _smoke_upstream(project: Project, tree: SmokeTree, run: _Run) -> tuple[list[SmokeResult], list[PatchVerdict]]:
    devices, probe, auto, unpatched = run.devices, run.probe, run.auto, run.unpatched
    upstream = tree.upstream
    patches = project.patches(upstream)
    if tree.patched_root is None:
        return (
            [
                SmokeResult(p.id, upstream.name, t, "-", TestOutcome.SKIPPED, reason=tree.reason)
                for p in patches
                for t in (smoke_tests(p) or ["-"])
            ],
            [patch_verdict(p.id, upstream.name, [], unpatched, not_run=tree.reason) for p in patches],
        )
    results: list[SmokeResult] = []
    verdicts: list[PatchVerdict] = []
    view: AbstractContextManager[Path]
    if not unpatched:
        view = nullcontext(tree.patched_root)
    elif tree.unpatched is not None:
        view = tree.unpatched()
    else:
        # every tree that has a patched_root also has its unpatched view (targets.trees and targets.installed
        # build them together); a tree without one cannot answer --unpatched
        raise ValueError(f"{upstream.name}: the tree at {tree.patched_root} has no unpatched view")
    with view as root:
        for patch in patches:
            tests = smoke_tests(patch)
            if not tests:
                reason = NO_SMOKE_TEST
                results.append(SmokeResult(patch.id, upstream.name, "-", "-", TestOutcome.SKIPPED, reason=reason))
                verdicts.append(patch_verdict(patch.id, upstream.name, [], unpatched, not_run=reason))
                continue
            mine: list[SmokeResult] = []
            for dev in devices:
                if probe.get(dev) is not None and not auto:
                    mine += [
                        SmokeResult(patch.id, upstream.name, t, dev, TestOutcome.SKIPPED, reason=f"{dev}: {probe[dev]}")
                        for t in tests
                    ]
                    continue
                run.say(f"{upstream.name}/{patch.id} {dev}: started")
                started = time.monotonic()
                ran = _run_pytest(project, patch, upstream.name, tests, root, dev, run)
                run.say(f"{upstream.name}/{patch.id} {dev}: {_outcomes(ran, time.monotonic() - started)}")
                mine += ran
            if auto:
                mine += [
                    SmokeResult(patch.id, upstream.name, "-", d, TestOutcome.SKIPPED, reason=f"{d}: {probe[d]}")
                    for d in DEVICES
                    if probe[d] is not None
                ]
            results += mine
            verdicts.append(patch_verdict(patch.id, upstream.name, mine, unpatched))
    return results, verdicts


_PYTEST_EXITS = {
    2: "interrupted, e.g. by a collection error",
    3: "internal error",
    4: "usage error",
    5: "no tests were collected",
}


def _outcomes(results: list[SmokeResult], seconds: float) -> str:
    """What one pytest run came to, for a progress line: ``passed in 3.2s``, ``1 passed, 1 failed in 4.0s``
    (the run's wall time: the interpreter's start and imports too)."""
    late = [r for r in results if r.result is TestOutcome.TIMED_OUT]
    if late:
        return f"{late[0].test}: {late[0].reason}"
    counts = Counter(r.result.value for r in results)
    said = next(iter(counts)) if len(counts) == 1 else ", ".join(f"{n} {what}" for what, n in counts.items())
    return f"{said} in {seconds:.1f}s"


def _run_pytest(
    project: Project, patch: PatchFile, upstream: str, tests: list[str], root: Path, device: str, run: _Run
) -> list[SmokeResult]:
    with tempfile.TemporaryDirectory(prefix="patchmgr-smoke-") as tmp:
        junit = Path(tmp) / "junit.xml"
        env = {
            **os.environ,
            "PATCHMGR_SMOKE_ROOT": str(root),
            "PATCHMGR_SMOKE_DEVICE": device,
            "PYTHONPATH": os.pathsep.join(filter(None, [package_parent(), os.environ.get("PYTHONPATH")])),
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        # the ids were checked by check_smoke_tests; after "--" pytest takes them as paths, never options
        command = [
            run.python,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            WATCH_PLUGIN,
            f"--junitxml={junit}",
            "--rootdir",
            str(project.root),
            "--",
            *tests,
        ]
        done = run_bounded(command, project.root, env, Path(tmp), run.timeout)
        elapsed = done.seconds
        if done.timed_out:  # pytest was killed: its junit never written, the test past the limit is the outcome
            reason = timed_out_reason(run.timeout, done)
            test = done.running or " ".join(tests)
            before = [
                SmokeResult(patch.id, upstream, e.nodeid, device, _outcome(e.outcome, e.message), e.seconds, e.message)
                for e in done.ended
            ]
            return [*before, SmokeResult(patch.id, upstream, test, device, TestOutcome.TIMED_OUT, elapsed, reason)]
        results = _parse_junit(junit, patch.id, upstream, device) if junit.is_file() else []
        code = done.code
        # pytest's exit status must agree with what the report says: anything but 0 (all passed) or 1
        # (tests failed) without a reported error, or 1 with nothing failing, is an error of its own
        failing = any(r.result in (TestOutcome.FAILED, TestOutcome.ERROR) for r in results)
        erring = any(r.result is TestOutcome.ERROR for r in results)
        if (code not in (0, 1) and not erring) or not results or (code == 1 and not failing):
            meaning = _PYTEST_EXITS.get(code, "tests failed" if code == 1 else "")
            what = "pytest did not run" if not junit.is_file() else "pytest"
            reason = f"{what} (exit {code}{': ' + meaning if meaning else ''}): {_tail(done.output)}"
            if not results and code in (0, 1):
                reason = f"no test was collected: {_tail(done.output)}"
            results.append(SmokeResult(patch.id, upstream, " ".join(tests), device, TestOutcome.ERROR, elapsed, reason))
        return results


def _outcome(said: str, message: str) -> TestOutcome:
    """A test's outcome from pytest's word for it; an import failing is not the bug's own reason."""
    outcome = TestOutcome(said)
    return TestOutcome.ERROR if outcome is TestOutcome.FAILED and _IMPORT_FAILURE.match(message) else outcome


def _tail(output: str, lines: int = 3) -> str:
    """The last lines pytest printed, on one line: what a reason can quote when pytest itself went wrong."""
    kept = [line.strip() for line in output.strip().splitlines() if line.strip()][-lines:]
    return (" | ".join(kept) or "no output")[-400:]


_IMPORT_FAILURE = re.compile(r"^(?:E\s+)?(?:\w+\.)*(?:ModuleNotFoundError|ImportError)\b")


def _parse_junit(junit: Path, patch_id: str, upstream: str, device: str) -> list[SmokeResult]:
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
                reason = _message(child)
                outcome = _outcome(TestOutcome.FAILED, reason)
            elif child.tag == "error":
                outcome, reason = TestOutcome.ERROR, _message(child)
            elif child.tag == "skipped" and outcome is TestOutcome.PASSED:
                outcome, reason = TestOutcome.SKIPPED, (child.get("message") or "").strip()
        results.append(SmokeResult(patch_id, upstream, name, device, outcome, round(seconds, 2), reason))
    return results


def _message(element: ElementTree.Element) -> str:
    """One line saying why a test failed or errored: pytest's message, or the error line of its traceback."""
    message = (element.get("message") or "").strip()
    text = element.text or ""
    error_lines = [line[1:].strip() for line in text.splitlines() if line.startswith("E ") and line[1:].strip()]
    if error_lines and (not message or message == "collection failure" or "\n" in message):
        # the first line alone says too little: pytest's own error line (an exception, a missing fixture) does
        head = message.split(" with ", 1)[0] if message.startswith("failed on ") else message
        message = f"{head}: {error_lines[-1]}" if head else error_lines[-1]
    elif not message:
        message = next((line.strip() for line in text.splitlines() if line.strip()), element.tag)
    return message.splitlines()[0][:300] if message else element.tag
