"""Smoke tests: prove that each patch fixes its bug, against the upstream's real code.

Each patch names its tests (``Smoke-Test:`` fields). They run in a fresh pytest
process per patch and device, pointed at the upstream's import root through
PATCHMGR_SMOKE_ROOT, so the function a patch changes is imported from the tree
under test. ``unpatched`` runs the same tests against the pinned upstream
without the patches: the red check that proves each test detects its bug.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import patchmgr
from patchmgr.checkout import STATE, locked_into
from patchmgr.errors import UsageError
from patchmgr.gitio import GitRepo
from patchmgr.ledger import read_ledger
from patchmgr.manifest import Target, Upstream
from patchmgr.patchfile import PatchFile
from patchmgr.project import Project

DEVICES = ("cpu", "cuda", "npu")
_PROBE = """
import json
found = {"cpu": None, "cuda": "no CUDA device", "npu": "no NPU (torch_npu is not installed)"}
try:
    import torch
except ImportError:
    found["cpu"] = "torch is not installed in this environment"
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


@dataclass(frozen=True)
class SmokeResult:
    patch: str
    upstream: str
    test: str
    device: str
    result: str  # "passed" | "failed" | "skipped"
    seconds: float = 0.0
    reason: str = ""


@dataclass
class SmokeReport:
    target: str
    unpatched: bool
    results: list[SmokeResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ran(self) -> list[SmokeResult]:
        return [r for r in self.results if r.result != "skipped"]

    @property
    def ok(self) -> bool:
        """Patched: nothing failed. Unpatched: every test that ran failed (each detects its bug)."""
        if self.unpatched:
            return all(r.result == "failed" for r in self.ran)
        return not any(r.result == "failed" for r in self.results)


def available_devices(python: str) -> dict[str, str | None]:
    """Each device mapped to None when usable, else the reason it is not."""
    done = subprocess.run([python, "-c", _PROBE], capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        return {d: f"cannot probe devices: {done.stderr.strip().splitlines()[-1:]}" for d in DEVICES}
    import json

    return json.loads(done.stdout)


def smoke_tests(project: Project, patch: PatchFile) -> list[str]:
    return [value.strip() for value in patch.field_values("Smoke-Test") if value.strip()]


@dataclass
class SmokeTree:
    """Where one upstream's code is for the smoke tests, patched and (on demand) unpatched."""

    upstream: Upstream
    patched_root: Path | None  # the import root; None when the upstream is not there
    reason: str = ""  # why it is not there
    unpatched: Callable[[], AbstractContextManager[Path]] | None = None
    notes: list[str] = field(default_factory=list)  # e.g. that an interrupted apply was recovered first


def checkout_trees(target: Target, into: Path, only: Sequence[str] = ()) -> list[SmokeTree]:
    """The upstreams that ``apply --into`` checked out under ``into``."""
    into = into.resolve()
    notes: list[str] = []
    if (into / STATE).is_dir():
        with locked_into(into, notes):
            pass
    ledger = read_ledger(into) if into.is_dir() else None
    trees = []
    for upstream in target.upstreams:
        if only and upstream.name not in only:
            continue
        entry = ledger.upstream(upstream.name) if ledger else None
        if entry is None:
            trees.append(SmokeTree(upstream, None, f"{upstream.name} is not applied into {into}: "
                                                   "run `patchmgr apply` with a source for it"))
            continue
        checkout = into / upstream.name
        root = checkout / upstream.package_root if upstream.package_root else checkout
        trees.append(SmokeTree(upstream, root, unpatched=partial(_unpatched_checkout, checkout, entry.base_commit,
                                                                  upstream.package_root)))
    if trees:
        trees[0].notes += notes
    return trees


def run_smoke(project: Project, target: Target, trees: list[SmokeTree], device: str, unpatched: bool,
              python: str | None = None) -> SmokeReport:
    python = python or sys.executable
    if device not in ("auto", *DEVICES):
        raise UsageError(f"--device {device!r} is not one of auto, cpu, cuda, npu", "use --device auto")
    probe = available_devices(python)
    devices = [d for d in DEVICES if probe[d] is None] if device == "auto" else [device]
    report = SmokeReport(target.name, unpatched, notes=[note for tree in trees for note in tree.notes])
    for tree in trees:
        report.results += _smoke_upstream(project, tree, devices, probe, device == "auto", unpatched, python)
    return report


def _smoke_upstream(project: Project, tree: SmokeTree, devices: list[str], probe: dict[str, str | None],
                    auto: bool, unpatched: bool, python: str) -> list[SmokeResult]:
    upstream = tree.upstream
    patches = project.patches(upstream)
    if tree.patched_root is None:
        return [SmokeResult(p.id, upstream.name, t, "-", "skipped", reason=tree.reason)
                for p in patches for t in (smoke_tests(project, p) or ["-"])]
    results: list[SmokeResult] = []
    with (tree.unpatched() if unpatched else nullcontext(tree.patched_root)) as root:
        for patch in patches:
            tests = smoke_tests(project, patch)
            if not tests:
                results.append(SmokeResult(patch.id, upstream.name, "-", "-", "skipped",
                                           reason="the patch names no Smoke-Test"))
                continue
            for dev in devices:
                if probe.get(dev) is not None and not auto:
                    results += [SmokeResult(patch.id, upstream.name, t, dev, "skipped", reason=probe[dev])
                                for t in tests]
                    continue
                results += _run_pytest(project, patch, upstream.name, tests, root, dev, python)
            if auto:
                results += [SmokeResult(patch.id, upstream.name, "-", d, "skipped", reason=probe[d])
                            for d in DEVICES if probe[d] is not None]
    return results


@contextmanager
def _unpatched_checkout(checkout: Path, base_commit: str, package_root: str) -> Iterator[Path]:
    """A throw-away copy of the checkout with every patched file put back to the base commit."""
    with tempfile.TemporaryDirectory(prefix="patchmgr-unpatched-") as tmp:
        copy = Path(tmp) / checkout.name
        shutil.copytree(checkout, copy, symlinks=True, ignore=shutil.ignore_patterns(".git", "__pycache__"))
        with GitRepo(checkout) as repo:
            for path in repo.run("diff", "--name-only", "--no-renames", base_commit, "HEAD").splitlines():
                put_back(copy / path, repo.read_path(base_commit, path))
        yield copy / package_root if package_root else copy


def put_back(target: Path, original: bytes | None) -> None:
    if original is None:
        target.unlink(missing_ok=True)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(original)


def _run_pytest(project: Project, patch: PatchFile, upstream: str, tests: list[str], root: Path,
                device: str, python: str) -> list[SmokeResult]:
    with tempfile.TemporaryDirectory(prefix="patchmgr-smoke-") as tmp:
        junit = Path(tmp) / "junit.xml"
        package_parent = str(Path(patchmgr.__file__).resolve().parent.parent)
        env = {**os.environ, "PATCHMGR_SMOKE_ROOT": str(root), "PATCHMGR_SMOKE_DEVICE": device,
               "PYTHONPATH": os.pathsep.join(filter(None, [package_parent, os.environ.get("PYTHONPATH")])),
               "PYTHONDONTWRITEBYTECODE": "1"}
        command = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}",
                   "--rootdir", str(project.root), *tests]
        started = time.monotonic()
        done = subprocess.run(command, cwd=project.root, env=env, capture_output=True, text=True)
        elapsed = time.monotonic() - started
        if not junit.is_file():
            tail = (done.stdout + done.stderr).strip().splitlines()[-1:] or ["no output"]
            return [SmokeResult(patch.id, upstream, " ".join(tests), device, "failed", elapsed,
                                f"pytest did not run (exit {done.returncode}): {tail[0]}")]
        return _parse_junit(junit, patch.id, upstream, device)


def _parse_junit(junit: Path, patch_id: str, upstream: str, device: str) -> list[SmokeResult]:
    results = []
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name')}"
        seconds = float(case.get("time") or 0)
        outcome, reason = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed"
                reason = (child.get("message") or child.text or "").strip().splitlines()[0][:300] if (
                    child.get("message") or child.text) else child.tag
            elif child.tag == "skipped":
                outcome, reason = "skipped", (child.get("message") or "").strip()
        results.append(SmokeResult(patch_id, upstream, name, device, outcome, round(seconds, 2), reason))
    if not results:
        results.append(SmokeResult(patch_id, upstream, "-", device, "failed", 0.0, "no test was collected"))
    return results
