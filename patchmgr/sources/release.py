"""Published releases on PyPI as an upstream source, for when git is out of reach.

A release is downloaded once (its sha256 checked against PyPI's), unpacked into
the cache, and read through the manifest's ``package-root``: Megatron-Bridge's
git paths start with ``src/``, its wheel's do not. An sdist holds the git
layout under one top folder, so its paths map directly.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from patchmgr.io.disk import os_problem
from patchmgr.io.git_objects import LinkBlob
from patchmgr.model.errors import SourceError, UsageError
from patchmgr.model.source_identity import SourceIdentity, SourceKind
from patchmgr.model.urls import authority_problem, control_character, mask_url

DEFAULT_INDEX = "https://pypi.org/simple"
TIMEOUT_S = 30
_SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"


ENVIRONMENT = "PATCHMGR_INDEX_URL"


def index_url() -> str:
    """The package index (PEP 691 JSON simple API); PATCHMGR_INDEX_URL points at a mirror, perhaps with
    credentials (``https://user:token@host/simple``: patchmgr sends them to that host only, and shows them
    nowhere). One that is no URL of an index is bad input: one error, its password masked (exit 2)."""
    given = os.environ.get(ENVIRONMENT, DEFAULT_INDEX)
    problem = _index_problem(given)
    if problem is not None:
        raise UsageError(
            f"{ENVIRONMENT} {mask_url(given)!r} {problem}",
            f"set {ENVIRONMENT} to the simple API of a package index (https://host/simple), or unset it for PyPI",
        )
    return given.rstrip("/")


def _index_problem(url: str) -> str | None:
    """Why ``url`` is no URL of a package index that urllib can ask (http, https, or file for a folder), or None."""
    problem = control_character(url) or authority_problem(url)
    if problem:
        return problem
    scheme, _, rest = url.partition("://")
    if not rest or scheme.lower() not in ("http", "https", "file"):
        return "is not an http://, https:// or file:// URL"
    host = re.split(r"[/?#]", rest, maxsplit=1)[0].rpartition("@")[2]
    if scheme.lower() != "file" and (not host or host.startswith(":")):
        return "names no host"
    return None


def _open(url: str, accept: str | None = None) -> Any:  # urllib's response
    """``url`` opened, without its user and password: those of the index URL are sent as an ``Authorization``
    header, to the index's own host only (scheme, host and port), and never to a host it redirects to. urllib
    reads no credentials in a URL, and one in the URL would be shown by every error that names it."""
    import base64
    import urllib.parse
    import urllib.request

    bare = _without_userinfo(url)
    request = urllib.request.Request(bare, headers={"Accept": accept} if accept else {})
    index = urllib.parse.urlsplit(index_url())
    target = urllib.parse.urlsplit(bare)
    same_host = (target.scheme, target.hostname, target.port) == (index.scheme, index.hostname, index.port)
    if same_host and (index.username is not None or index.password is not None):
        user, password = (urllib.parse.unquote(part or "") for part in (index.username, index.password))
        token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
        request.add_unredirected_header("Authorization", f"Basic {token}")
    return urllib.request.urlopen(request, timeout=TIMEOUT_S)


def _without_userinfo(url: str) -> str:
    """``url`` without the ``user:password@`` of its authority (everything else as it is: a signed query stays)."""
    import urllib.parse

    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def file_version(filename: str) -> Version | None:
    # packaging.utils loads the wheel-tag machinery: only choosing a download needs it, not a CLI start
    from packaging.utils import InvalidSdistFilename, InvalidWheelFilename, parse_sdist_filename, parse_wheel_filename

    try:
        if filename.endswith(".whl"):
            return parse_wheel_filename(filename)[1]
        return parse_sdist_filename(filename)[1]
    except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
        return None


class FileKind(StrEnum):
    WHEEL = "wheel"  # the installable files: what git holds under the upstream's package-root
    SDIST = "sdist"  # the source archive: its top folder laid out as the upstream's git tree


@dataclass(frozen=True)
class ReleaseFile:
    filename: str
    url: str
    sha256: str
    kind: FileKind


@dataclass
class ReleaseSource:
    project: str
    version: str
    file: ReleaseFile
    tree: Path  # the unpacked release (the sdist's top folder, or the wheel's root)
    package_root: str

    kind = "release"
    commit = None
    fallback_from: str | None = None  # why git could not serve, when the release stands in for it

    def release_path(self, path: str) -> str | None:
        """Where a git-layout ``path`` lives in this release, or None when releases do not ship it."""
        if self.file.kind is FileKind.SDIST or not self.package_root:
            return path
        prefix = self.package_root + "/"
        return path[len(prefix) :] if path.startswith(prefix) else None

    def read(self, path: str) -> bytes | None:
        mapped = self.release_path(path)
        if mapped is None:
            return None
        return read_tree_file(self.tree / mapped)

    def read_blob(self, sha: str) -> bytes | None:
        return None  # a release has no history, so no 3-way merge from it

    def is_folder(self, path: str) -> bool:
        """Whether a git-layout ``path`` is a folder in this release (a link to one is a link, not a folder)."""
        mapped = self.release_path(path)
        if mapped is None:
            return False
        file = self.tree / mapped
        return file.is_dir() and not file.is_symlink()

    @property
    def identity(self) -> SourceIdentity:
        return SourceIdentity(SourceKind.RELEASE, f"{self.project} {self.version} (PyPI {self.file.filename})")

    @property
    def description(self) -> str:
        return self.identity.description


def read_tree_file(file: Path) -> bytes | None:
    """A file of an unpacked tree as the engine reads it: a link as a ``LinkBlob`` (so the
    engine refuses to write through it), a folder or an absent path as None."""
    if file.is_symlink():
        return LinkBlob(os.readlink(file).encode("utf-8", "surrogateescape"))
    return file.read_bytes() if file.is_file() else None


class ReleaseNotFound(SourceError):
    """The package index was reached and lists no file at all of that version of the project."""


def choose_file(files: list[dict], project: str, version: str) -> ReleaseFile:
    """A pure wheel first (smallest to read), then the sdist, then any wheel: all carry the .py files."""

    def as_release(entry: dict) -> ReleaseFile:
        kind = FileKind.WHEEL if entry["filename"].endswith(".whl") else FileKind.SDIST
        return ReleaseFile(entry["filename"], entry["url"], entry["hashes"]["sha256"], kind)

    wanted = Version(version)
    usable = [
        f
        for f in files
        if f["filename"].endswith((".whl", ".tar.gz", ".zip"))
        and not f.get("yanked")
        and file_version(f["filename"]) == wanted
        and f.get("hashes", {}).get("sha256")
    ]
    pure = [f for f in usable if f["filename"].endswith("-none-any.whl")]
    sdists = [f for f in usable if not f["filename"].endswith(".whl")]
    wheels = sorted((f for f in usable if f["filename"].endswith(".whl")), key=lambda f: f.get("size", 0))
    for group in (pure, sdists, wheels):
        if group:
            return as_release(group[0])
    if not any(file_version(f["filename"]) == wanted for f in files if isinstance(f.get("filename"), str)):
        raise ReleaseNotFound(
            f"the package index has no release {version} of {project}",
            "check `version` in the manifest (or the version given to --against)",
        )
    raise SourceError(
        f"the package index has no wheel or sdist of {project} {version}",
        "check `version` in the manifest (or the version given to --against)",
    )


class ReleaseCache:
    def __init__(self, cache_dir: Path) -> None:
        self.root = cache_dir / "releases"

    def open(self, project: str, version: str, package_root: str) -> ReleaseSource:
        folder = self.root / project.lower() / version
        meta = folder / "release.json"
        tree = folder / "tree"
        file = _read_meta(meta)
        if file is None:
            file = choose_file(self._files(project), project, version)
        try:
            if not tree.is_dir():
                self._download_and_unpack(file, folder, tree)
            if _read_meta(meta) != file:
                meta.write_text(json.dumps(file.__dict__))
        except OSError as exc:  # the network's errors are SourceErrors by now: this is the cache's disk
            from patchmgr.sources.cache_errors import CacheError, disk_hint  # store imports this module

            problem = os_problem(exc, folder)
            raise CacheError(f"cannot write the release cache {folder}: {problem}", disk_hint(problem)) from None
        return ReleaseSource(project, version, file, _top(tree, file), package_root)

    def _files(self, project: str) -> list[dict]:
        import http.client  # the network modules cost a noticeable share of a CLI start; only downloads need them
        import urllib.error
        import urllib.parse

        from packaging.utils import canonicalize_name

        url = f"{_without_userinfo(index_url())}/{canonicalize_name(project)}/"  # the credentials go in _open
        try:
            with _open(url, _SIMPLE_JSON) as response:
                files = json.load(response)["files"]
            # the index's links, made absolute (a link the index writes may be no URL urllib can read)
            return [dict(f, url=_without_userinfo(urllib.parse.urljoin(url, f["url"]))) for f in files]
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                raise SourceError(
                    f"the package index has no project {project}", "check `pypi` in the manifest"
                ) from exc
            hint = f"check the user and token in {ENVIRONMENT}" if exc.code in (401, 403) else "try again later"
            raise SourceError(f"the package index answered {exc.code} for {url}", hint) from exc
        except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError, KeyError, TypeError) as exc:
            raise SourceError(f"cannot read {url}: {exc}", "check the network, or set PATCHMGR_INDEX_URL") from exc

    def _download_and_unpack(self, file: ReleaseFile, folder: Path, tree: Path) -> None:
        import hashlib
        import http.client
        import urllib.error

        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=folder, prefix=".unpack-") as tmp:
            archive = Path(tmp) / file.filename
            digest = hashlib.sha256()
            try:
                response = _open(file.url)
            except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as exc:
                raise SourceError(f"cannot download {file.url}: {exc}", "check the network") from exc
            with response, open(archive, "wb") as out:  # an error writing is the disk's, not the network's
                while True:
                    try:
                        chunk = response.read(1 << 20)
                    except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
                        raise SourceError(f"cannot download {file.url}: {exc}", "check the network") from exc
                    if not chunk:
                        break
                    digest.update(chunk)
                    out.write(chunk)
            if digest.hexdigest() != file.sha256:
                raise SourceError(
                    f"{file.filename}: sha256 {digest.hexdigest()} differs from PyPI's {file.sha256}",
                    "the download was damaged or tampered with; try again",
                )
            unpacked = Path(tmp) / "tree"
            if file.kind is FileKind.WHEEL or file.filename.endswith(".zip"):
                _unzip(archive, unpacked)
            else:
                _untar(archive, unpacked)
            os.replace(unpacked, tree)


def _read_meta(meta: Path) -> ReleaseFile | None:
    """The release file recorded when the release was unpacked; None when absent or damaged."""
    try:
        recorded = json.loads(meta.read_text())
        return ReleaseFile(**{**recorded, "kind": FileKind(recorded["kind"])})
    except (OSError, ValueError, TypeError, KeyError):
        return None


def _untar(archive: Path, into: Path) -> None:
    """An sdist unpacked with nothing outside ``into``: Python's "data" filter where it exists (3.11.4 on);
    before that (Debian bookworm's 3.11.2) the same refusals by hand: absolute paths, ``..``, links, devices."""
    import tarfile

    with tarfile.open(archive) as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(into, filter="data")
            return
        for member in tar.getmembers():
            name = Path(member.name)
            if name.is_absolute() or ".." in name.parts or not (member.isfile() or member.isdir()):
                raise SourceError(
                    f"{archive.name}: member {member.name!r} is not a plain file or folder inside the archive",
                    "the release file is unsafe to unpack; report it upstream",
                )
        tar.extractall(into)


def _unzip(archive: Path, into: Path) -> None:
    import zipfile

    with zipfile.ZipFile(archive) as zipped:
        for member in zipped.infolist():
            name = Path(member.filename)
            if name.is_absolute() or ".." in name.parts:
                raise SourceError(
                    f"{archive.name}: member {member.filename!r} leaves the archive",
                    "this release is malformed; do not use it",
                )
        zipped.extractall(into)


def _top(tree: Path, file: ReleaseFile) -> Path:
    """An sdist unpacks into one folder ``<name>-<version>/``; the git layout is inside it."""
    if file.kind is FileKind.SDIST:
        entries = [p for p in tree.iterdir()]
        if len(entries) == 1 and entries[0].is_dir():
            return entries[0]
    return tree
