"""Installed Python environments: find an upstream's distribution and read its files.

The environment is another interpreter (``--python PATH``), so it is asked
about itself in a subprocess: where each distribution lives, its version,
whether it is an editable install (then its source checkout is what gets
patched), and where its RECORD is. Paths in patches are git-layout paths; a
wheel install holds them without the ``package-root`` prefix.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from functools import cached_property, partial
from pathlib import Path
from typing import TypedDict

from packaging.version import InvalidVersion, Version

from patchmgr.model.diff import FileDiff
from patchmgr.model.errors import StateError, UsageError
from patchmgr.model.manifest import Upstream
from patchmgr.model.patchfile import PatchFile
from patchmgr.model.records import text_or_none, typed
from patchmgr.model.source_identity import SourceIdentity, SourceKind
from patchmgr.sources.python_probe import interpreter_answer, run_probe
from patchmgr.sources.release import read_tree_file

# a file with one of these suffixes directly in site-packages is importable as a top-level module
_MODULE_SUFFIXES = (".py", ".pyc", ".pyw", ".so", ".pyd")
# repository tooling at the root that is never imported at run time: left out, not refused, when a patch adds it
_REPO_TOOLING = ("setup.py", "conftest.py", "noxfile.py")
_PTH_REASON = (
    "a .pth file runs its code at every interpreter start; patchmgr never writes one into an installed environment"
)

_PROBE = r"""
import json, sys
import importlib.metadata as md
names = json.loads(sys.argv[1])
found = {"prefix": sys.prefix, "executable": sys.executable, "dists": {}}
for name in names:
    try:
        dist = md.distribution(name)
    except md.PackageNotFoundError:
        continue
    entry = found["dists"][name] = {"version": "", "location": str(dist.locate_file("")), "record": None,
                                    "editable": False, "url": None, "files": [], "damaged": None}
    try:
        entry["version"] = dist.version
    except Exception as exc:
        entry["damaged"] = "METADATA: %s: %s" % (type(exc).__name__, exc)
    if not isinstance(entry["version"], str) or not entry["version"]:
        entry["version"], entry["damaged"] = "", entry["damaged"] or "METADATA names no Version"
    meta_dir = getattr(dist, "_path", None)
    if meta_dir is not None and (meta_dir / "RECORD").is_file():
        entry["record"] = str(meta_dir / "RECORD")
    # damaged metadata is reported, not a crash of the probe: patchmgr names the file
    try:
        info = json.loads(dist.read_text("direct_url.json") or "{}")
        if isinstance(info, dict):
            entry["editable"] = bool((info.get("dir_info") or {}).get("editable"))
            entry["url"] = info.get("url") if isinstance(info.get("url"), str) else None
    except Exception as exc:
        entry["damaged"] = "direct_url.json: %s: %s" % (type(exc).__name__, exc)
    try:
        entry["files"] = [str(f) for f in (dist.files or [])]
    except Exception as exc:
        entry["damaged"] = "its list of installed files (RECORD): %s: %s" % (type(exc).__name__, exc)
print(json.dumps(found))
"""


@dataclass(frozen=True)
class InstalledDist:
    upstream: Upstream
    name: str
    version: str
    location: Path  # site-packages, or the source checkout of an editable install
    record: Path | None
    editable: bool
    files: frozenset[str] = frozenset()  # what the distribution lists as its own (RECORD), relative to location

    def installed_path(self, path: str) -> Path | None:
        """Where the git-layout ``path`` lives in this installation, or None when it is not shipped."""
        if self.editable:
            return self.location / path
        root = self.upstream.package_root
        if root and not path.startswith(root + "/"):
            return None
        return self.location / (path[len(root) + 1 :] if root else path)

    @cached_property
    def package_folders(self) -> frozenset[str]:
        """Folders (relative to ``location``) that hold files of this distribution's own import packages."""
        folders = set()
        for name in self.files:
            parts = name.split("/")
            if (
                len(parts) < 2
                or parts[0] in ("..", "__pycache__")
                or "__pycache__" in parts
                or parts[0].endswith((".dist-info", ".egg-info", ".data"))
            ):
                continue
            folders.add("/".join(parts[:-1]))
        return frozenset(folders)

    def verdict(self, path: str, added: bool) -> tuple[str, str]:
        """Whether apply may write the git-layout ``path`` here: ("write"|"left-out"|"refused", why).

        Only files inside the distribution's own import packages (the folders its
        RECORD lists files in), or files it lists itself, are written into an
        installed environment. A repository file it does not install (tests/,
        docs/, setup.py, or anything outside ``package-root``) is left out. A
        ``.pth`` anywhere, and a new module directly in site-packages, are refused.
        """
        if path.rsplit("/", 1)[-1].endswith(".pth"):
            return "refused", _PTH_REASON
        if self.editable:  # the source checkout is patched like a git checkout
            return "write", ""
        installed = self.installed_path(path)
        if installed is None:
            return "left-out", f"outside package-root {self.upstream.package_root!r}"
        relative = installed.relative_to(self.location).as_posix()
        parts = relative.split("/")
        if not self.files:
            return "refused", (
                f"{self.name} lists no installed files (no RECORD), so patchmgr cannot tell its own "
                "packages from the rest of the environment"
            )
        if parts[0].endswith((".dist-info", ".egg-info", ".data")):
            return "refused", f"{parts[0]} is the installer's metadata, not the distribution's code"
        if relative in self.files and len(parts) == 1:
            return "write", ""  # a top-level module the distribution installs itself
        if any("/".join(parts[:depth]) in self.package_folders for depth in range(1, len(parts))):
            return "write", ""
        if len(parts) == 1 and added and relative.endswith(_MODULE_SUFFIXES) and relative not in _REPO_TOOLING:
            return "refused", (
                f"it would be a new top-level module in {self.location}, which {self.name} does not "
                "install; patchmgr writes only inside the distribution's own packages"
            )
        return "left-out", f"not part of {self.name}'s installed packages"

    @property
    def import_root(self) -> Path:
        if self.editable and self.upstream.package_root:
            return self.location / self.upstream.package_root
        return self.location


@dataclass(frozen=True)
class Environment:
    python: str
    prefix: Path
    dists: dict[str, InstalledDist]

    @property
    def state_dir(self) -> Path:
        return self.prefix / "patchmgr-state"


@dataclass
class Placed:
    """One patch as it goes into an installed environment."""

    patch: PatchFile  # the patch with only the files that are written there
    left_out: list[str] = field(default_factory=list)  # git paths of files the installation does not hold
    refused: tuple[str, str] | None = None  # (git path, why) when the patch cannot go into the environment


def place_patch(dist: InstalledDist, patch: PatchFile) -> Placed:
    """Split ``patch`` into the files written into the installation and those left out; or refuse it."""
    kept: list[FileDiff] = []
    left_out: list[str] = []
    for diff in patch.files:
        verdicts = []
        for path in (diff.old_path, diff.new_path):
            if path is not None:
                added = path == diff.new_path and path != diff.old_path
                verdicts.append((path, *dist.verdict(path, added)))
        for path, kind, why in verdicts:
            if kind == "refused":
                return Placed(patch, left_out, (path, why))
        kinds = {kind for _, kind, _ in verdicts}
        if kinds == {"write"}:
            kept.append(diff)
        elif kinds == {"left-out"}:
            left_out += [path for path, _, _ in verdicts if path not in left_out]
        else:
            return Placed(
                patch,
                left_out,
                (
                    diff.path,
                    f"it moves a file between {dist.name}'s installed packages "
                    "and files the installation does not hold",
                ),
            )
    return Placed(replace(patch, files=tuple(kept)), left_out)


def dist_name(upstream: Upstream) -> str:
    from packaging.utils import canonicalize_name  # it loads the wheel-tag machinery: only --python needs it

    return canonicalize_name(upstream.pypi or upstream.name)


def probe(python: str, upstreams: list[Upstream]) -> Environment:
    names = sorted({dist_name(u) for u in upstreams})
    raw = interpreter_answer(python, run_probe(python, _PROBE, json.dumps(names)), partial(_probe_answer, names))
    dists = {}
    for upstream in upstreams:
        entry = raw["dists"].get(dist_name(upstream))
        if entry is None:
            continue
        if entry["damaged"]:
            where = entry["record"] or entry["location"]
            raise StateError(
                f"{python}: the installed metadata of {dist_name(upstream)} {entry['version']} is "
                f"damaged ({entry['damaged']}; at {where})",
                f"reinstall it: {python} -m pip install --force-reinstall --no-deps "
                f"{dist_name(upstream)}" + (f"=={entry['version']}" if entry["version"] else ""),
            )
        location = Path(entry["location"])
        url = entry["url"] or ""
        if entry["editable"] and url.startswith("file://"):
            location = Path(url[len("file://") :])
        dists[upstream.name] = InstalledDist(
            upstream,
            dist_name(upstream),
            entry["version"],
            location,
            Path(entry["record"]) if entry["record"] else None,
            entry["editable"],
            frozenset(Path(f).as_posix() for f in entry["files"]),
        )
    return Environment(python, Path(raw["prefix"]), dists)


class _ProbeDist(TypedDict):
    """One distribution as ``_PROBE`` prints it."""

    version: str  # "" when its metadata names none (then ``damaged`` says why)
    location: str  # absolute
    record: str | None  # its RECORD file, if it has one
    editable: bool
    url: str | None  # direct_url.json's url
    files: list[str]
    damaged: str | None  # what of its metadata could not be read


class _ProbeAnswer(TypedDict):
    prefix: str  # absolute
    executable: str
    dists: dict[str, _ProbeDist]  # the names asked about that are installed


def _probe_answer(names: list[str], raw: object) -> _ProbeAnswer:
    """The probe's answer, every field of the type the probe prints (else ``TypeError``/``KeyError``)."""
    answer = typed(raw, dict, "the answer")
    prefix = typed(answer["prefix"], str, "prefix")
    if not Path(prefix).is_absolute():
        raise ValueError(f"prefix {prefix!r} is not an absolute path")
    executable = typed(answer["executable"], str, "executable")
    dists = typed(answer["dists"], dict, "dists")
    return {
        "prefix": prefix,
        "executable": executable,
        "dists": {name: _probe_dist(name, dists[name]) for name in names if name in dists},
    }


def _probe_dist(name: str, raw: object) -> _ProbeDist:
    entry = typed(raw, dict, f"dists[{name!r}]")
    version = typed(entry["version"], str, f"{name}: version")
    location = typed(entry["location"], str, f"{name}: location")
    if not Path(location).is_absolute():
        raise ValueError(f"{name}: location {location!r} is not an absolute path")
    record = text_or_none(entry["record"], f"{name}: record")
    editable = typed(entry["editable"], bool, f"{name}: editable")
    url = text_or_none(entry["url"], f"{name}: url")
    files = [typed(file, str, f"{name}: a file") for file in typed(entry["files"], list, f"{name}: files")]
    return {
        "version": version,
        "location": location,
        "record": record,
        "editable": editable,
        "url": url,
        "files": files,
        "damaged": text_or_none(entry["damaged"], f"{name}: damaged"),
    }


def require_dists(environment: Environment, upstreams: list[Upstream]) -> list[InstalledDist]:
    """Each upstream's distribution at the manifest's version; otherwise one clear error for all."""
    problems = []
    for upstream in upstreams:
        dist = environment.dists.get(upstream.name)
        wanted = upstream.version or "any version"
        if dist is None:
            problems.append(f"{dist_name(upstream)} is not installed (wanted {wanted})")
        elif upstream.version and not _same_version(dist.version, upstream.version):
            problems.append(f"{dist.name} {dist.version} is installed, but the pin is version {upstream.version}")
    if problems:
        # bad input (exit 2), like an interpreter that is not one: --python names an environment that does not
        # hold what the manifest pins, so nothing was checked
        raise UsageError(
            f"{environment.python}: " + "; ".join(problems),
            "install the pinned versions, or restrict the run with --upstream NAME",
        )
    return [environment.dists[u.name] for u in upstreams]


def _same_version(found: str, wanted: str) -> bool:
    try:
        return Version(found) == Version(wanted)
    except InvalidVersion:
        return found == wanted


@dataclass
class InstalledSource:
    """A ``TreeReader`` over an installed distribution, optionally seen through saved originals."""

    dist: InstalledDist
    originals: dict[str, bytes | None] | None = None  # git path -> original bytes, for a patched env

    kind = "installed"
    commit = None

    def read(self, path: str) -> bytes | None:
        if self.originals is not None and path in self.originals:
            return self.originals[path]
        target = self.dist.installed_path(path)
        return None if target is None else read_tree_file(target)

    def read_blob(self, sha: str) -> bytes | None:
        return None

    @property
    def identity(self) -> SourceIdentity:
        how = "editable install at" if self.dist.editable else "installed in"
        return SourceIdentity(SourceKind.INSTALLED, f"{self.dist.name} {self.dist.version} {how} {self.dist.location}")

    @property
    def description(self) -> str:
        return self.identity.description
