"""Whether the interpreter that would run an upstream's smoke tests is one the upstream declares it runs on.

An upstream states its Python range (``Requires-Python``): in the git tree as ``[project] requires-python`` of
``pyproject.toml`` (or ``PKG-INFO`` of an sdist committed as the base when a release stood in), or, installed,
in its distribution's ``METADATA``. Smoke tests run on an interpreter outside that range die of an
``ImportError`` or a ``SyntaxError`` (``typing.override`` is 3.12's), which says nothing about the patch: such
an outcome (a test failing or erroring there) makes the patch *not proven*, never *failed*, with the
way out named. The tests still run: a declared range can be wider than needed (Megatron-Bridge 0.4.2 declares
``>=3.12,<3.13``, yet the modules its smoke tests load import on 3.11), and tests that pass there prove the patch.
"""

from __future__ import annotations

import ast
import configparser
import sys
import tomllib
from dataclasses import dataclass
from email.parser import BytesHeaderParser
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name

from patchmgr.io.git import GitRepo
from patchmgr.model.errors import GitError
from patchmgr.model.records import typed
from patchmgr.sources.environment import dist_name
from patchmgr.sources.python_probe import interpreter_answer, run_probe
from patchmgr.targets.trees import SmokeTree

_VERSION_PROBE = "import json, sys; print(json.dumps(list(sys.version_info[:3])))"


@dataclass(frozen=True)
class PythonNeed:
    """What one upstream declares at the code under test, and whether the interpreter fits it."""

    upstream: str
    spec: str | None  # the declared Requires-Python; None when the upstream declares none
    where: str  # the file it was read from ("" when none)
    python: str  # the interpreter that would run the tests
    version: str  # its version, e.g. "3.11.7"
    fits: bool
    problem: str = ""  # a declared value that is not a version specifier: checked no further
    environment: str = ""  # the smoke environment the tests ran in ("" when in the interpreter's own)
    searched: bool = False  # the machine was searched for an interpreter that fits, and none was found

    def reason(self, outcome: str) -> str:
        """The verdict's reason for a test outcome short of a proof on this interpreter: it proves nothing."""
        none = " and no interpreter on this machine fits it" if self.searched else ""
        fitting = _fitting_minor(self.spec or "")
        install = f"install one (`pyenv install {fitting}`) or " if self.searched and fitting else ""
        return (
            f"needs Python {self.spec} (this is {_minor(self.version)}){none}, so this outcome says nothing about "
            f"the patch: {outcome}; {install}pass --python with an interpreter that fits"
        )

    def note(self, proven: bool) -> str:
        """The note for the upstream: its tests ran outside the declared range; the way out when that mattered."""
        said = (
            f"{self.upstream}: its smoke tests ran on Python {self.version} ({self.python}), outside its "
            f"declared Requires-Python {self.spec} ({self.where})"
            + (
                " (no interpreter on this machine fits it: pyenv versions, python3.X on PATH, uv)"
                if self.searched
                else ""
            )
        )
        if proven:
            return said + "; they passed there"
        fitting = _fitting_minor(self.spec or "")
        install = f" (`pyenv install {fitting}`)" if fitting else ""
        return (
            said + ", so what did not pass there is not proven (neither failed nor proven); install an interpreter "
            f"that fits{install} and run smoke again without --python: one call picks each upstream's Python and "
            "builds its smoke environment with it (what its tests import beyond pytest goes in the manifest's "
            "smoke-requirements); or pass --python with an interpreter that fits and holds the smoke dependencies"
        )


def interpreter_version(python: str | None) -> tuple[str, str]:
    """(the interpreter, its version ``X.Y.Z``): the running one when ``python`` is None, else asked."""
    if python is None:
        return sys.executable, ".".join(str(part) for part in sys.version_info[:3])
    answer = interpreter_answer(python, run_probe(python, _VERSION_PROBE), _version_answer)
    return python, ".".join(str(part) for part in answer)


def _version_answer(raw: object) -> list[int]:
    parts = typed(raw, list, "the answer")
    numbers = [part for part in parts if isinstance(part, int)]
    if len(parts) != 3 or len(numbers) != 3:
        raise ValueError(f"{raw!r} is not a version")
    return numbers


def python_need(
    tree: SmokeTree, python: str, version: str, declared: tuple[str | None, str] | None = None
) -> PythonNeed | None:
    """What ``tree``'s upstream declares (or ``declared``: its range and where it was read), checked against
    ``version``; None when the code is not there."""
    if tree.patched_root is None:
        return None
    spec, where = declared or python_range(tree)
    name = tree.upstream.name
    if spec is None:
        return PythonNeed(name, None, "", python, version, True)
    try:
        fits = SpecifierSet(spec).contains(version, prereleases=True)
    except InvalidSpecifier:
        return PythonNeed(
            name,
            spec,
            where,
            python,
            version,
            True,
            problem=f"{name}: its Requires-Python {spec!r} ({where}) is not a version specifier; "
            "the interpreter was not checked against it",
        )
    return PythonNeed(name, spec, where, python, version, fits)


def python_range(tree: SmokeTree) -> tuple[str | None, str]:
    """The Python ``tree``'s smoke tests need: the manifest's ``smoke-python``, else the upstream's own."""
    if tree.upstream.smoke_python is not None:
        return tree.upstream.smoke_python, "the manifest's smoke-python"
    return declared_requires_python(tree)


def declared_requires_python(tree: SmokeTree) -> tuple[str | None, str]:
    """The upstream's Requires-Python at the code under test, and where it was read; (None, "") if undeclared."""
    root = tree.patched_root
    assert root is not None
    top = _checkout_top(root, tree.upstream.package_root)
    if top is not None:
        for read in (_from_git, _from_files):
            found = read(top)
            if found is not None:
                return found
    installed = _from_installed(root, dist_name(tree.upstream))
    return installed if installed is not None else (None, "")


def _checkout_top(root: Path, package_root: str) -> Path | None:
    """The top of the upstream's tree that holds ``root`` (the import root), when it is a source tree."""
    top = root
    for _ in [part for part in package_root.split("/") if part]:
        top = top.parent
    if (top / ".git").exists() or any((top / name).is_file() for name, _ in _DECLARING):
        return top
    return None


def _from_git(top: Path) -> tuple[str, str] | None:
    """From the checkout's commit (HEAD: the code under test), through git."""
    if not (top / ".git").exists():
        return None
    try:
        with GitRepo(top) as repo:
            for name, read in _DECLARING:
                data = repo.read_path("HEAD", name)
                if data is not None and (spec := read(data)) is not None:
                    return spec, f"{name} at {top.name}'s HEAD"
    except GitError:
        return None
    return None


def _from_files(top: Path) -> tuple[str, str] | None:
    """From the files of a source tree that is not a git checkout (an editable install's folder)."""
    for name, read in _DECLARING:
        path = top / name
        if path.is_file() and (spec := read(path.read_bytes())) is not None:
            return spec, str(path)
    return None


def _from_installed(root: Path, name: str) -> tuple[str, str] | None:
    """From the installed distribution's METADATA beside its packages (site-packages)."""
    wanted = canonicalize_name(name)
    for info in sorted(root.glob("*.dist-info")):
        if canonicalize_name(info.name[: -len(".dist-info")].split("-")[0]) != wanted:
            continue
        metadata = info / "METADATA"
        if metadata.is_file() and (spec := _metadata(metadata.read_bytes())) is not None:
            return spec, str(metadata)
    return None


def _pyproject(data: bytes) -> str | None:
    try:
        document = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    project = document.get("project")
    value = project.get("requires-python") if isinstance(project, dict) else None
    return value.strip() if isinstance(value, str) and value.strip() else None


def _metadata(data: bytes) -> str | None:
    value = BytesHeaderParser().parsebytes(data).get("Requires-Python")
    return str(value).strip() if value and str(value).strip() else None


def _setup_cfg(data: bytes) -> str | None:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(data.decode("utf-8"))
    except (UnicodeDecodeError, configparser.Error):
        return None
    value = parser.get("options", "python_requires", fallback="").strip()
    return value or None


def _setup_py(data: bytes) -> str | None:
    """``python_requires="..."`` of a ``setup(...)`` call, when written as a string (nothing is run)."""
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        for keyword in node.keywords if isinstance(node, ast.Call) else []:
            value = keyword.value
            if keyword.arg == "python_requires" and isinstance(value, ast.Constant) and isinstance(value.value, str):
                return value.value.strip() or None
    return None


# where a source tree declares its Requires-Python, in the order read
_DECLARING = (
    ("pyproject.toml", _pyproject),
    ("PKG-INFO", _metadata),
    ("setup.cfg", _setup_cfg),
    ("setup.py", _setup_py),
)


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def _fitting_minor(spec: str) -> str | None:
    """The oldest Python 3 minor version (3.8 to 3.14) that ``spec`` admits: the one to suggest."""
    try:
        specifiers = SpecifierSet(spec)
    except InvalidSpecifier:
        return None
    return next((f"3.{minor}" for minor in range(8, 15) if specifiers.contains(f"3.{minor}.0", prereleases=True)), None)
