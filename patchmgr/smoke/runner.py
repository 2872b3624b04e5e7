"""Smoke tests: prove that each patch fixes its bug, against the upstream's real code.

Each patch names its tests (``Smoke-Test:`` fields). They run in one pytest
process per upstream and device for all its patches (``smoke.batch``: each result
given to the patches whose tests it is; a patch runs alone where the batch cannot
say), pointed at the upstream's import root through PATCHMGR_SMOKE_ROOT, so the
function a patch changes is imported from the tree under test. Upstreams run side
by side, as many at once as this process may use cores. ``unpatched`` runs the same tests against the pinned upstream
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
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from pathlib import Path

from patchmgr.io import children
from patchmgr.model.errors import UsageError
from patchmgr.model.manifest import Target
from patchmgr.model.project import Project
from patchmgr.model.records import text_or_none, typed
from patchmgr.smoke.batch import Lane, Planned, run_patches
from patchmgr.smoke.bounded import DEFAULT_TIMEOUT
from patchmgr.smoke.choice import UpstreamPython, choose_python
from patchmgr.smoke.envs import Progress
from patchmgr.smoke.interpreter import interpreter_version, python_need
from patchmgr.smoke.needs import check_smoke_needs, check_smoke_tests, smoke_tests
from patchmgr.smoke.pytest_run import SmokeRun, per_patch
from patchmgr.smoke.verdicts import (
    NO_SMOKE_TEST,
    PatchVerdict,
    SmokeReport,
    SmokeResult,
    TestOutcome,
    Verdict,
    on_another_python,
    patch_verdict,
)
from patchmgr.sources.python_probe import cannot_run, interpreter_answer
from patchmgr.targets.trees import SmokeTree

DEVICES = ("cpu", "cuda", "npu")
# The cpu lane needs pytest alone (a pure-Python upstream is proven without torch); the device lanes need torch
# (cuda) or torch_npu (npu) and say so when they are absent. A smoke test that imports torch where it is missing
# fails by its own ImportError, which is never a proof.
# ``cpu`` as its argument: the cpu lane alone, in a few milliseconds (importing torch takes seconds).
_PROBE = """
import importlib.util, json, sys
found = {"cpu": None, "cuda": "no CUDA device", "npu": "no NPU (torch_npu is not installed)"}
if importlib.util.find_spec("pytest") is None:
    found["cpu"] = "pytest is not installed in this environment"
if sys.argv[1:] == ["cpu"]:
    found["cuda"] = found["npu"] = "not probed (--device cpu)"
    print(json.dumps(found))
    raise SystemExit(0)
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
    return _probe(python)


def cpu_devices(python: str) -> dict[str, str | None]:
    """The cpu lane's answer alone (``--device cpu``: no other lane runs, so torch is not imported to ask)."""
    return _probe(python, "cpu")


def _probe(python: str, *lanes: str) -> dict[str, str | None]:
    try:
        done = children.run([python, "-c", _PROBE, *lanes], capture_output=True, timeout=300)
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


def check_run_options(device: str, timeout: float | None) -> None:
    """``--device`` and ``--timeout`` (None: the default) are values a run can take, else bad input (exit 2)."""
    if device not in ("auto", *DEVICES):
        raise UsageError(f"--device {device!r} is not one of auto, cpu, cuda, npu", "use --device auto")
    if timeout is not None and not timeout > 0:
        raise UsageError(f"--timeout {timeout:g}: a time limit must be more than 0 seconds", "use --timeout 300")


def run_smoke(
    project: Project,
    target: Target,
    trees: list[SmokeTree],
    device: str,
    unpatched: bool,
    python: str | None = None,
    progress: Progress | None = None,
    timeout: float | None = None,
    pythons: dict[str, UpstreamPython] | None = None,
) -> SmokeReport:
    """``timeout``: seconds each test may run (``smoke.bounded``; None: DEFAULT_TIMEOUT); ``progress`` hears each
    upstream and each patch's pytest run start and end. ``pythons``, when given, keeps each upstream's interpreter
    and environment as the first run of a call chose them, for the next run to take as they are (the patched and
    unpatched runs of ``smoke --both``: one environment, built once and said once)."""
    timeout = DEFAULT_TIMEOUT if timeout is None else timeout
    checked_python = python
    python = python or sys.executable
    chosen: dict[str, UpstreamPython] = {}
    check_run_options(device, timeout)
    check_smoke_tests(project, trees)
    if checked_python is None:  # each upstream on its own Python (smoke.choice), environments made before any test
        pythons = {} if pythons is None else pythons
        for tree in trees:
            if tree.upstream.name not in pythons:
                pythons[tree.upstream.name] = choose_python(tree, progress)
        chosen = {tree.upstream.name: pythons[tree.upstream.name] for tree in trees}
        needs = [c.need for c in chosen.values() if c.need is not None]
    else:
        version = interpreter_version(checked_python)[1]
        needs = [need for tree in trees if (need := python_need(tree, python, version)) is not None]
        check_smoke_needs(project, trees, checked_python)  # --python: the user's environment, checked first
    # each interpreter's devices, asked once: another Python's environment may lack torch
    asked = cpu_devices if device == "cpu" and not per_patch() else available_devices
    probes = {p: asked(p) for p in dict.fromkeys([c.devices_python for c in chosen.values()] or [python])}
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
    lock = threading.Lock()

    def say(message: str) -> None:  # one line at a time: upstreams run side by side
        if progress is not None:
            with lock:
                progress(message)

    stop = threading.Event()
    runs: list[SmokeRun] = []
    for tree in trees:
        upstream_python, probed = python, python
        if (choice := chosen.get(tree.upstream.name)) is not None:
            upstream_python, probed = choice.python, choice.devices_python
        probe = probes[probed]
        devices = [d for d in DEVICES if probe[d] is None] if device == "auto" else [device]
        runs.append(SmokeRun(devices, probe, device == "auto", unpatched, upstream_python, timeout, say, stop))

    def upstream_run(tree: SmokeTree, run: SmokeRun) -> tuple[list[SmokeResult], list[PatchVerdict]]:
        say(f"{tree.upstream.name}: started")
        started = time.monotonic()
        done = _smoke_upstream(project, tree, run)
        say(f"{tree.upstream.name}: done in {time.monotonic() - started:.1f}s")
        return done

    workers = 1 if per_patch() else min(len(trees), _cores())
    if workers <= 1:
        outcomes = [upstream_run(tree, run) for tree, run in zip(trees, runs, strict=True)]
    else:  # side by side; interrupted, every pytest process still running is ended before this returns
        pool = ThreadPoolExecutor(max_workers=workers)
        try:
            outcomes = list(pool.map(upstream_run, trees, runs))
        except BaseException:
            stop.set()
            raise
        finally:
            pool.shutdown(wait=True)
    for tree, (results, verdicts) in zip(trees, outcomes, strict=True):
        if (choice := chosen.get(tree.upstream.name)) is not None and choice.note:
            report.notes.append(choice.note)
        need = outside.get(tree.upstream.name)
        if need is not None:  # on an interpreter the upstream does not declare: only a pass counts
            verdicts = on_another_python(verdicts, results, unpatched, need.reason)
            ran = {r.patch for r in results if r.result is not TestOutcome.SKIPPED}
            report.notes.append(
                need.note(bool(ran) and all(v.verdict is Verdict.PROVEN for v in verdicts if v.patch in ran))
            )
        report.results += results
        report.verdicts += verdicts
    return report


def _cores() -> int:
    """The cores this process may use: how many upstreams run side by side."""
    counted = getattr(os, "process_cpu_count", None)  # Python 3.13
    if counted is not None:
        return int(counted() or 1)
    affinity = getattr(os, "sched_getaffinity", None)  # Linux; elsewhere every core counts
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


def _smoke_upstream(project: Project, tree: SmokeTree, run: SmokeRun) -> tuple[list[SmokeResult], list[PatchVerdict]]:
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
        lane = Lane(project, upstream.name, root, "")
        planned = [Planned(p, tests) for p in patches if (tests := smoke_tests(p))]
        ran: dict[str, list[SmokeResult]] = {p.patch.id: [] for p in planned}
        for dev in devices:
            if probe.get(dev) is not None and not auto:
                for p in planned:
                    ran[p.patch.id] += [
                        SmokeResult(
                            p.patch.id, upstream.name, t, dev, TestOutcome.SKIPPED, reason=f"{dev}: {probe[dev]}"
                        )
                        for t in p.tests
                    ]
                continue
            for pid, got in run_patches(replace(lane, device=dev), planned, run).items():
                ran[pid] += got
    for patch in patches:
        if patch.id not in ran:
            reason = NO_SMOKE_TEST
            results.append(SmokeResult(patch.id, upstream.name, "-", "-", TestOutcome.SKIPPED, reason=reason))
            verdicts.append(patch_verdict(patch.id, upstream.name, [], unpatched, not_run=reason))
            continue
        mine = ran[patch.id]
        if auto:
            mine += [
                SmokeResult(patch.id, upstream.name, "-", d, TestOutcome.SKIPPED, reason=f"{d}: {probe[d]}")
                for d in DEVICES
                if probe[d] is not None
            ]
        results += mine
        verdicts.append(patch_verdict(patch.id, upstream.name, mine, unpatched))
    return results, verdicts
