"""The release an imported pin is: ``version`` and ``pypi`` for the manifest, so the release fallback works.

When the pin is a release tag's commit (``v0.4.2``, ``2.1.0``), the published release of that version is the
tag's code: the manifest gets ``version`` (the tag's, or the version folder's) and ``pypi``, the project name
the upstream's own packaging declares at the pin (``pyproject.toml``'s ``[project] name``, else ``setup.py``'s
``name=``, a literal or a name bound to one in that file). Read from git at the pin, never from the network;
where no name is found the version is still written and a note says what to add.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field

from packaging.utils import canonicalize_name

from patchmgr.history.releases import final_version
from patchmgr.io.git import GitRepo
from patchmgr.model.errors import PatchmgrError

_PROJECT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*\Z")
_SETUP_NAME = re.compile(r"""\bname\s*=\s*(?:(["'])([^"'\n]+)\1|([A-Za-z_][A-Za-z0-9_]*))""")


@dataclass(frozen=True)
class Release:
    version: str | None = None
    pypi: str | None = None
    notes: list[str] = field(default_factory=list)


def release_of_pin(repo: GitRepo, pin: str, tags: list[tuple[str, str]], folder_version: str | None) -> Release:
    """The release the pin is, from the release tags (name, commit) that name it; the version folder's version
    when the pin is no release tag (as before, without ``pypi``: no tag says the release is this code)."""
    tag = next((name for name, commit in tags if commit == pin and final_version(name) is not None), None)
    if tag is None:
        return Release(folder_version)
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


def package_name(repo: GitRepo, commit: str) -> str | None:
    """The distribution name the upstream's packaging declares at ``commit``, canonical (PyPI's form)."""
    try:
        pyproject = repo.read_path(commit, "pyproject.toml")
        setup = repo.read_path(commit, "setup.py")
    except PatchmgrError:
        return None
    name = _from_pyproject(pyproject) if pyproject else None
    if name is None and setup:
        name = _from_setup(setup.decode("utf-8", "replace"))
    return canonicalize_name(name) if name and _PROJECT.match(name) else None


def _from_pyproject(data: bytes) -> str | None:
    try:
        project = tomllib.loads(data.decode("utf-8")).get("project", {})
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    name = project.get("name") if isinstance(project, dict) else None
    return name if isinstance(name, str) else None


def _from_setup(text: str) -> str | None:
    call = text.find("setup(")
    match = _SETUP_NAME.search(text, call if call >= 0 else 0)
    if match is None:
        return None
    if match.group(2):
        return match.group(2)
    bound = re.search(rf"^{re.escape(match.group(3))}\s*=\s*([\"'])([^\"'\n]+)\1", text, re.M)
    return bound.group(2) if bound else None
