"""Installed Python environments: find an upstream's distribution and read its files.

The environment is another interpreter (``--python PATH``), so it is asked
about itself in a subprocess: where each distribution lives, its version,
whether it is an editable install (then its source checkout is what gets
patched), and where its RECORD is. Paths in patches are git-layout paths; a
wheel install holds them without the ``package-root`` prefix.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from patchmgr.errors import StateError, UsageError
from patchmgr.manifest import Upstream
from patchmgr.releases import read_tree_file

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
    direct = dist.read_text("direct_url.json")
    info = json.loads(direct) if direct else {}
    record = None
    meta_dir = getattr(dist, "_path", None)
    if meta_dir is not None and (meta_dir / "RECORD").is_file():
        record = str(meta_dir / "RECORD")
    found["dists"][name] = {
        "version": dist.version,
        "location": str(dist.locate_file("")),
        "record": record,
        "editable": bool(info.get("dir_info", {}).get("editable")),
        "url": info.get("url"),
    }
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

    def installed_path(self, path: str) -> Path | None:
        """Where the git-layout ``path`` lives in this installation, or None when it is not shipped."""
        if self.editable:
            return self.location / path
        root = self.upstream.package_root
        if root and not path.startswith(root + "/"):
            return None
        return self.location / (path[len(root) + 1:] if root else path)

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


def dist_name(upstream: Upstream) -> str:
    return canonicalize_name(upstream.pypi or upstream.name)


def probe(python: str, upstreams: list[Upstream]) -> Environment:
    names = sorted({dist_name(u) for u in upstreams})
    try:
        done = subprocess.run([python, "-c", _PROBE, json.dumps(names)], capture_output=True, text=True,
                              timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UsageError(f"--python {python}: cannot run it ({exc})", "give the path of a Python interpreter") from exc
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise UsageError(f"--python {python}: the interpreter failed ({last})", "give a working Python 3 interpreter")
    raw = json.loads(done.stdout)
    dists = {}
    for upstream in upstreams:
        entry = raw["dists"].get(dist_name(upstream))
        if entry is None:
            continue
        location = Path(entry["location"])
        if entry["editable"] and (entry.get("url") or "").startswith("file://"):
            location = Path(entry["url"][len("file://"):])
        dists[upstream.name] = InstalledDist(upstream, dist_name(upstream), entry["version"], location,
                                             Path(entry["record"]) if entry["record"] else None, entry["editable"])
    return Environment(python, Path(raw["prefix"]), dists)


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
        raise StateError(f"{environment.python}: " + "; ".join(problems),
                         "install the pinned versions, or restrict the run with --upstream NAME")
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
    def description(self) -> str:
        how = "editable install at" if self.dist.editable else "installed in"
        return f"{self.dist.name} {self.dist.version} {how} {self.dist.location}"
