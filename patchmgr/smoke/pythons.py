"""The interpreters of this machine, for an upstream whose declared Python the running one does not fit.

An upstream's smoke tests run on the Python it declares: the manifest's ``smoke-python`` (a PEP 440 specifier,
``">=3.12,<3.13"``), else its ``Requires-Python`` at the code under test (``smoke.interpreter``). When the running
interpreter fits, it runs them as before (its packages are borrowed: torch, pytest, ...). When it does not, the
highest version of the machine that fits runs them, in a smoke environment of its own (``smoke.envs``). Looked
for: pyenv's versions (``$PYENV_ROOT/versions`` and ``~/.pyenv/versions``), ``python3.X`` on PATH, and
``uv python find`` when uv is installed. Each candidate is asked for its version (a shim or a broken one that
does not answer is passed over), so what runs is the interpreter itself, never a shim.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from patchmgr.io import children

_ASK = (
    "import json, sys; print(json.dumps([list(sys.version_info[:3]), sys.executable, "
    "getattr(sys, '_base_executable', None) or sys.executable]))"
)
_MINORS = range(6, 30)


@dataclass(frozen=True)
class Interpreter:
    path: str  # the program that runs (the interpreter itself, not a shim)
    version: str  # X.Y.Z
    base: str  # what a virtual environment made with it links its bin/python to


def pyenv_roots() -> list[Path]:
    roots = [os.environ.get("PYENV_ROOT", ""), str(Path.home() / ".pyenv")]
    return [Path(root) for root in dict.fromkeys(r for r in roots if r)]


def _candidates(spec: SpecifierSet) -> Iterator[str]:
    """Programs that may be an interpreter fitting ``spec``: pyenv's first (highest version first), PATH, uv."""
    versions: list[tuple[Version, Path]] = []
    for root in pyenv_roots():
        folder = root / "versions"
        for entry in sorted(folder.iterdir()) if folder.is_dir() else []:
            try:
                version = Version(entry.name)
            except InvalidVersion:
                continue  # a virtualenv or another implementation (pypy3.10-...): not looked into
            if spec.contains(version, prereleases=True):
                versions.append((version, entry / "bin" / "python3"))
    yield from (str(program) for _, program in sorted(versions, reverse=True) if program.is_file())
    for minor in reversed(_MINORS):
        if spec.contains(f"3.{minor}.99", prereleases=True) or spec.contains(f"3.{minor}.0", prereleases=True):
            found = shutil.which(f"python3.{minor}")
            if found:
                yield found
    uv = shutil.which("uv")
    if uv:
        found = _output([uv, "python", "find", str(spec)])
        if found:
            yield found


def _output(command: list[str]) -> str:
    try:
        done = children.run(command, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def ask(program: str) -> Interpreter | None:
    """The interpreter ``program`` runs, with its version; None when it does not answer as one."""
    try:
        version, executable, base = json.loads(_output([program, "-c", _ASK]) or "null")
        return Interpreter(str(executable), ".".join(str(int(part)) for part in version), str(base))
    except (TypeError, ValueError):
        return None


def find_interpreter(spec: str) -> Interpreter | None:
    """The highest version on this machine that ``spec`` admits; None when none does (or ``spec`` is no range)."""
    try:
        specifiers = SpecifierSet(spec)
    except InvalidSpecifier:
        return None
    found: dict[str, Interpreter] = {}
    for program in dict.fromkeys(_candidates(specifiers)):
        interpreter = ask(program)
        if interpreter is not None and specifiers.contains(interpreter.version, prereleases=True):
            found.setdefault(os.path.realpath(interpreter.path), interpreter)
    return max(found.values(), key=lambda i: Version(i.version), default=None)
