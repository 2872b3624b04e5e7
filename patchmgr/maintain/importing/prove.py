"""The proof of an import: the imported series and the monolithic patch give the same files, by git.

Both are applied with ``git apply`` to the upstream's files at one commit, in two fresh work trees,
and every file either of them touches is compared byte for byte. At the pin the series of imported
pieces is compared with the monolithic patch less the files the upstream already carries; at the base
(when the pin is another commit) every piece is compared with the whole monolithic patch.

A file that the upstream carries only part of at the pin has no monolithic result there to compare with
(the carried hunks no longer apply). For such a file the proof is that the monolithic patch's changes to
it reverse-apply to the series' result (``git apply -R --check``): every change it makes is in the file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from patchmgr.engine.results import TreeReader
from patchmgr.maintain.importing.scratch import Scratch, apply, holds_postimage, read_tree
from patchmgr.model.errors import GitError


@dataclass(frozen=True)
class Proof:
    commit: str
    ok: bool
    files: int  # files compared
    detail: str  # what was compared, or where it differs


def prove(
    scratch: Scratch,
    reader: TreeReader,
    commit: str,
    monolith: bytes,
    paths: list[str],
    pieces: list[bytes],
    exclude: Sequence[str] = (),
    partly: Sequence[str] = (),
) -> Proof:
    """``exclude``: files upstream carries whole; ``partly``: files it carries some of the changes to."""
    compared = [p for p in paths if p not in exclude and p not in partly]
    start = {path: reader.read(path) for path in paths}
    whole, series = scratch.folder(start), scratch.folder(start)
    try:
        apply(whole, monolith, [*exclude, *partly])
    except GitError as exc:
        return Proof(
            commit, False, 0, f"git apply of the monolithic patch fails at {commit[:12]}: {_first_line(exc.message)}"
        )
    for number, piece in enumerate(pieces, 1):
        try:
            apply(series, piece)
        except GitError as exc:
            return Proof(
                commit, False, 0, f"git apply of piece {number} fails at {commit[:12]}: {_first_line(exc.message)}"
            )
    left, right = read_tree(whole, compared), read_tree(series, compared)
    differ = [path for path in compared if left[path] != right[path]]
    if differ:
        return Proof(commit, False, len(compared), f"the files differ: {', '.join(differ)}")
    if partly:
        try:
            holds_postimage(series, monolith, partly)
        except GitError as exc:
            return Proof(
                commit,
                False,
                len(compared),
                f"the series at {commit[:12]} lacks a change the monolithic "
                f"patch makes to {', '.join(partly)}: {_first_line(exc.message)}",
            )
    what = "the monolithic patch" + (f" less {len(exclude)} file(s) upstream carries" if exclude else "")
    detail = (
        f"{len(pieces)} piece(s) and {what}, both applied with git at {commit[:12]}, give byte-identical "
        f"files ({len(compared)} compared)"
    )
    if partly:
        detail += (
            f"; in {', '.join(partly)}, which upstream carries part of, every change of the monolithic patch "
            "is in the series' result (it reverse-applies there)"
        )
    return Proof(commit, True, len(compared) + len(partly), detail)


def _first_line(message: str) -> str:
    lines = [line for line in message.splitlines() if line.strip()]
    useful = [line for line in lines if line.startswith("error:")]
    return (useful or lines or [message])[0].strip()
