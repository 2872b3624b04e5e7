"""What ``patchmgr import`` reads: monolithic patches and where their pins and URLs are written down.

Three layouts of an existing patch set are read:

- a ``series.conf`` (or a folder holding one): ordered lines ``target_worktree|image_patch|source_patch``,
  ``#`` starting a comment; the upstream is named after the worktree's folder (``<ws>/Megatron-Bridge``:
  ``megatron-bridge``); ``source_patch`` is relative to the root of the repository holding the series
  (``places``), and is read only inside it;
- a per-version folder ``<folder>/<upstream version>/<upstream>.patch`` (the highest version, or the one
  asked for), or one version's folder itself, read only inside that folder;
- single patch files, each named after its upstream (``mindspeed.patch``) unless ``--upstream`` names it.

A Dockerfile's ``git clone URL DIR`` and ``git checkout SHA`` lines give URLs and pins. Everything is read
and checked here, before anything else runs: bad input is one ``UsageError`` naming the file and line.
A byte-order mark at the start of a series.conf or a Dockerfile is not part of its first line.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from packaging.version import InvalidVersion, Version

from patchmgr.io.git import GitRepo
from patchmgr.maintain.importing.places import checked, inside, outside_git, plain_path, repository_of
from patchmgr.model.errors import GitError, UsageError
from patchmgr.model.input_files import MAX_PATCH_BYTES, read_input
from patchmgr.model.manifest import NAME
from patchmgr.model.patchfile import PatchFile, parse_patch

SERIES_CONF = "series.conf"


@dataclass(frozen=True)
class Monolith:
    """One monolithic patch of one upstream, as found."""

    upstream: str
    path: Path
    shown: str  # the path as the user wrote it or as series.conf names it
    patch: PatchFile
    version: str | None = None  # from a per-version folder
    commit: str | None = None  # the last commit of the repository holding the patch file that changed it
    joined: tuple[Monolith, ...] = ()  # the patch files of one upstream this one was joined from, in order
    at: str = ""  # a patch written in a recipe's here-document: where in that file (``path``), ``:12``
    placed: bool = False  # read from a clone a recipe makes: ``shown`` and ``commit`` name it, ``path`` is none

    @property
    def identity(self) -> tuple[str, str]:
        """What two names of one patch share: its file (or its place in a clone), and its place in the file."""
        return (self.shown if self.placed else str(self.path.resolve()), self.at)


def origin_of(monolith: Monolith) -> str:
    """Where ``monolith``'s pieces come from, for their ``Origin``: each patch file as named, the last commit that
    changed it and the sha256 of its own bytes (files joined into one series: each, in order, joined by `` + ``)."""
    return " + ".join(
        f"{part.shown}{f' at commit {part.commit}' if part.commit else ''} (sha256 {part.patch.sha256[:12]})"
        for part in monolith.joined or (monolith,)
    )


@dataclass(frozen=True)
class Declared:
    """An upstream's URL and pin as a Dockerfile writes them (either may be missing)."""

    url: str | None = None
    ref: str | None = None
    where: str = ""
    branch: str | None = None  # the ref is a branch (or a tag) the Dockerfile names, resolved at import


def upstream_name(folder: str, where: str) -> str:
    """``<workspace>/Megatron-Bridge`` -> ``megatron-bridge``; a name patchmgr cannot use is bad input."""
    base = PurePosixPath(folder.rstrip("/")).name
    base = base[:-4] if base.endswith(".git") else base
    name = base.lower().replace("_", "-")
    if not NAME.fullmatch(name):  # fullmatch: "$" would let a trailing line break through
        raise UsageError(
            f"{where}: cannot name an upstream after {folder!r}",
            "pass --upstream NAME for a single patch, or rename the folder",
        )
    return name


def read_inputs(paths: list[Path], upstream: str | None = None, version: str | None = None) -> list[Monolith]:
    """Every monolithic patch the paths name, in series order; two for one upstream is bad input."""
    if not paths:
        raise UsageError(
            "import needs the patch set to read: a series.conf, a per-version folder or patch files",
            "for example: patchmgr import --target ascend docker/npu_patch/series.conf",
        )
    for path in paths:
        plain_path(str(path), "the path")
    found: list[Monolith] = []
    singles = [p for p in paths if p.is_file() and p.name != SERIES_CONF]
    if upstream and len(paths) > 1:
        raise UsageError(
            "--upstream names the upstream of one patch file; several paths were given",
            "name each patch file after its upstream (mindspeed.patch), or import them one by one",
        )
    if upstream and not singles and (paths[0].is_dir() or paths[0].is_file()):  # a device or FIFO: said below
        raise UsageError(
            f"--upstream names the upstream of a single patch file, but {paths[0]} is a series.conf or "
            "a folder, whose patches are named by their upstreams already",
            "leave --upstream out (the series.conf lines or the patch file names give the upstreams)",
        )
    for path in paths:
        if path.is_dir() and (path / SERIES_CONF).is_file():
            found += read_series_conf(path / SERIES_CONF)
        elif path.is_file() and path.name == SERIES_CONF:
            found += read_series_conf(path)
        elif path.is_dir():
            found += read_version_folder(path, version)
        elif path.is_file():
            if upstream and not NAME.fullmatch(upstream):
                raise UsageError(
                    f"--upstream {upstream!r} is not an upstream name",
                    "use lower-case letters, digits, '.', '_' or '-'",
                )
            name = upstream or upstream_name(path.stem, str(path))
            found.append(Monolith(name, path, str(path), read_monolith(path, name)))
        else:
            why = "is not a regular file or a folder" if path.exists() else "does not exist"
            raise UsageError(f"{path} {why}", "give a series.conf, a per-version folder or patch files")
    return finish_inputs(found)


def finish_inputs(found: list[Monolith]) -> list[Monolith]:
    """The patches named by their paths in the repositories holding them; the patches of one upstream (several
    files applied to one checkout) one series in their order, as one patch of the files one after another."""
    found = [_in_repository(item) for item in found]
    for item in found:  # as the manifest's comment and the pieces' Origin will name it
        plain_path(item.shown, "the patch")
    groups: dict[str, list[Monolith]] = {}
    for item in found:
        group = groups.setdefault(item.upstream, [])
        if any(other.identity == item.identity for other in group):
            raise UsageError(
                f"the patch {item.shown} is given twice for upstream {item.upstream}", "name each patch file once"
            )
        group.append(item)
    return [items[0] if len(items) == 1 else _series(items) for items in groups.values()]


def without_empty_commits(monoliths: list[Monolith]) -> tuple[list[Monolith], list[str]]:
    """The patches that change files, and a note for each empty commit left out: git am stops at one, git
    format-patch leaves one out. Refused when nothing is left to import."""
    empty = [m for m in monoliths if m.patch.is_empty_commit]
    kept = [m for m in monoliths if not m.patch.is_empty_commit]
    if not kept:
        raise UsageError(
            f"{', '.join(m.shown for m in empty)}: an empty commit changes no file, so there is nothing to import; "
            "nothing was written",
            "import the patches that change files",
        )
    return kept, [f"{m.shown} is an empty commit: it changes no file, so it is skipped" for m in empty]


def _series(items: list[Monolith]) -> Monolith:
    """Several patch files of one upstream as one patch: each file's diffs after those of the files before."""
    first, name = items[0], items[0].upstream
    data = b"".join(i.patch.data if i.patch.data.endswith(b"\n") else i.patch.data + b"\n" for i in items)
    commits = {item.commit for item in items}
    shown = " + ".join(item.shown for item in items)
    return Monolith(
        name,
        first.path,
        shown,
        parse_patch(data, first.path, name, name),
        first.version,
        commits.pop() if len(commits) == 1 else None,
        tuple(items),
    )


def _in_repository(item: Monolith) -> Monolith:
    """The patch named by its path in the git repository holding it, with the last commit that changed it.

    The repository is the user's own checkout, read with its configuration distrusted like any other."""
    if item.placed:
        return item
    path = item.path.resolve()
    top = repository_of(path.parent)
    if not (top / ".git").exists():
        return replace(item, shown=outside_git(item.path, item.shown, item.version) + item.at)
    relative = path.relative_to(top).as_posix()
    try:
        with GitRepo(top, untrusted=True) as repo:
            commit = repo.run("log", "-1", "--format=%H", "--", relative, env={"GIT_LITERAL_PATHSPECS": "1"})
    except GitError:
        return item
    shown = item.shown if item.shown != str(item.path) else relative
    return replace(item, shown=shown + item.at, commit=commit or None)


def read_monolith(path: Path, upstream: str) -> PatchFile:
    data = read_input(path, str(path), "give a patch file, its folder or its series.conf", limit=MAX_PATCH_BYTES)
    return parse_patch(data, path, upstream, upstream)


def read_series_conf(conf: Path) -> list[Monolith]:
    """The lines of a series.conf, top to bottom: ``target_worktree|image_patch|source_patch``."""
    text = read_text(conf, f"{conf}", "give a UTF-8 series.conf")
    repository = repository_of(conf.parent)
    found = []
    for number, raw in _lines(text):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"{conf}:{number}"
        plain_path(line, f"{where}: the line")
        parts = [part.strip() for part in line.split("|")]
        if len(parts) != 3 or not all(parts):
            raise UsageError(
                f"{where}: {raw.strip()!r} is not target_worktree|image_patch|source_patch",
                "write one line per upstream, e.g. "
                "<ws>/Megatron-Bridge|megatron-bridge.patch|docker/npu_patch/megatron-bridge.patch",
            )
        worktree, image_patch, source_patch = parts
        name = upstream_name(worktree, where)
        path = _locate(repository, conf.parent, source_patch, image_patch, where)
        if path is None:
            raise UsageError(
                f"{where}: the patch {source_patch} is not in the repository {repository} (the git "
                f"work tree holding {conf.name}, or its folder outside git), nor next to {conf.name}",
                "name source_patch relative to that repository's root, or fix the line",
            )
        found.append(Monolith(name, path, source_patch, read_monolith(path, name)))
    if not found:
        raise UsageError(f"{conf} lists no patches", "add target_worktree|image_patch|source_patch lines")
    return found


def _locate(repository: Path, folder: Path, source_patch: str, image_patch: str, where: str) -> Path | None:
    """``source_patch`` relative to the repository's root (or the series.conf's folder), else a file of its
    name (or of ``image_patch``'s) next to the series.conf: only inside the repository, never above it."""
    relative = inside(repository, source_patch, where, "source_patch")
    local = folder.resolve()
    candidates = [
        relative,
        inside(repository, (local / source_patch).relative_to(repository).as_posix(), where, "source_patch"),
    ]
    for name in (PurePosixPath(source_patch).name, PurePosixPath(image_patch).name):
        if name not in ("", ".", ".."):
            candidates.append(checked(repository, local / name, where, "the patch"))
    return next((path for path in candidates if path.is_file()), None)


def read_version_folder(folder: Path, wanted: str | None, repository: Path | None = None) -> list[Monolith]:
    """``<folder>/<version>/<upstream>.patch`` (the highest version unless ``wanted``), or a version's folder;
    nothing outside ``repository`` (the folder given) is read."""
    repository = repository or folder.resolve()
    own = [checked(repository, p, str(folder), "the patch") for p in sorted(folder.glob("*.patch")) if p.is_file()]
    if own:
        version = version_of(folder.name)
        return [
            Monolith(upstream_name(p.stem, str(p)), p, str(p), read_monolith(p, upstream_name(p.stem, str(p))), version)
            for p in own
        ]
    versions = {}
    for sub in folder.iterdir():
        if sub.is_dir() and any(sub.glob("*.patch")):
            versions[sub.name] = checked(repository, sub, str(folder), "the version folder")
    if not versions:
        raise UsageError(
            f"{folder} holds no series.conf, no <version>/<upstream>.patch and no .patch files",
            "give the folder of the patch set, or the patch files",
        )
    if wanted is not None:
        if wanted not in versions:
            raise UsageError(
                f"{folder} has no version folder {wanted!r} (it has: {', '.join(sorted(versions))})",
                "pick one of the versions listed",
            )
        chosen = wanted
    else:
        chosen = max(versions, key=lambda v: (version_of(v) is not None, Version(version_of(v) or "0"), v))
    return read_version_folder(versions[chosen], None, repository)


def version_of(text: str) -> str | None:
    try:
        return str(Version(text))
    except InvalidVersion:
        return None


def name_or_none(folder: str | None) -> str | None:
    try:
        return upstream_name(folder, "") if folder else None
    except UsageError:
        return None


def read_text(path: Path, what: str, hint: str) -> str:
    """A UTF-8 text file; a byte-order mark at its start is not text (editors on Windows write one)."""
    try:
        return read_input(path, what, hint).decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{what}: cannot be read ({exc})", hint) from None


def _lines(text: str) -> list[tuple[int, str]]:
    """(number, line): lines end at LF only (a CR before it dropped); other separators are not line ends."""
    return [(number, raw.removesuffix("\r")) for number, raw in enumerate(text.split("\n"), 1)]
