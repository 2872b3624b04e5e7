"""The pieces of an imported patch as patch files: made at the base, checked at the pin, made again there.

A piece that upstream already carries at the pin is left out with its
evidence; the files such pieces touch are what the proof at the pin leaves
out (``carried_files``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from patchmgr.engine.classify import Overlay
from patchmgr.engine.place import PlacementFailure
from patchmgr.engine.results import CheckResult, State
from patchmgr.history.at_ref import check_at_ref
from patchmgr.io.git import GitRepo
from patchmgr.maintain.importing.repeated import Take
from patchmgr.maintain.importing.scratch import Scratch
from patchmgr.maintain.importing.sources import Monolith
from patchmgr.maintain.importing.split import PieceChange, PieceSpec, piece_changes
from patchmgr.model.errors import UsageError
from patchmgr.model.lint import IMPORT_STUB
from patchmgr.model.manifest import Upstream
from patchmgr.model.patchfile import PatchFile, parse_patch
from patchmgr.model.project import Project
from patchmgr.sources.upstream import GitSource, Sources


@dataclass
class Piece:
    """One piece of an imported patch, as the import reports it: its state at the pin, and its file if written."""

    id: str
    label: str
    state: State  # at the pin
    imported: bool
    path: str | None = None  # the patch file written, relative to the project root
    evidence: str | None = None
    carrier: str | None = None
    detail: str = ""
    at_given_pin: str | None = None  # what it is at a pin that was given and rejected (the base pinned instead)
    takes: tuple[Take, ...] = ()  # which diff of each path it holds, and which hunks


def said_at_given_pin(result: CheckResult, pin: str) -> str:
    """What a piece is at a given pin that was rejected: the user learns what upstream already carries there."""
    said = f"{result.state.value} at the given pin {pin[:12]}"
    if result.state is State.UPSTREAM:
        said += f": commit {result.carrier[:12]} carries it" if result.carrier else ": upstream carries it"
    return said


def piece_changes_at(
    patch: PatchFile, specs: list[PieceSpec], reader: GitSource, monolith: Monolith
) -> list[PieceChange]:
    """What each piece changes at ``reader``'s commit; a hunk that applies only after those before it: bad input."""
    try:
        return piece_changes(patch, specs, reader)
    except PlacementFailure as failure:
        conflict = failure.conflict
        raise UsageError(
            f"{monolith.shown}: {conflict.path} hunk #{conflict.hunk} does not apply without the hunks "
            "before it, so it cannot be a piece of its own",
            "keep those hunks together (--map)",
        ) from None


def _header(spec_label: str, origin: str) -> str:
    return (
        f"Description: {IMPORT_STUB} what this fixes and why ({spec_label})\n"
        f"Origin: {origin}\nUpstream-Status: Pending\n---\n"
    )


def render_pieces(
    scratch: Scratch, repo: GitRepo, commit: str, changes: list[PieceChange], origin: str, name: str
) -> list[tuple[PatchFile, bytes]]:
    """Each piece as a patch file (stub DEP-3 header, git's diff at ``commit``): parsed, and its bytes."""
    out = []
    for change in changes:
        paths = sorted(set(change.before) | set(change.after))
        modes = {p: (e[0] if e else "100644") for p, e in zip(paths, repo.path_entries(commit, paths), strict=True)}
        text = _header(change.spec.label, origin) + scratch.diff(change.before, change.after, modes)
        data = text.encode("utf-8")
        out.append((parse_patch(data, Path(f"{change.spec.id}.patch"), name, change.spec.id), data))
    return out


def classify_pieces(
    sources: Sources,
    name: str,
    git: str,
    repo: GitRepo,
    location: str,
    base: str,
    pin: str,
    pieces: list[tuple[PatchFile, bytes]],
) -> list[CheckResult]:
    """The pieces checked in series order at ``pin``; past the base, those upstream carries explained (evidence)."""
    # the upstream as it will be written, pinned at the base: the pieces are checked at the pin as status will
    # check them at ``--against PIN``
    upstream = Upstream(name, git, (), base, None, None, "", ())
    return check_at_ref(sources, upstream, GitSource(repo, pin, location), [p for p, _ in pieces])


def pieces_at_pin(
    scratch: Scratch,
    repo: GitRepo,
    location: str,
    pin: str,
    results: list[CheckResult],
    specs: list[PieceSpec],
    origin: str,
    name: str,
    project: Project,
) -> tuple[list[Piece], list[bytes]]:
    """The pieces as they are written: made again at the pin (exact there), carried ones left out."""
    overlay = Overlay(GitSource(repo, pin, location))
    pieces, data = [], []
    for result, spec in zip(results, specs, strict=True):
        if not result.state.applies:
            pieces.append(
                Piece(
                    spec.id,
                    spec.label,
                    result.state,
                    False,
                    evidence=result.detail,
                    carrier=result.carrier,
                    takes=spec.takes,
                )
            )
            continue
        before = {path: overlay.read(path) for path in result.files}
        paths = sorted(result.files)
        modes = {p: (e[0] if e else "100644") for p, e in zip(paths, repo.path_entries(pin, paths), strict=True)}
        text = _header(spec.label, origin) + scratch.diff(before, result.files, modes)
        overlay.update(result.files)
        relative = project.patch_path(name, spec.id).relative_to(project.root)
        pieces.append(
            Piece(spec.id, spec.label, result.state, True, str(relative), detail=result.detail, takes=spec.takes)
        )
        data.append(text.encode("utf-8"))
    return pieces, data


def carried_files(patch: PatchFile, specs: list[PieceSpec], pieces: list[Piece]) -> tuple[list[str], list[str]]:
    """The files of the pieces left out: those no imported piece touches, and those an imported piece touches too."""
    carried: set[str] = set()
    kept: set[str] = set()
    for spec, piece in zip(specs, pieces, strict=False):
        files = {
            path
            for index, _ in spec.parts
            for path in (patch.files[index].old_path, patch.files[index].new_path)
            if path
        }
        (kept if piece.imported else carried).update(files)
    return sorted(carried - kept), sorted(carried & kept)
