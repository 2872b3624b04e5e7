"""Target manifests (``manifests/<target>.toml``), validated on load.

A bad manifest fails here, before anything reaches git or the disk, with a
message naming the file, the key path and the expected form.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Literal, overload

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from patchmgr.model.errors import ManifestError
from patchmgr.model.input_files import not_readable, read_toml
from patchmgr.model.urls import (
    FULL_SHA,
    NEVER_IN_A_REF,
    control_character,
    mask_url,
    ref_problem,
    requirement_problem,
    url_problem,
)

# \Z, not $: `$` also matches before a final newline, and every caller uses .match
NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*\Z")
PATCH_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*\Z")
# what `patchmgr lint` holds the target's patches to (model/lint.py): patchmgr's own rules, or DEP-3's
LINT_PROFILE_KEY = "lint-profile"
LINT_PROFILES = ("strict", "dep3")
_TARGET_KEYS = {"name", "description", LINT_PROFILE_KEY}
_UPSTREAM_KEYS = {
    "git",
    "mirrors",
    "commit",
    "version",
    "pypi",
    "package-root",
    "patches",
    "smoke-requirements",
    "smoke-python",
    "smoke-env",
    "track",
    "branch",
    "tag-pattern",
}
_SMOKE_ENV_KEYS = {"versions", "requirements"}


@dataclass(frozen=True)
class SmokeEnvRule:
    """One ``[[upstreams.<name>.smoke-env]]`` table: the smoke requirements for the versions in ``versions``."""

    versions: str  # PEP 440 specifier, matched against the release version of the code under test
    requirements: tuple[str, ...]


class Track(StrEnum):
    """How an upstream releases, and so which ref is its next one (``matrix``, ``status --newest-release``)."""

    RELEASES = "releases"  # final release tags (v0.5.1), the default
    PRERELEASES = "prereleases"  # release candidates too (v0.5.1rc1)
    BRANCH = "branch"  # no tags to wait for: the tip of its branch


_SHOWN = {"\\": "a backslash", " ": "a space"}


def tag_pattern_problem(pattern: str) -> str | None:
    """Why the glob ``pattern`` can match no tag name (one git would take), or None: a regular expression written
    where a glob goes (``^v\\d+$``) holds characters no tag holds (git's, less the glob's own ``*?[``)."""
    for char in NEVER_IN_A_REF:
        if char in pattern and char not in "*?[":
            return f"it holds {_SHOWN.get(char, char)}, which no tag name holds (git check-ref-format)"
    if any(ord(char) < 32 or ord(char) == 127 for char in pattern):
        return "it holds a control character, which no tag name holds (git check-ref-format)"
    if pattern.endswith("$"):
        return "it ends in $, which ends a regular expression, not a tag name"
    return None


@dataclass(frozen=True)
class Upstream:
    name: str
    git: str | None
    mirrors: tuple[str, ...]
    commit: str
    version: str | None
    pypi: str | None
    package_root: str
    patch_ids: tuple[str, ...]
    # PEP 508 requirements of this upstream's smoke tests: `smoke` runs them in an environment of their own
    smoke_requirements: tuple[str, ...] = ()
    # PEP 440 specifier of the Python its smoke tests run on; None: the upstream's own Requires-Python
    smoke_python: str | None = None
    # `[[upstreams.<name>.smoke-env]]`: smoke requirements per version range of the code under test, in order
    smoke_envs: tuple[SmokeEnvRule, ...] = ()
    # how it releases: its next ref is its newest release tag, or release candidate, or its branch's tip
    track: Track = Track.RELEASES
    branch: str | None = None  # the branch whose tip is its tip column (None: the branch its HEAD names)
    # a glob: only tags it matches are its releases, the text before its first * the prefix of their version
    # ("core_v*": core_v0.19.0 is 0.19.0; model/tag_scheme.py); None: every tag that names a version
    tag_pattern: str | None = None

    @property
    def urls(self) -> tuple[str, ...]:
        return ((self.git,) if self.git else ()) + self.mirrors

    def smoke_env_rule(self, version: str | None) -> SmokeEnvRule | None:
        """The first ``smoke-env`` whose ``versions`` hold release ``version`` (None: no version, none matched)."""
        try:
            parsed = Version(version) if version is not None else None
        except InvalidVersion:
            parsed = None
        if parsed is None:
            return None
        return next((rule for rule in self.smoke_envs if SpecifierSet(rule.versions).contains(parsed, True)), None)

    def smoke_requirements_for(self, version: str | None) -> tuple[str, ...]:
        """The smoke requirements for the code at release ``version``: its ``smoke-env``'s, else the plain ones."""
        rule = self.smoke_env_rule(version)
        return rule.requirements if rule is not None else self.smoke_requirements


@dataclass(frozen=True)
class Target:
    name: str
    description: str
    path: Path
    upstreams: tuple[Upstream, ...]
    lint_profile: str = LINT_PROFILES[0]

    def upstream(self, name: str) -> Upstream:
        for upstream in self.upstreams:
            if upstream.name == name:
                return upstream
        known = ", ".join(u.name for u in self.upstreams) or "none"
        raise ManifestError(f"target {self.name} has no upstream {name!r} (it has: {known})", f"see {self.path}")


def load_target(path: Path, patches_dir: Path) -> Target:
    _, raw = read_toml(
        path,
        str(path),
        "fix or remove that manifest (a UTF-8 TOML file; README.md shows its form)",
        error=ManifestError,
    )
    return validate_target(raw, path, patches_dir)


def validate_target(raw: dict, path: Path, patches_dir: Path) -> Target:
    """The manifest's parsed TOML ``raw`` checked and read into a Target; ManifestError names what is wrong."""
    return _Validator(path, patches_dir).target(raw)


class _Validator:
    def __init__(self, path: Path, patches_dir: Path) -> None:
        self.path = path
        self.patches_dir = patches_dir

    def fail(self, key: str, problem: str, hint: str) -> ManifestError:
        return ManifestError(f"{self.path}: at key {key}: {problem}", hint)

    def target(self, raw: dict) -> Target:
        self._only(raw, {"target", "upstreams"}, "")
        section = raw.get("target")
        if not isinstance(section, dict):
            raise self.fail("target", "missing [target] table", 'add [target] with name = "<target>"')
        self._only(section, _TARGET_KEYS, "target.")
        name = self._string(section, "name", "target.name", required=True)
        if name != self.path.stem:
            raise self.fail(
                "target.name",
                f"{name!r} differs from the file name {self.path.stem!r}",
                f'set name = "{self.path.stem}" or rename the file',
            )
        description = self._string(section, "description", "target.description", free_text=True) or ""
        profile = self._string(section, LINT_PROFILE_KEY, f"target.{LINT_PROFILE_KEY}") or LINT_PROFILES[0]
        if profile not in LINT_PROFILES:
            said, hint = f"{profile!r} is not one of: {', '.join(LINT_PROFILES)}", 'write "dep3" (DEP-3) or "strict"'
            raise self.fail(f"target.{LINT_PROFILE_KEY}", said, hint)
        upstreams = raw.get("upstreams", {})
        if not isinstance(upstreams, dict):
            raise self.fail(
                "upstreams", "must be a table of [upstreams.<name>] tables", "see README.md for the manifest format"
            )
        parsed = tuple(self.upstream(n, u) for n, u in upstreams.items())
        return Target(name, description, self.path, parsed, profile)

    def upstream(self, name: str, raw: object) -> Upstream:
        key = f"upstreams.{name!r}" if control_character(name) else f"upstreams.{name}"
        self._one_line(name, key, "an upstream name")
        if not NAME.match(name):
            raise self.fail(key, "an upstream name is lower-case letters, digits, '.', '_' or '-'", "rename the table")
        if not isinstance(raw, dict):
            raise self.fail(key, "must be a table", f"write it as [{key}]")
        self._only(raw, _UPSTREAM_KEYS, key + ".")
        git = self._string(raw, "git", f"{key}.git")
        if git is not None:
            self._url(git, f"{key}.git")
        mirrors = tuple(self._strings(raw, "mirrors", f"{key}.mirrors"))
        for index, mirror in enumerate(mirrors):
            self._url(mirror, f"{key}.mirrors[{index}]")
        commit = self._string(raw, "commit", f"{key}.commit", required=True)
        if not FULL_SHA.match(commit):
            raise self.fail(
                f"{key}.commit",
                f"{commit!r} is not a full commit id (40 lower-case hex digits)",
                "pin the full id: `git rev-parse <tag>^{commit}` prints it",
            )
        version = self._pep440(raw, "version", f"{key}.version", Version, "version", 'write it like "0.4.2"')
        pypi = self._string(raw, "pypi", f"{key}.pypi")
        if pypi is not None and not re.match(r"^[A-Za-z0-9][A-Za-z0-9._-]*\Z", pypi):
            raise self.fail(f"{key}.pypi", f"{pypi!r} is not a PyPI project name", "check the name on PyPI")
        package_root = self._string(raw, "package-root", f"{key}.package-root") or ""
        if package_root.startswith("/") or ".." in Path(package_root).parts:
            raise self.fail(
                f"{key}.package-root",
                f"{package_root!r} leaves the repository",
                'give a folder inside the repository, like "src"',
            )
        if not git and not mirrors and not pypi:
            raise self.fail(key, "no source: needs `git`, `mirrors` or `pypi`", "add the upstream's git URL")
        patch_ids = self._patches(raw, name, key)
        requirements = self._requirements(raw, f"{key}.smoke-requirements")
        python = self._pep440(
            raw,
            "smoke-python",
            f"{key}.smoke-python",
            SpecifierSet,
            "version specifier",
            'write a range like ">=3.12,<3.13" (leave the key out to use the upstream\'s Requires-Python)',
        )
        root = package_root.strip("/")
        envs = self._smoke_envs(raw, f"{key}.smoke-env")
        track, branch, tag_pattern = self._tracking(raw, key)
        return Upstream(
            name,
            git,
            mirrors,
            commit,
            version,
            pypi,
            root,
            patch_ids,
            requirements,
            python,
            smoke_envs=envs,
            track=track,
            branch=branch,
            tag_pattern=tag_pattern,
        )

    def _smoke_envs(self, raw: dict, key: str) -> tuple[SmokeEnvRule, ...]:
        """``[[upstreams.<name>.smoke-env]]`` tables: ``versions`` (a specifier) and ``requirements`` each."""
        tables = raw.get("smoke-env", [])
        form = f'write [[{key}]] tables, each with versions = ">=0.8" and requirements = ["transformers==5.3.0"]'
        if not isinstance(tables, list) or not all(isinstance(table, dict) for table in tables):
            raise self.fail(key, "must be a list of tables (one [[...smoke-env]] per version range)", form)
        rules = []
        for index, table in enumerate(tables):
            where = f"{key}[{index}]"
            self._only(table, _SMOKE_ENV_KEYS, where + ".")
            if "requirements" not in table:
                raise self.fail(f"{where}.requirements", "missing", form)
            versions = self._pep440(table, "versions", f"{where}.versions", SpecifierSet, "version specifier", form)
            if versions is None:
                raise self.fail(f"{where}.versions", "missing", form)
            rules.append(SmokeEnvRule(versions, self._requirements(table, f"{where}.requirements", "requirements")))
        return tuple(rules)

    def _tracking(self, raw: dict, key: str) -> tuple[Track, str | None, str | None]:
        """``track``, ``branch`` and ``tag-pattern``: how the upstream releases."""
        value = self._string(raw, "track", f"{key}.track") or Track.RELEASES.value
        if value not in {t.value for t in Track}:
            raise self.fail(
                f"{key}.track",
                f"{value!r} is not one of {', '.join(t.value for t in Track)}",
                'track = "releases" (final release tags), "prereleases" (release candidates too) or "branch" '
                '(the tip of its branch; name it with branch = "...")',
            )
        branch = self._string(raw, "branch", f"{key}.branch")
        problem = ref_problem(branch) if branch is not None else None
        if problem:
            raise self.fail(f"{key}.branch", f"{branch!r} is not a branch name: {problem}", 'write branch = "main"')
        pattern = self._string(raw, "tag-pattern", f"{key}.tag-pattern")
        problem = tag_pattern_problem(pattern) if pattern is not None else None
        if problem:
            raise self.fail(
                f"{key}.tag-pattern",
                f"'{pattern}' can match no tag: {problem}",  # as a TOML literal string: a backslash shown once
                'tag-pattern is a glob (* any text, ? one character, [...] one of), not a regular expression: "v*", '
                '"v2.*", "core_v*", "release-*"',
            )
        return Track(value), branch, pattern

    def _pep440(
        self, raw: dict, name: str, key: str, parse: Callable[[str], object], what: str, hint: str
    ) -> str | None:
        """The string at ``name``, checked by ``parse`` (packaging's Version or SpecifierSet)."""
        value = self._string(raw, name, key)
        if value is not None:
            try:
                parse(value)
            except (InvalidVersion, InvalidSpecifier) as exc:
                raise self.fail(key, f"{value!r} is not a PEP 440 {what}", hint) from exc
        return value

    def _requirements(self, raw: dict, key: str, name: str = "smoke-requirements") -> tuple[str, ...]:
        values = self._strings(raw, name, key)
        for index, value in enumerate(values):
            problem = requirement_problem(value)
            if problem:
                raise self.fail(
                    f"{key}[{index}]",
                    f"{mask_url(value)!r} {problem}",
                    'write a requirement like "transformers==4.57.1", or "name @ https://..." for a '
                    "published archive or git+https:// repository",
                )
        return tuple(v.strip() for v in values)

    def _patches(self, raw: dict, upstream: str, key: str) -> tuple[str, ...]:
        ids = self._strings(raw, "patches", f"{key}.patches")
        seen: set[str] = set()
        for index, patch_id in enumerate(ids):
            where = f"{key}.patches[{index}]"
            if not PATCH_ID.match(patch_id):
                raise self.fail(
                    where,
                    f"{patch_id!r} is not a patch id (letters, digits, '.', '_', '+', '-')",
                    "name the patch file without its .patch suffix",
                )
            if patch_id in seen:
                raise self.fail(where, f"duplicate patch id {patch_id!r}", "list each patch once")
            seen.add(patch_id)
            file = self.patches_dir / upstream / f"{patch_id}.patch"
            problem = not_readable(file)
            if problem is not None:
                raise self.fail(
                    where, f"patch file {file} {problem}", f"create it, or remove {patch_id!r} from the list"
                )
        return tuple(ids)

    def _only(self, table: dict, allowed: set[str], prefix: str) -> None:
        for name in table:
            if name not in allowed:
                shown = repr(name) if control_character(name) else name  # a key printed raw could forge a line
                raise self.fail(prefix + shown, "unknown key", "allowed here: " + ", ".join(sorted(allowed)))

    def _one_line(self, value: str, key: str, what: str = "a path, id, ref or URL") -> None:
        """Every value that names a path, id, ref or URL is one line of printable text: a control character
        (a newline above all) would forge a second line wherever it is printed or read line by line."""
        problem = control_character(value)
        if problem:
            raise self.fail(
                key,
                f"{mask_url(value)!r} {problem}",
                f"{what} is one line of printable text: remove the character (often a newline "
                "or tab inside the quotes)",
            )

    @overload
    def _string(self, table: dict, name: str, key: str, required: Literal[True], free_text: bool = False) -> str: ...

    @overload
    def _string(
        self, table: dict, name: str, key: str, required: bool = False, free_text: bool = False
    ) -> str | None: ...

    def _string(self, table: dict, name: str, key: str, required: bool = False, free_text: bool = False) -> str | None:
        if name not in table:
            if required:
                raise self.fail(key, "missing", f'add {name} = "..."')
            return None
        value = table[name]
        if not isinstance(value, str) or not value.strip():
            raise self.fail(key, f"must be a non-empty string, not {value!r}", f'write {name} = "..."')
        if not free_text:
            self._one_line(value, key)
        return value.strip()

    def _strings(self, table: dict, name: str, key: str) -> list[str]:
        value = table.get(name, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(key, "must be a list of strings", f'write {name} = ["...", "..."]')
        for index, item in enumerate(value):
            self._one_line(item, f"{key}[{index}]")
        return value

    def _url(self, url: str, key: str) -> None:
        problem = url_problem(url)
        if problem:
            raise self.fail(key, problem, "use an https:// URL, or pass a local path with --source")
