"""Before anything runs: the interpreter can import what the smoke tests import, and every Smoke-Test value is valid."""

from __future__ import annotations

import ast
import importlib.metadata
import json
import os
import re
import shlex
from collections.abc import Sequence
from pathlib import Path

import patchmgr
from patchmgr.model.errors import UsageError
from patchmgr.model.lint import smoke_test_problem
from patchmgr.model.patchfile import PatchFile
from patchmgr.model.project import Project
from patchmgr.model.records import typed
from patchmgr.sources.python_probe import interpreter_answer, run_probe
from patchmgr.targets.trees import SmokeTree

# Which distribution a missing import is installed from, when the names differ (megatron alone: the smoke
# tests import megatron.core from the environment, megatron.bridge comes from the upstream under test).
_DISTRIBUTION_OF = {
    "megatron": "megatron-core",
    "megatron.core": "megatron-core",
    "yaml": "pyyaml",
    "PIL": "pillow",
    "sklearn": "scikit-learn",
    "re2": "google-re2",
}
_MODULE_OF = {"google_re2": "re2"}  # patchmgr's own dependencies whose import name is not their distribution's
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
    files = [
        project.root / value.split("::", 1)[0]
        for tree in trees
        if tree.patched_root is not None
        for patch in project.patches(tree.upstream)
        for value in smoke_tests(patch)
    ]
    if not files:
        return
    find: set[str] = {"pytest"}
    imports: set[str] = set()
    for module in smoke_imports(project.root, files, own=True):
        (imports if module.split(".")[0] == "patchmgr" else find).add(module)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_parent(), os.environ.get("PYTHONPATH")]))}
    need = {
        "find": sorted(find, key=lambda name: (name != "pytest", name)),
        "import": sorted(imports),
        "deps": _own_dependencies(),
    }
    output = run_probe(python, _NEEDS_PROBE, json.dumps(need), timeout=300, env=env, cwd=project.root)
    answer = interpreter_answer(python, output, _needs_answer)
    missing = list(dict.fromkeys(answer["missing"]))
    if missing:
        requirements = " ".join(shlex.quote(_requirement(name)) for name in missing)
        raise UsageError(
            f"--python {python} lacks {', '.join(missing)} (the smoke tests import them); nothing was run",
            f"install them there, e.g. {python} -m pip install {requirements}",
        )
    if answer["broken"]:
        raise UsageError(
            f"--python {python} cannot import what the smoke tests need ({answer['broken'][0]}); nothing was run",
            "use an interpreter of the Python version patchmgr runs on, with patchmgr's own dependencies installed",
        )


def smoke_imports(root: Path, files: Sequence[Path], own: bool = False) -> list[str]:
    """The modules smoke test ``files`` under project ``root`` and the conftest.py files pytest loads for them
    import, except their own folders' modules (and patchmgr's, unless ``own``): what their environment must
    hold. Imports inside ``try`` guard themselves and are left out."""
    found: dict[str, None] = {}
    for path in _with_conftests(root, files):
        for module in _imported_modules(path):
            top = module.split(".")[0]
            if (own or top != "patchmgr") and (top == "patchmgr" or not _local_module(root, path.parent, top)):
                found[module] = None
    return list(found)


def _needs_answer(raw: object) -> dict[str, list[str]]:
    answer = typed(raw, dict, "the answer")
    return {
        key: [typed(item, str, f"an item of {key}") for item in typed(answer[key], list, key)]
        for key in ("missing", "broken")
    }


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
    modules = [name.replace("-", "_").lower() for name in names if name]
    return [_MODULE_OF.get(module, module) for module in modules]


def _requirement(module: str) -> str:
    """What to pip install for ``module``: patchmgr's own pin when it declares one (torch==2.13.0, ...)."""
    name = _DISTRIBUTION_OF.get(module, module)
    for line in _declared():
        requirement = line.split(";", 1)[0].strip()
        if re.match(rf"{re.escape(name)}(?![\w.-])", requirement, re.IGNORECASE):
            return requirement.replace(" ", "")
    return name


def package_parent() -> str:
    """The folder that holds this patchmgr package: on PYTHONPATH for the smoke tests' ``import patchmgr``."""
    return str(Path(patchmgr.__file__).resolve().parent.parent)


def smoke_tests(patch: PatchFile) -> list[str]:
    return [value.strip() for value in patch.field_values("Smoke-Test") if value.strip()]


def check_smoke_tests(project: Project, trees: Sequence[SmokeTree]) -> None:
    """Refuse the run, before anything runs, when a selected patch names a Smoke-Test that is not a test id."""
    bad = [
        (patch, value, problem)
        for tree in trees
        for patch in project.patches(tree.upstream)
        for value in smoke_tests(patch)
        if (problem := smoke_test_problem(project, tree.upstream.name, value)) is not None
    ]
    if bad:
        patch, value, problem = bad[0]
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        raise UsageError(
            f"{_shown(project, patch.path)}: Smoke-Test {value!r} {problem}{more}; nothing was run",
            "Smoke-Test values are pytest node ids under tests/smoke/<upstream>/; `patchmgr lint` lists every bad one",
        )


def _shown(project: Project, path: Path) -> str:
    try:
        return str(path.relative_to(project.root))
    except ValueError:
        return str(path)
