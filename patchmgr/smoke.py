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
anything runs and handed to pytest after ``--``.
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import os
import re
import shlex
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
from patchmgr.environment import cannot_run, interpreter_answer, run_probe
from patchmgr.errors import UsageError
from patchmgr.gitio import GitRepo
from patchmgr.ledger import read_ledger, text_or_none, typed
from patchmgr.lint import smoke_test_problem
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
    # "passed" | "failed" (an assertion failure: a junit <failure>) | "error" (a collection, fixture or
    # import error, or pytest not running: it proves nothing either way) | "skipped"
    result: str
    seconds: float = 0.0
    reason: str = ""


VERDICTS = ("proven", "failed", "not-proven")


@dataclass(frozen=True)
class PatchVerdict:
    """What one smoke run proved about one patch, and why."""

    patch: str
    upstream: str
    verdict: str  # one of VERDICTS
    reason: str


@dataclass
class SmokeReport:
    target: str
    unpatched: bool
    results: list[SmokeResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    verdicts: list[PatchVerdict] = field(default_factory=list)

    @property
    def ran(self) -> list[SmokeResult]:
        """The tests that ran to an outcome (passed or failed); errors and skips proved nothing."""
        return [r for r in self.results if r.result in ("passed", "failed")]

    def with_verdict(self, verdict: str) -> list[PatchVerdict]:
        return [v for v in self.verdicts if v.verdict == verdict]

    @property
    def ok(self) -> bool:
        """Every selected patch proven by tests that ran in this invocation (and there was one to prove)."""
        return bool(self.verdicts) and all(v.verdict == "proven" for v in self.verdicts)


def patch_verdict(patch: str, upstream: str, results: Sequence[SmokeResult], unpatched: bool,
                  not_run: str = "") -> PatchVerdict:
    """The verdict on one patch from all its results (every test on every device)."""
    def where(r: SmokeResult) -> str:
        name = r.test.rsplit("::", 1)[-1] if "::" in r.test else r.test
        return name + (f" on {r.device}" if r.device != "-" else "")

    if not_run:
        return PatchVerdict(patch, upstream, "not-proven", not_run)
    passed = [r for r in results if r.result == "passed"]
    failed = [r for r in results if r.result == "failed"]
    errors = [r for r in results if r.result == "error"]
    if unpatched and passed:
        first = passed[0]
        return PatchVerdict(patch, upstream, "failed",
                            f"{where(first)} passes without the patch: it does not detect the bug"
                            + (f" ({len(passed)} tests pass)" if len(passed) > 1 else ""))
    if not unpatched and failed:
        first = failed[0]
        return PatchVerdict(patch, upstream, "failed", f"{where(first)} failed: {first.reason}")
    if errors:
        first = errors[0]
        return PatchVerdict(patch, upstream, "not-proven",
                            f"{where(first)} did not run to an outcome: {first.reason}"
                            + (f" (and {len(errors) - 1} more errors)" if len(errors) > 1 else ""))
    proof = failed if unpatched else passed
    if not proof:
        skips = list(dict.fromkeys(r.reason or "skipped" for r in results if r.result == "skipped"))
        return PatchVerdict(patch, upstream, "not-proven",
                            "no test ran" + (f": {'; '.join(skips)}" if skips else ""))
    devices = sorted({r.device for r in proof})
    if unpatched:
        return PatchVerdict(patch, upstream, "proven", f"{len(proof)} tests fail their assertions without the "
                            f"patch on {', '.join(devices)}: they detect its bug")
    return PatchVerdict(patch, upstream, "proven", f"{len(proof)} tests passed on {', '.join(devices)}")


def available_devices(python: str) -> dict[str, str | None]:
    """Each device mapped to None when usable, else the reason it is not.

    Its answer is read as strictly as the environment probe's (``--python`` that
    prints something else is bad input, exit 2, never a traceback).
    """
    try:
        done = subprocess.run([python, "-c", _PROBE], capture_output=True, timeout=300)
    except subprocess.TimeoutExpired:
        return {d: "cannot probe devices: importing torch took more than 300s" for d in DEVICES}
    except (OSError, ValueError) as exc:
        raise UsageError(f"--python {python}: cannot run it ({cannot_run(python, exc)})",
                         "give the path of a Python 3 interpreter") from None
    if done.returncode != 0:
        last = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:]
        return {d: f"cannot probe devices: {last[0][:300] if last else f'exit status {done.returncode}'}"
                for d in DEVICES}
    return interpreter_answer(python, done.stdout, _devices_answer)


def _devices_answer(raw: object) -> dict[str, str | None]:
    typed(raw, dict, "the answer")
    return {device: text_or_none(raw[device], device) for device in DEVICES}


# Which distribution a missing import is installed from, when the names differ (megatron alone: the smoke
# tests import megatron.core from the environment, megatron.bridge comes from the upstream under test).
_DISTRIBUTION_OF = {"megatron": "megatron-core", "megatron.core": "megatron-core", "yaml": "pyyaml", "PIL": "pillow", "sklearn": "scikit-learn"}

_NEEDS_PROBE = r"""
import importlib, importlib.machinery, importlib.util, json, sys
need = json.loads(sys.argv[1])
missing, broken = [], []


def lacking(name):
    # the part of dotted ``name`` that is not installed, found without importing anything; below a
    # namespace package (megatron.bridge and megatron.core come from two distributions) each part is
    # looked up, below a regular package its own subpackages are taken to ship with it
    parts = name.split(".")
    spec = importlib.util.find_spec(parts[0])
    if spec is None:
        return parts[0]
    for depth in range(1, len(parts)):
        if spec.origin not in (None, "namespace") or not spec.submodule_search_locations:
            return None
        spec = importlib.machinery.PathFinder.find_spec(".".join(parts[:depth + 1]),
                                                        list(spec.submodule_search_locations))
        if spec is None:
            return ".".join(parts[:depth + 1])
    return None


for name in need["find"]:
    try:
        lacks = lacking(name)
        if lacks:
            missing.append(lacks)
    except Exception as exc:
        broken.append("%s: %s: %s" % (name, type(exc).__name__, exc))
for name in need["import"]:
    try:
        importlib.import_module(name)
    except ModuleNotFoundError as exc:
        top = (exc.name or "").split(".")[0]
        if top and top != "patchmgr":
            missing.append(top)
            if top in need["deps"]:  # one of patchmgr's own: name every one that is missing at once
                missing += [dep for dep in need["deps"] if importlib.util.find_spec(dep) is None]
        else:
            broken.append("%s: %s" % (name, exc))
    except Exception as exc:
        broken.append("%s: %s: %s" % (name, type(exc).__name__, exc))
print(json.dumps({"missing": missing, "broken": broken}))
"""


def check_smoke_needs(project: Project, trees: Sequence[SmokeTree], python: str) -> None:
    """Before any test runs: ``python`` can import pytest and what the selected smoke tests import.

    The tests and every conftest.py pytest loads for them (from the project
    root down) are read for their imports: modules of their own folders are
    theirs, patchmgr's modules come from this patchmgr (PYTHONPATH) and are
    imported there for real, so that what they need (typer, rich, ... for
    ``patchmgr.cli``) is found missing too; every other top-level module must be
    installed in that environment. Missing ones are bad input, exit 2, like a
    missing distribution (``require_dists``): ``--python`` names an environment
    that does not hold what the run needs, and nothing was run.
    """
    files = [project.root / value.split("::", 1)[0] for tree in trees if tree.patched_root is not None
             for patch in project.patches(tree.upstream) for value in smoke_tests(project, patch)]
    if not files:
        return
    find, imports = {"pytest"}, set()
    for path in _with_conftests(project.root, files):
        for module in _imported_modules(path):
            top = module.split(".")[0]
            if top == "patchmgr":
                imports.add(module)
            elif not _local_module(project.root, path.parent, top):
                find.add(module)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [_package_parent(),
                                                                      os.environ.get("PYTHONPATH")]))}
    need = {"find": sorted(find, key=lambda name: (name != "pytest", name)), "import": sorted(imports),
            "deps": _own_dependencies()}
    output = run_probe(python, _NEEDS_PROBE, json.dumps(need),
                       timeout=300, env=env, cwd=project.root)
    answer = interpreter_answer(python, output, _needs_answer)
    missing = list(dict.fromkeys(answer["missing"]))
    if missing:
        requirements = " ".join(shlex.quote(_requirement(name)) for name in missing)
        raise UsageError(f"--python {python} lacks {', '.join(missing)} (the smoke tests import them); "
                         "nothing was run",
                         f"install them there, e.g. {python} -m pip install {requirements}")
    if answer["broken"]:
        raise UsageError(f"--python {python} cannot import what the smoke tests need ({answer['broken'][0]}); "
                         "nothing was run", "use an interpreter of the Python version patchmgr runs on, with "
                         "patchmgr's own dependencies installed")


def _needs_answer(raw: object) -> dict[str, list[str]]:
    typed(raw, dict, "the answer")
    return {key: [typed(item, str, f"an item of {key}") for item in typed(raw[key], list, key)]
            for key in ("missing", "broken")}


def _with_conftests(root: Path, files: Sequence[Path]) -> list[Path]:
    """``files`` and every conftest.py pytest loads for them: in each folder from ``root`` down to theirs."""
    found: dict[Path, None] = {}
    for path in files:
        folder = root
        for part in path.parent.relative_to(root).parts if root in path.parents else ():
            if (folder / "conftest.py").is_file():
                found[folder / "conftest.py"] = None
            folder = folder / part
        if (folder / "conftest.py").is_file():
            found[folder / "conftest.py"] = None
        found[path] = None
    return list(found)


def _imported_modules(path: Path) -> list[str]:
    """The absolute imports of a Python file, except those inside ``try`` (an optional import guards itself)."""
    try:
        tree = ast.parse(path.read_bytes(), str(path))
    except (OSError, SyntaxError, ValueError):
        return []  # pytest reports it as the test's own error
    guarded: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try):
            guarded.update(id(inner) for statement in node.body for inner in ast.walk(statement))
    modules = []
    for node in ast.walk(tree):
        if id(node) in guarded:
            continue
        if isinstance(node, ast.Import):
            modules += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module and node.module != "__future__":
            modules.append(node.module)
            if node.module == "patchmgr":  # from patchmgr import loader
                modules += [f"patchmgr.{alias.name}" for alias in node.names]
    return modules


def _local_module(root: Path, folder: Path, name: str) -> bool:
    """Whether ``name`` is a module of the tests' own folders (pytest puts them on sys.path)."""
    while True:
        if (folder / f"{name}.py").is_file() or (folder / name).is_dir():
            return True
        if folder == root or root not in folder.parents:
            return False
        folder = folder.parent


def _declared() -> list[str]:
    """patchmgr's declared requirements (its runtime dependencies, and its extras with their markers)."""
    try:
        return importlib.metadata.requires("patchmgr") or []
    except importlib.metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return []


def _own_dependencies() -> list[str]:
    """The import names of patchmgr's runtime dependencies (typer, rich, ...)."""
    names = [re.split(r"[\s<>=!~\[;(]", line.strip(), maxsplit=1)[0] for line in _declared() if ";" not in line]
    return [name.replace("-", "_").lower() for name in names if name]


def _requirement(module: str) -> str:
    """What to pip install for ``module``: patchmgr's own pin when it declares one (torch==2.13.0, ...)."""
    name = _DISTRIBUTION_OF.get(module, module)
    for line in _declared():
        requirement = line.split(";", 1)[0].strip()
        if re.match(rf"{re.escape(name)}(?![\w.-])", requirement, re.IGNORECASE):
            return requirement.replace(" ", "")
    return name


def _package_parent() -> str:
    """The folder that holds this patchmgr package: on PYTHONPATH for the smoke tests' ``import patchmgr``."""
    return str(Path(patchmgr.__file__).resolve().parent.parent)


def smoke_tests(project: Project, patch: PatchFile) -> list[str]:
    return [value.strip() for value in patch.field_values("Smoke-Test") if value.strip()]


def check_smoke_tests(project: Project, trees: Sequence[SmokeTree]) -> None:
    """Refuse the run, before anything runs, when a selected patch names a Smoke-Test that is not a test id."""
    bad = [(patch, value, problem) for tree in trees for patch in project.patches(tree.upstream)
           for value in smoke_tests(project, patch)
           if (problem := smoke_test_problem(project, tree.upstream.name, value)) is not None]
    if bad:
        patch, value, problem = bad[0]
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        raise UsageError(f"{_shown(project, patch.path)}: Smoke-Test {value!r} {problem}{more}; nothing was run",
                         "Smoke-Test values are pytest node ids under tests/smoke/<upstream>/; "
                         "`patchmgr lint` lists every bad one")


def _shown(project: Project, path: Path) -> str:
    try:
        return str(path.relative_to(project.root))
    except ValueError:
        return str(path)


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
    checked_python = python
    python = python or sys.executable
    if device not in ("auto", *DEVICES):
        raise UsageError(f"--device {device!r} is not one of auto, cpu, cuda, npu", "use --device auto")
    check_smoke_tests(project, trees)
    if checked_python is not None:  # --python: an environment of the user's, checked before anything runs
        check_smoke_needs(project, trees, checked_python)
    probe = available_devices(python)
    devices = [d for d in DEVICES if probe[d] is None] if device == "auto" else [device]
    report = SmokeReport(target.name, unpatched, notes=[note for tree in trees for note in tree.notes])
    for tree in trees:
        results, verdicts = _smoke_upstream(project, tree, devices, probe, device == "auto", unpatched, python)
        report.results += results
        report.verdicts += verdicts
    return report


def _smoke_upstream(project: Project, tree: SmokeTree, devices: list[str], probe: dict[str, str | None],
                    auto: bool, unpatched: bool, python: str) -> tuple[list[SmokeResult], list[PatchVerdict]]:
    upstream = tree.upstream
    patches = project.patches(upstream)
    if tree.patched_root is None:
        return ([SmokeResult(p.id, upstream.name, t, "-", "skipped", reason=tree.reason)
                 for p in patches for t in (smoke_tests(project, p) or ["-"])],
                [patch_verdict(p.id, upstream.name, [], unpatched, not_run=tree.reason) for p in patches])
    results: list[SmokeResult] = []
    verdicts: list[PatchVerdict] = []
    with (tree.unpatched() if unpatched else nullcontext(tree.patched_root)) as root:
        for patch in patches:
            tests = smoke_tests(project, patch)
            if not tests:
                reason = "the patch names no Smoke-Test"
                results.append(SmokeResult(patch.id, upstream.name, "-", "-", "skipped", reason=reason))
                verdicts.append(patch_verdict(patch.id, upstream.name, [], unpatched, not_run=reason))
                continue
            mine: list[SmokeResult] = []
            for dev in devices:
                if probe.get(dev) is not None and not auto:
                    mine += [SmokeResult(patch.id, upstream.name, t, dev, "skipped", reason=f"{dev}: {probe[dev]}")
                             for t in tests]
                    continue
                mine += _run_pytest(project, patch, upstream.name, tests, root, dev, python)
            if auto:
                mine += [SmokeResult(patch.id, upstream.name, "-", d, "skipped", reason=f"{d}: {probe[d]}")
                         for d in DEVICES if probe[d] is not None]
            results += mine
            verdicts.append(patch_verdict(patch.id, upstream.name, mine, unpatched))
    return results, verdicts


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


_PYTEST_EXITS = {2: "interrupted, e.g. by a collection error", 3: "internal error", 4: "usage error",
                 5: "no tests were collected"}


def _run_pytest(project: Project, patch: PatchFile, upstream: str, tests: list[str], root: Path,
                device: str, python: str) -> list[SmokeResult]:
    with tempfile.TemporaryDirectory(prefix="patchmgr-smoke-") as tmp:
        junit = Path(tmp) / "junit.xml"
        package_parent = _package_parent()
        env = {**os.environ, "PATCHMGR_SMOKE_ROOT": str(root), "PATCHMGR_SMOKE_DEVICE": device,
               "PYTHONPATH": os.pathsep.join(filter(None, [package_parent, os.environ.get("PYTHONPATH")])),
               "PYTHONDONTWRITEBYTECODE": "1"}
        # the ids were checked by check_smoke_tests; after "--" pytest takes them as paths, never options
        command = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}",
                   "--rootdir", str(project.root), "--", *tests]
        started = time.monotonic()
        done = subprocess.run(command, cwd=project.root, env=env, capture_output=True, text=True)
        elapsed = round(time.monotonic() - started, 2)
        results = _parse_junit(junit, patch.id, upstream, device) if junit.is_file() else []
        code = done.returncode
        # pytest's exit status must agree with what the report says: anything but 0 (all passed) or 1
        # (tests failed) without a reported error, or 1 with nothing failing, is an error of its own
        failing = any(r.result in ("failed", "error") for r in results)
        erring = any(r.result == "error" for r in results)
        if (code not in (0, 1) and not erring) or not results or (code == 1 and not failing):
            meaning = _PYTEST_EXITS.get(code, "tests failed" if code == 1 else "")
            what = "pytest did not run" if not junit.is_file() else "pytest"
            reason = f"{what} (exit {code}{': ' + meaning if meaning else ''}): {_tail(done.stdout + done.stderr)}"
            if not results and code in (0, 1):
                reason = f"no test was collected: {_tail(done.stdout + done.stderr)}"
            results.append(SmokeResult(patch.id, upstream, " ".join(tests), device, "error", elapsed, reason))
        return results


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
        outcome, reason = "passed", ""
        for child in case:
            if child.tag == "failure":
                outcome, reason = "failed", _message(child)
                if _IMPORT_FAILURE.match(reason):  # an import failing is not the bug's own reason
                    outcome = "error"
            elif child.tag == "error":
                outcome, reason = "error", _message(child)
            elif child.tag == "skipped" and outcome == "passed":
                outcome, reason = "skipped", (child.get("message") or "").strip()
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
