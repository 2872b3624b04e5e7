"""Start a project (``patchmgr init``): the manifest of one target with one upstream, and the files around it.

The pin is resolved to a full commit through the cache (the ``--source`` location first, then the URL), and a
release tag (``v0.4.2``) fills ``version``. Every file is computed and the manifest validated first; a file that
exists with other bytes refuses the whole start (one error naming it, nothing written), one that already holds
exactly those bytes is kept as it is (a second target started in the same project). Then everything is written
in one journaled transaction (``project_files.write_files``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import tomlkit

from patchmgr.maintain import manifest_edit
from patchmgr.maintain.start_files import PRE_COMMIT, conftest_text
from patchmgr.model.errors import UsageError
from patchmgr.model.input_files import read_input
from patchmgr.model.manifest import NAME, Upstream
from patchmgr.model.urls import as_local_path, control_character, mask_url, url_problem, without_credentials
from patchmgr.sources.refs import validate_ref
from patchmgr.sources.settings import PROJECT_FILE
from patchmgr.sources.upstream import Sources, release_version
from patchmgr.targets.project_files import STATE, write_files

PRE_COMMIT_FILE = ".pre-commit-config.yaml"
KEEP_FILE = ".gitkeep"  # git keeps no empty folder: patches/<upstream>/ holds this until its first patch


@dataclass(frozen=True)
class StartRequest:
    """What ``patchmgr init`` is asked to start: a target, its one upstream and the manifest's fields for it."""

    target: str
    git: str  # the upstream's URL (a local clone is a --source, not the manifest's git)
    pin: str  # a tag, branch or commit: resolved to the full commit
    upstream: str | None = None  # None: the URL's last part (upstream_name)
    version: str | None = None  # None: the pin's release tag, if it names one
    pypi: str | None = None
    package_root: str | None = None
    description: str | None = None


@dataclass
class StartOutcome:
    root: Path
    target: str
    upstream: str
    git: str
    commit: str
    ref: str
    version: str | None
    written: list[Path] = field(default_factory=list)
    kept: list[Path] = field(default_factory=list)  # already there with exactly these bytes
    source: str = ""  # where the pin was resolved: git URL_OR_PATH, or the cache
    notes: list[str] = field(default_factory=list)


def upstream_name(git: str, given: str | None) -> str:
    """``given`` (``--upstream``), else the URL's last part less ``.git``, lower-cased: a valid upstream name."""
    if given is not None:
        if not NAME.match(given):
            raise UsageError(
                f"--upstream {given!r} cannot name an upstream", "use lower-case letters, digits, '.', '_', '-'"
            )
        return given
    path = urlsplit(git).path if "://" in git else git.rpartition(":")[2]
    last = path.rstrip("/").rpartition("/")[2].removesuffix(".git").lower()
    if not NAME.match(last):
        raise UsageError(
            f"cannot name the upstream after {mask_url(git)!r}", "name it with --upstream NAME (e.g. --upstream mylib)"
        )
    return last


def check_request(root: Path, request: StartRequest) -> str:
    """Every value of ``request`` checked before anything is fetched (the manifest made with a stand-in commit
    validated); the upstream's name."""
    if not NAME.match(request.target):
        raise UsageError(
            f"--target {request.target!r} cannot name a manifest", "use lower-case letters, digits, '.', '_', '-'"
        )
    if as_local_path(request.git) is not None or url_problem(request.git):
        problem = url_problem(request.git) or f"{mask_url(request.git)!r} is a local path, not a URL"
        raise UsageError(
            f"--git: {problem}",
            "give the upstream's https://, ssh:// or git:// URL (the manifest is shared); fetch from a local "
            "clone with --source NAME=PATH",
        )
    validate_ref(request.pin)
    control = control_character(request.description or "")
    if control is not None:  # a line break would start a line of its own where `patchmgr targets` shows it
        raise UsageError(
            f"--description {request.description!r} {control}; it is one line", "write the description on one line"
        )
    manifest_edit.check_version(request.version, request.pin)
    name = upstream_name(request.git, request.upstream)
    manifest = root / "manifests" / f"{request.target}.toml"
    text = manifest_text(request, name, without_credentials(request.git), "0" * 40, request.version)
    manifest_edit.check_manifest(manifest, text, root / "patches")
    return name


def plan_start(root: Path, request: StartRequest, name: str, sources: Sources) -> tuple[StartOutcome, dict]:
    """The project files of a new target (path -> bytes), computed and checked; nothing is written. Every file
    is checked before the pin is fetched, the manifest again once it is made."""
    git = without_credentials(request.git)
    manifest = root / "manifests" / f"{request.target}.toml"
    files = {
        root / "patches" / name / KEEP_FILE: b"",
        root / "tests" / "smoke" / name / "conftest.py": conftest_text(name).encode("utf-8"),
        root / PRE_COMMIT_FILE: PRE_COMMIT.encode("utf-8"),
    }
    gitignore = root / ".gitignore"
    if not os.path.lexists(gitignore):
        files[gitignore] = f"{STATE}/\n{PROJECT_FILE}\n".encode()  # this machine's --source paths stay out
    _new_files({manifest: None, **files})
    provisional = Upstream(name, git, (), "0" * 40, None, request.pypi, request.package_root or "", ())
    fetched = sources.resolve_ref(provisional, request.pin)
    commit = fetched.commit
    version = request.version or release_version(provisional, request.pin)
    outcome = StartOutcome(root, request.target, name, git, commit, request.pin, version)
    outcome.source = f"git {mask_url(fetched.url)}" if fetched.url else "the cache"
    if git != request.git:
        outcome.notes.append("the URL's credentials are left out of the manifest")
    if gitignore not in files and f"{STATE}/" not in _read(gitignore).decode("utf-8", "replace"):
        outcome.notes.append(f"add {STATE}/ to .gitignore: patchmgr keeps its lock and journal there")
    text = manifest_text(request, name, git, commit, version)
    manifest_edit.check_manifest(manifest, text, root / "patches")
    files[manifest] = text.encode("utf-8")
    outcome.kept = _new_files(files)
    return outcome, {path: data for path, data in files.items() if path not in outcome.kept}


def _new_files(files: Mapping[Path, bytes | None]) -> list[Path]:
    """The files of ``files`` that already hold exactly their bytes (None: any file there is in the way); any
    other file in the place of one refuses the start, naming it."""
    kept = []
    for path, data in files.items():
        if not os.path.lexists(path):
            continue
        if data is not None and path.is_file() and not path.is_symlink() and _read(path) == data:
            kept.append(path)
            continue
        raise UsageError(
            f"{path} exists; nothing was written",
            "patchmgr init never overwrites a file: move it away, or start the project in another folder (--root DIR)",
        )
    return kept


def write_start(outcome: StartOutcome, writes: dict[Path, bytes | None]) -> StartOutcome:
    """Write the planned files in one journaled transaction (each still absent, or none is written)."""
    write_files(outcome.root, writes, {path: None for path in writes})
    outcome.written = sorted(writes)
    return outcome


def manifest_text(request: StartRequest, name: str, git: str, commit: str, version: str | None) -> str:
    document = tomlkit.document()
    target = tomlkit.table()
    target["name"] = request.target
    if request.description:
        target["description"] = request.description
    document["target"] = target
    table = tomlkit.table()
    table["git"] = git
    table["commit"] = commit
    manifest_edit.set_comment(table["commit"], request.pin if request.pin != commit else None)
    if version:
        table["version"] = version
    if request.pypi:
        table["pypi"] = request.pypi
    if request.package_root:
        table["package-root"] = request.package_root
    table["patches"] = tomlkit.array()
    upstreams = tomlkit.table(is_super_table=True)
    upstreams[name] = table
    document["upstreams"] = upstreams
    return tomlkit.dumps(document)


def _read(path: Path) -> bytes:
    return read_input(path, str(path), "make it a regular file (or move it away), then run again")
