"""Where an upstream's files come from, set once: ``--source NAME=LOCATION`` without typing it on every command.

A location for upstream NAME replaces the manifest's URLs (``git``, ``mirrors``). The first of these that names
NAME wins:

1. ``--source NAME=LOCATION`` on the command line;
2. the environment variable ``PATCHMGR_SOURCES``: space-separated ``NAME=LOCATION`` pairs;
3. the project's own file ``.patchmgr.local.toml`` at the project root (this machine's paths: never committed);
4. the user's file ``$XDG_CONFIG_HOME/patchmgr/config.toml`` (``~/.config/patchmgr/config.toml`` by default);
5. the manifest.

Both files hold one ``[sources]`` table: ``megatron-bridge = "~/src/Megatron-Bridge"``; a relative path in a
file is read from the file's folder. The environment and the user's file serve every project, so a name that
the project's manifests lack is ignored there: silently in the user's file (it names the upstreams of all your
projects), with a note where it is more likely a typo (``PATCHMGR_SOURCES``, the project's own file). A value
that is wrong is one error naming where it is written (the variable, or ``file:line``).
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path

from patchmgr.model.errors import PatchmgrError, UsageError
from patchmgr.model.input_files import read_input, read_toml
from patchmgr.model.manifest import NAME
from patchmgr.model.urls import as_local_path, mask_url, url_problem

FLAG = "--source"
ENVIRONMENT = "PATCHMGR_SOURCES"
PROJECT_FILE = ".patchmgr.local.toml"
MANIFEST = "manifest"
EXAMPLE = 'megatron-bridge = "~/src/Megatron-Bridge"'


@dataclass(frozen=True)
class SourceSetting:
    """Upstream ``name``'s location and where it was given."""

    name: str
    location: str  # a URL or a local path (a settings file's relative path made absolute from the file's folder)
    given_by: str  # FLAG (--source), ENVIRONMENT (PATCHMGR_SOURCES), a settings file's path, or MANIFEST (its url)


@dataclass(frozen=True)
class Configured:
    """The locations the environment and the files give, by upstream name (the winner of each), and the notes
    reading them left (a project file that ``.gitignore`` does not name)."""

    settings: dict[str, SourceSetting]
    project_file: Path
    notes: tuple[str, ...] = ()


def user_config_path(environ: Mapping[str, str]) -> Path:
    """The user's configuration file, where the XDG Base Directory specification puts it."""
    base = environ.get("XDG_CONFIG_HOME", "")
    folder = Path(base) if base and Path(base).is_absolute() else Path.home() / ".config"
    return folder / "patchmgr" / "config.toml"


def configured(project_root: Path, environ: Mapping[str, str]) -> Configured:
    """The locations that the environment and the files give (``--source`` is the caller's: it wins over these)."""
    project_file = project_root / PROJECT_FILE
    settings: dict[str, SourceSetting] = {}
    for layer in (read_file(user_config_path(environ)), read_file(project_file), from_environment(environ)):
        settings.update(layer)
    notes = (untracked_note(project_root),) if project_file.is_file() else ()
    return Configured(settings, project_file, tuple(note for note in notes if note))


def unknown_names(config: Configured, selected: Collection[str], known: Callable[[], set[str]]) -> list[str]:
    """A note for each upstream that ``PATCHMGR_SOURCES`` or the project's file names and no manifest of the
    project has (``known``: every manifest's upstream names, asked only when a name is not among ``selected``)."""
    noted = (ENVIRONMENT, str(config.project_file))
    candidates = [s for s in config.settings.values() if s.given_by in noted and s.name not in selected]
    names = known() if candidates else set()
    return [
        f"{s.given_by}: no manifest names upstream {s.name!r}; ignored (the upstreams: {', '.join(sorted(names))})"
        for s in candidates
        if s.name not in names
    ]


def from_environment(environ: Mapping[str, str]) -> dict[str, SourceSetting]:
    settings: dict[str, SourceSetting] = {}
    for item in environ.get(ENVIRONMENT, "").split():
        name, sep, location = item.partition("=")
        if not sep or not name or not location:
            raise UsageError(
                f"{ENVIRONMENT}: {mask_url(item)!r} is not NAME=LOCATION",
                f"set {ENVIRONMENT} to space-separated NAME=LOCATION pairs, e.g. "
                f"{ENVIRONMENT}='mindspeed=~/src/MindSpeed megatron-bridge=~/src/Megatron-Bridge'",
            )
        if name in settings:  # the last would win without a word: which one was meant is for the user to say
            raise UsageError(
                f"{ENVIRONMENT}: names {name} twice ({mask_url(settings[name].location)!r}, {mask_url(location)!r})",
                f"keep one {name}=LOCATION in {ENVIRONMENT}",
            )
        settings[name] = checked(name, location, ENVIRONMENT, f"fix it in {ENVIRONMENT}")
    return settings


def read_file(path: Path) -> dict[str, SourceSetting]:
    """The ``[sources]`` of the TOML file ``path`` (none when there is no such file)."""
    if not os.path.lexists(path):
        return {}
    hint = f'the file holds one [sources] table of NAME = "LOCATION" lines, e.g. {EXAMPLE}'
    text, raw = read_toml(path, str(path), hint, encoding="utf-8-sig")  # a byte-order mark is not TOML
    for key in raw:
        if key != "sources":
            raise UsageError(f"{path}:{line_of(text, key)}: unknown key {key!r}: only [sources] is read", hint)
    table = raw.get("sources", {})
    if not isinstance(table, dict):
        raise UsageError(f"{path}:{line_of(text, 'sources')}: sources must be a table", hint)
    settings: dict[str, SourceSetting] = {}
    for name, location in table.items():
        where = f"{path}:{line_of(text, name)}"
        if not isinstance(location, str) or not location:
            raise UsageError(f"{where}: the source of {name} must be a non-empty string", hint)
        local = as_local_path(location)
        if local is not None and not local.is_absolute():
            location = str(path.parent / location)  # a relative path is read from the file's folder
        settings[name] = checked(name, location, str(path), f"fix line {where.rsplit(':', 1)[1]} of {path}", where)
    return settings


def checked(name: str, location: str, given_by: str, hint: str, where: str | None = None) -> SourceSetting:
    """``name=location`` as a setting, or the one error that says what is wrong with it and where."""
    shown = where or given_by
    if not NAME.fullmatch(name):
        raise UsageError(f"{shown}: {name!r} cannot name an upstream", f"{hint}: use the name from the manifest")
    problem = url_problem(location, from_command_line=True)
    if problem:
        raise UsageError(f"{shown}: the source of {name}: {problem}", f"{hint}: give a URL or a local path")
    return SourceSetting(name, location, given_by)


def line_of(text: str, key: str) -> int:
    """The line of ``text`` where ``key`` is written (as a key or a table), 1 when it cannot be found."""
    pattern = re.compile(rf"""^\s*(\[\s*)?["']?{re.escape(key)}["']?\s*(=|\])""")
    return next((n for n, line in enumerate(text.splitlines(), 1) if pattern.match(line)), 1)


def untracked_note(project_root: Path) -> str | None:
    """A note when the project's ``.gitignore`` does not name the project file: this machine's paths would be
    committed with ``git add -A``."""
    try:
        lines = read_input(project_root / ".gitignore", ".gitignore", "").decode("utf-8").splitlines()
    except (PatchmgrError, UnicodeDecodeError):
        lines = []
    patterns = [line.strip().lstrip("/") for line in lines if line.strip() and not line.startswith("#")]
    if any(fnmatch.fnmatchcase(PROJECT_FILE, pattern) for pattern in patterns):
        return None
    return f"{PROJECT_FILE} holds this machine's paths and .gitignore does not name it: add it there"


def for_report(name: str, settings: Mapping[str, SourceSetting], urls: tuple[str, ...]) -> SourceSetting:
    """Where ``name``'s source comes from: its setting, else the manifest (its first URL, or none)."""
    return settings.get(name) or SourceSetting(name, urls[0] if urls else "", MANIFEST)
