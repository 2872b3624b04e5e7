"""Piece files shared across targets only when they are the same patch.

``patches/<upstream>/<piece>.patch`` is one folder for every target. A piece whose file is already there
with the same diff (another target imported the same change at the same pin; the DEP-3 header above it
may say more) is shared: the manifest
lists it, nothing is written. One whose file holds another patch that another target lists is named
after the importing target instead (``<piece>-<target>``), with a note, so a target never blocks, nor
changes, another's series. A file no manifest lists is left to ``plan_writes``, which refuses to
overwrite it.
"""

from __future__ import annotations

from dataclasses import replace

from patchmgr.maintain.importing.pieces import Piece
from patchmgr.model.project import Project


def same_patch(left: bytes, right: bytes) -> bool:
    """The same change: the same diff, whatever the DEP-3 header above it says (filled in, or another Origin)."""
    return _diff(left) == _diff(right)


def _diff(data: bytes) -> bytes:
    start = data.find(b"\ndiff --git ")
    return data if start < 0 else data[start + 1 :]


def share_pieces(
    project: Project, target: str, upstream: str, pieces: list[Piece], data: list[bytes]
) -> tuple[list[Piece], list[str]]:
    """The pieces as they will be written (some renamed), and notes on the shared and renamed ones."""
    others, _ = project.readable_targets()
    listed: dict[str, list[str]] = {}
    for other in others:
        if other.name == target:
            continue
        for up in other.upstreams:
            if up.name == upstream:
                for pid in up.patch_ids:
                    listed.setdefault(pid, []).append(other.name)
    out: list[Piece] = []
    notes: list[str] = []
    imported = iter(data)
    for piece in pieces:
        if not piece.imported:
            out.append(piece)
            continue
        blob = next(imported)
        file = project.patch_path(upstream, piece.id)
        if not file.is_file() or piece.id not in listed:
            out.append(piece)
            continue
        names = ", ".join(listed[piece.id])
        if same_patch(file.read_bytes(), blob):
            notes.append(f"{piece.id}: the same patch as target {names}'s; its file is shared")
            out.append(piece)
            continue
        new, number = f"{piece.id}-{target}", 2
        while project.patch_path(upstream, new).exists() and not same_patch(
            project.patch_path(upstream, new).read_bytes(), blob
        ):
            new, number = f"{piece.id}-{target}-{number}", number + 1
        notes.append(
            f"{piece.id}: patches/{upstream}/{piece.id}.patch is another patch, of target {names}: this one is {new}"
        )
        path = project.patch_path(upstream, new).relative_to(project.root)
        out.append(replace(piece, id=new, path=str(path)))
    return out, notes
