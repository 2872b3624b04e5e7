"""Import of a quilt series (``debian/patches/series`` and its patches): each patch kept whole, in order.

Unlike a monolithic patch, a quilt series is already a series of documented patches: nothing is split and
no stub is written. Each patch file is taken byte for byte (its DEP-3 header, ``# DP:`` lines, free text and
diff), but for a patch listed with ``-pN`` (N other than 1), whose names are made the ``-p1`` names git
reads (``model.strip_level``). The series is checked at the pin in its order, each patch on top of the ones
before it, as ``quilt push -a`` applies them; one that does not apply exactly there refuses the import,
naming it. Then git proves it: ``git apply`` of each patch in turn at the pin succeeds.

The target gets ``lint-profile = "dep3"``: a quilt series is judged by the DEP-3 specification, not by
patchmgr's stricter defaults (``model.lint``); a note says so when an existing target gets it, or keeps another
profile. The series file itself is kept as it is (``patches/<upstream>/<target>.series``), so that
``export --format quilt`` gives it back with its comments, blank lines and file names.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

from patchmgr.engine.results import CheckResult, State
from patchmgr.maintain.importing.pieces import Piece, classify_pieces
from patchmgr.maintain.importing.pin import Base, FoundBy
from patchmgr.maintain.importing.places import checked, plain_path, repository_of
from patchmgr.maintain.importing.plan import ImportOptions, ImportOutcome, UpstreamImport, check_names, existing_of
from patchmgr.maintain.importing.prove import Proof
from patchmgr.maintain.importing.scratch import Scratch, apply
from patchmgr.maintain.importing.sources import read_text
from patchmgr.maintain.importing.write import UpstreamEntry, plan_writes
from patchmgr.model.errors import GitError, PatchmgrError, UsageError
from patchmgr.model.input_files import MAX_PATCH_BYTES, read_input
from patchmgr.model.lint import DEP3_PROFILE
from patchmgr.model.manifest import LINT_PROFILE_KEY, NAME, Upstream
from patchmgr.model.patchfile import PatchFile, parse_patch
from patchmgr.model.project import Project
from patchmgr.model.quilt_series import SERIES, QuiltSeries, kept_series_name, parse_series
from patchmgr.model.strip_level import as_strip_one
from patchmgr.model.urls import without_credentials
from patchmgr.sources.refs import UnknownRef
from patchmgr.sources.upstream import GitSource, Sources
from patchmgr.targets.project_files import check_places


@dataclass(frozen=True)
class QuiltInput:
    """A quilt series as found: its file, what the user called it, and its patches read (ids in order)."""

    series_file: Path
    shown: str
    upstream: str
    patches: tuple[tuple[PatchFile, bytes], ...]
    text: str  # the series file, as it is


def quilt_series_file(paths: list[Path]) -> Path | None:
    """The series file the import's paths name (``DIR/series``, or a DIR holding one), else None."""
    if len(paths) != 1:
        return None
    path = paths[0]
    if path.is_dir() and (path / SERIES).is_file():
        return path / SERIES
    return path if path.is_file() and path.name == SERIES else None


def read_quilt(series_file: Path, upstream: str | None) -> QuiltInput:
    """The series and each patch it lists, read only inside the series' folder; bad input is one UsageError."""
    plain_path(str(series_file), "the series")
    folder = series_file.parent.resolve()
    text = read_text(series_file, str(series_file), "give a UTF-8 series file")
    series: QuiltSeries = parse_series(text, str(series_file))
    name = upstream or _debian_source(folder)
    if name is None:
        raise UsageError(
            f"{series_file}: a quilt series does not name its upstream",
            "pass --upstream NAME (the upstream's name in the manifest), with --git NAME=URL and --pin NAME=REF",
        )
    if not NAME.fullmatch(name):
        raise UsageError(
            f"--upstream {name!r} is not an upstream name", "use lower-case letters, digits, '.', '_' or '-'"
        )
    patches = []
    for entry in series.entries:
        where = f"{series_file}:{entry.line}"
        path = checked(folder, folder / entry.name, where, "the patch")
        if not path.is_file():
            raise UsageError(f"{where}: the patch {entry.name} is not in {folder}", "fix the line or add the patch")
        data = read_input(path, str(path), "fix the patch or take it out of the series", limit=MAX_PATCH_BYTES)
        data = as_strip_one(data, entry.strip, path)
        patches.append((parse_patch(data, path, name, entry.id), data))
    return QuiltInput(series_file, _shown(series_file), name, tuple(patches), text)


def _shown(series_file: Path) -> str:
    """How the manifest names the series: by its path in the git work tree holding it, else by its folders
    (``debian/patches/series``), never by a path of the importing machine."""
    real = series_file.resolve()
    top = repository_of(real.parent)
    if (top / ".git").exists():
        return real.relative_to(top).as_posix()
    debian = real.parent.name == "patches" and real.parent.parent.name == "debian"
    return "/".join(real.parts[-3:] if debian else real.parts[-2:])


def _debian_source(folder: Path) -> str | None:
    """The source package's name when the series is a Debian package's ``debian/patches/series``: the first
    word of ``debian/changelog``, the name dpkg-source gives the package."""
    if folder.name != "patches" or folder.parent.name != "debian":
        return None
    changelog = folder.parent / "changelog"
    try:
        first = read_input(changelog, str(changelog), "").decode("utf-8", "replace").split("\n", 1)[0]
    except PatchmgrError:
        return None
    word = first.split(" ", 1)[0]
    return word if NAME.fullmatch(word) else None


def plan_quilt_import(project: Project, quilt: QuiltInput, sources: Sources, options: ImportOptions) -> ImportOutcome:
    """The series checked and proven at the pin, and the files to write: nothing written."""
    name = quilt.upstream
    check_names(options, [name])
    existing = existing_of(project, options.target).get(name)
    git = options.git.get(name) or (existing.git if existing else None)
    if not git:
        raise UsageError(f"no git URL for upstream {name} ({quilt.shown})", f"pass --git {name}=URL")
    git = without_credentials(git)
    urls = sources.urls(Upstream(name, git, (), "", None, None, "", ()))
    ref = options.pins.get(name)
    if existing is not None:
        pin, how = existing.commit, f"the pin of {name} in target {options.target}"
    elif ref:
        try:
            pin = sources.store.resolve_ref(name, ref, urls).commit
        except UnknownRef:
            raise UsageError(
                f"--pin {name}={ref}: upstream {name} has no such commit or ref", "check the pin"
            ) from None
        how = f"--pin {name}={ref}"
    else:
        raise UsageError(
            f"no pin for upstream {name} ({quilt.shown}): a quilt series applies to one upstream release",
            f"pass --pin {name}=REF: the tag or commit of the release the series is for (e.g. --pin {name}=v1.4.0)",
        )
    fetched = sources.store.fetch_commit(name, pin, urls)
    repo, location = fetched.repo, fetched.url or urls[0]
    reader = GitSource(repo, pin, location)
    patches = list(quilt.patches)
    results = classify_pieces(sources, name, git, repo, location, pin, pin, patches)
    blockers = [r for r in results if not r.state.applies]
    if blockers:
        fuzzy = [r.patch.id for r in blockers if r.state is State.FUZZ]
        raise UsageError(
            f"{quilt.shown}: the series does not apply at {name} {pin[:12]} as dpkg-source -x applies it (each patch "
            "on top of the ones before, at an offset where need be, never with fuzz: patch -F 0): "
            + "; ".join(_refusal(r) for r in blockers)
            + "; nothing was written",
            f"refresh {', '.join(fuzzy)} with quilt (quilt push applies it with fuzz; then quilt refresh), as "
            "dpkg-source says too"
            if fuzzy
            else f"pin the release the series was made for (--pin {name}=REF), or refresh those patches with quilt",
        )
    pieces = [
        Piece(
            patch.id,
            ", ".join(patch.touched_paths),
            result.state,
            True,
            str(project.patch_path(name, patch.id).relative_to(project.root)),
            detail=result.detail,
        )
        for (patch, _), result in zip(patches, results, strict=True)
    ]
    proof = _prove(reader, pin, patches)
    comment = f"imported from the quilt series {quilt.shown}, at {how}"
    entry = UpstreamEntry(name, git, pin, comment, None, None, tuple((p.id, data) for p, data in patches))
    result = UpstreamImport(name, quilt.shown, git, Base(pin, FoundBy.GIVEN, how), pin, pieces, [proof])
    notes = [*options.notes, *_profile_notes(project, options.target)]
    outcome = ImportOutcome(options.target, [result], notes=notes, kept_whole=True)
    outcome.writes, outcome.expected = plan_writes(
        project, options.target, f"imported from {quilt.shown}", [entry], lint_profile=DEP3_PROFILE
    )
    _keep_series(project, options.target, quilt, outcome)
    return outcome


def _refusal(result: CheckResult) -> str:
    detail = f" ({result.detail})" if result.detail else ""
    if result.state is State.FUZZ:
        return f"{result.patch.id} applies only with fuzz{detail}: quilt push takes it so, dpkg-source -x refuses it"
    return f"{result.patch.id} is {result.state.value}{detail}"


def _profile_notes(project: Project, target: str) -> list[str]:
    """What an existing target's lint-profile becomes: DEP-3's where it named none, else its own, said."""
    path = project.manifests_dir / f"{target}.toml"
    if not path.is_file():
        return []
    section = tomllib.loads(path.read_text(encoding="utf-8")).get("target", {})
    profile = section.get(LINT_PROFILE_KEY) if isinstance(section, dict) else None
    if profile is None:
        return [
            f'target {target} named no lint-profile: it gets lint-profile = "{DEP3_PROFILE}", so lint holds all '
            f"its patches to the DEP-3 specification, not to patchmgr's strict rules (docs/quilt.md)"
        ]
    if profile != DEP3_PROFILE:
        return [
            f'target {target} keeps lint-profile = "{profile}": lint holds the series\' patches to its rules, not '
            f"to DEP-3's; write lint-profile = \"{DEP3_PROFILE}\" in manifests/{target}.toml for DEP-3's"
        ]
    return []


def _keep_series(project: Project, target: str, quilt: QuiltInput, outcome: ImportOutcome) -> None:
    """The series file, kept as it is beside the patches, for export to give back (``model.quilt_series``)."""
    path = project.patches_dir / quilt.upstream / kept_series_name(target)
    data = quilt.text.encode("utf-8")
    held = path.read_bytes() if path.is_file() and not path.is_symlink() else None
    if held != data and (held is not None or os.path.lexists(path)):  # another series, or no plain file
        raise UsageError(
            f"{path.relative_to(project.root)} exists and holds another series; import never overwrites it, "
            "nothing was written",
            f"import into another target, or remove {path.name} if target {target} no longer follows that series",
        )
    check_places(project.root, [path])
    outcome.writes[path] = data
    outcome.expected[path] = held


def _prove(reader: GitSource, pin: str, patches: list[tuple[PatchFile, bytes]]) -> Proof:
    """git's own word: each patch applied with ``git apply`` at the pin, in order, on top of the ones before."""
    paths = sorted({path for patch, _ in patches for path in patch.touched_paths})
    with Scratch() as scratch:
        tree = scratch.folder({path: reader.read(path) for path in paths})
        for number, (patch, data) in enumerate(patches, 1):
            try:
                apply(tree, data)
            except GitError as exc:
                first = next((line for line in exc.message.splitlines() if line.startswith("error:")), exc.message)
                return Proof(pin, False, 0, f"git apply of patch {number} ({patch.id}) fails at {pin[:12]}: {first}")
    return Proof(
        pin,
        True,
        len(paths),
        f"{len(patches)} patch(es), each applied with git apply at {pin[:12]} on top of the ones before "
        f"({len(paths)} files)",
    )
