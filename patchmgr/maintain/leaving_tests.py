"""The smoke test files that leave the project with the patches a command drops.

A dropped patch's file and its smoke test leave together: each file under ``tests/smoke/<upstream>/`` that a dropped
patch's ``Smoke-Test`` names goes with it, unless another patch file of that upstream names it too (listed by any
target's series or by none: the files of ``patches/<upstream>/`` are shared by every target). A patch file there
that cannot be read keeps every test, since what it names is not known. Only regular files inside the project's
smoke folder are named; a value that is not a test id of that folder (``lint`` names it) names nothing here.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from patchmgr.model.errors import PatchmgrError, StateError
from patchmgr.model.lint import SMOKE_DIR
from patchmgr.model.patchfile import PatchFile, read_patch
from patchmgr.model.project import Project


def leaving_tests(project: Project, upstream: str, dropped: Collection[PatchFile]) -> dict[str, dict[Path, bytes]]:
    """Each patch of ``dropped`` (patches of ``upstream`` whose files are removed) with the smoke test files that
    leave with it, each with the bytes it holds now (what the journaled removal expects to find)."""
    gone = {patch.id for patch in dropped}
    kept = _named_by_others(project, upstream, gone)
    leaving: dict[str, dict[Path, bytes]] = {}
    for patch in dropped:
        files: dict[Path, bytes] = {}
        for path in _named_files(project, upstream, patch):
            if kept is not None and path not in kept and path not in files:
                files[path] = _read(path)
        leaving[patch.id] = files
    return leaving


def _named_files(project: Project, upstream: str, patch: PatchFile) -> list[Path]:
    """The smoke test files ``patch``'s ``Smoke-Test`` values name: regular files inside tests/smoke/<upstream>/."""
    folder = project.root.joinpath(*SMOKE_DIR, upstream).resolve()
    named = []
    for value in patch.field_values("Smoke-Test"):
        relative = value.strip().split("::", 1)[0]
        if not relative:
            continue
        path = project.root / relative
        if path.is_symlink() or not path.is_file() or not path.resolve().is_relative_to(folder):
            continue
        named.append(path)
    return list(dict.fromkeys(named))


def _named_by_others(project: Project, upstream: str, gone: Collection[str]) -> set[Path] | None:
    """The smoke test files the other patch files of ``upstream`` name; None when one of them cannot be read."""
    named: set[Path] = set()
    for path in sorted((project.patches_dir / upstream).glob("*.patch")):
        if path.stem in gone:
            continue
        try:
            other = read_patch(path, upstream, path.stem)
        except PatchmgrError:
            return None
        named.update(_named_files(project, upstream, other))
    return named


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise StateError(f"cannot read {path}: {exc.strerror or exc}", "fix the file, then run again") from None
