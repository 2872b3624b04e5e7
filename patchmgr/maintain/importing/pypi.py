"""The release an imported pin is: ``version`` and ``pypi`` for the manifest, so the release fallback works.

When the pin is a release tag's commit (``v0.4.2``, ``2.1.0``), the published release of that version is the
tag's code: the manifest gets ``version`` (the tag's, or the version folder's) and ``pypi``, the project name
the upstream's own packaging declares at the pin (``pyproject.toml``'s ``[project] name``, else ``setup.py``'s
``name=``, a literal or a name bound to one in that file), read from git at the pin. Where no name is found
the version is still written and a note says what to add.

Any other pin of a package with a name: the versions it may be (the version its packaging declares, then the
highest release tag in its history) are looked up on the package index, and the first whose release holds
every file the patch changes byte for byte as the pin does is written. Best effort: an index out of reach, a
project or version it does not list, or files that differ is a note, and no version is written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from packaging.utils import canonicalize_name

from patchmgr.history.releases import final_version
from patchmgr.io.git import GitRepo
from patchmgr.maintain.importing.tags import Tags
from patchmgr.model.errors import PatchmgrError
from patchmgr.model.input_files import TomlProblem, parse_toml
from patchmgr.sources.release import ReleaseCache

_PROJECT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*\Z")
_SETUP_NAME = re.compile(r"""\bname\s*=\s*(?:(["'])([^"'\n]+)\1|([A-Za-z_][A-Za-z0-9_]*))""")
_SETUP_VERSION = re.compile(r"""\bversion\s*=\s*(?:(["'])([^"'\n]+)\1|([A-Za-z_][A-Za-z0-9_]*))""")


@dataclass(frozen=True)
class Release:
    version: str | None = None
    pypi: str | None = None
    notes: list[str] = field(default_factory=list)


def release_of_pin(
    repo: GitRepo, pin: str, tags: Tags, folder_version: str | None, releases: ReleaseCache, paths: list[str]
) -> Release:
    """The release the pin is: named by a release tag at the pin, or a published release holding ``paths`` as
    the pin does; else the version folder's version alone, as before."""
    tag = next((name for name, commit in tags.held() if commit == pin and final_version(name) is not None), None)
    if tag is None:
        return _same_files(repo, pin, tags, folder_version, releases, paths)
    version = folder_version or str(final_version(tag))
    project = package_name(repo, pin)
    if project is None:
        return Release(
            version,
            None,
            [
                f"the pin is release tag {tag}: version {version} written, but no project name was found in "
                "pyproject.toml or setup.py there; add `pypi = NAME` for the release fallback"
            ],
        )
    return Release(version, project, [f"the pin is release tag {tag}: version {version} and pypi {project} written"])


def _same_files(
    repo: GitRepo, pin: str, tags: Tags, folder_version: str | None, releases: ReleaseCache, paths: list[str]
) -> Release:
    project = package_name(repo, pin)
    if folder_version or project is None:
        return Release(folder_version)
    tags.every()  # the tags' commits, to know which are in the pin's history
    merged = repo.run("tag", "--merged", pin, "--list", "--sort=-v:refname").split("\n")
    candidates = [_declared(repo, pin, "version"), *(str(final_version(t)) for t in merged if final_version(t))]
    tried = []
    for version in dict.fromkeys(v for v in candidates if v):
        try:
            release = releases.open(project, version, "")
            differ = [p for p in paths if release.read(p) != repo.read_path(pin, p)]
        except PatchmgrError as exc:
            tried.append(f"{version}: {exc.message}")
            continue
        if not differ:
            return Release(
                version,
                project,
                [
                    f"PyPI release {project} {version} holds the patch's files as the pin does: "
                    f"version {version} and pypi {project} written"
                ],
            )
        tried.append(f"{version}: {', '.join(differ)} differ")
        break  # the highest candidate differs: older ones would differ more
    if not tried:
        return Release()
    return Release(
        notes=[
            f"no version written: no PyPI release of {project} holds the patch's files as the pin "
            f"does ({'; '.join(tried)})"
        ]
    )


def package_name(repo: GitRepo, commit: str) -> str | None:
    """The distribution name the upstream's packaging declares at ``commit``, canonical (PyPI's form)."""
    name = _declared(repo, commit, "name")
    return canonicalize_name(name) if name and _PROJECT.match(name) else None


def _declared(repo: GitRepo, commit: str, key: str) -> str | None:
    """``name`` or ``version`` as ``pyproject.toml`` or ``setup.py`` at ``commit`` declares it (a literal only)."""
    try:
        pyproject = repo.read_path(commit, "pyproject.toml")
        setup = repo.read_path(commit, "setup.py")
    except PatchmgrError:
        return None
    value = _from_pyproject(pyproject, key) if pyproject else None
    if value is None and setup:
        value = _from_setup(setup.decode("utf-8", "replace"), _SETUP_NAME if key == "name" else _SETUP_VERSION)
    return value


def _from_pyproject(data: bytes, key: str) -> str | None:
    try:
        project = parse_toml(data.decode("utf-8")).get("project", {})
    except (UnicodeDecodeError, TomlProblem):  # an upstream's file nested too deeply too
        return None
    value = project.get(key) if isinstance(project, dict) else None
    return value if isinstance(value, str) else None


def _from_setup(text: str, pattern: re.Pattern[str]) -> str | None:
    call = text.find("setup(")
    match = pattern.search(text, call if call >= 0 else 0)
    if match is None:
        return None
    if match.group(2):
        return match.group(2)
    bound = re.search(rf"^{re.escape(match.group(3))}\s*=\s*([\"'])([^\"'\n]+)\1", text, re.M)
    return bound.group(2) if bound else None
