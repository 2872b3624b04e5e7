"""Writing files so that a crash leaves the old bytes or the new ones: atomic replacement, fsync, no links followed."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from patchmgr.model.errors import StateError


def temp_path(path: Path) -> Path:
    """The temporary file ``write_atomic`` writes next to ``path`` before it renames it into place."""
    return path.with_name(f".{path.name}.patchmgr-tmp")


def write_atomic(path: Path, data: bytes, written: Callable[[], None] | None = None) -> None:
    """Replace ``path`` with ``data`` by a rename; ``written()`` is called between writing the temporary
    file and the rename (a kill point of the transactions)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = temp_path(path)
    try:
        with open(temp, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if path.exists():
            shutil.copymode(path, temp)
        if written is not None:
            written()
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)  # a half-written temporary file would hold on to the space
        raise


LINK_HINT = "remove that link (and put a real folder there, or nothing), then run again"


def require_real_folder(root: Path, *below: str | Path, children: bool = False, walk: bool = False) -> None:
    """Refuse a symbolic link at ``root`` or on the way down from it to each of ``below``.

    ``below`` are paths relative to ``root`` (or absolute ones inside it); each
    component that exists is checked, from ``root`` down. With ``children``,
    every entry directly inside ``root`` is checked too; with ``walk``, every
    entry anywhere below it. patchmgr creates, replaces and removes folders and
    files there: through a link it would do so wherever the link points.
    """
    candidates = [root]
    for path in below:
        relative = Path(path)
        if relative.is_absolute():
            try:
                relative = relative.relative_to(root)
            except ValueError:
                continue  # not inside the state folder: not ours to police
        current = root
        for part in relative.parts:
            current = current / part
            candidates.append(current)
    if (children or walk) and root.is_dir() and not root.is_symlink():
        candidates += sorted(root.iterdir())
    for path in candidates:
        if path.is_symlink():
            raise StateError(f"{path} is a symbolic link; patchmgr never writes through links in its state folder",
                             LINK_HINT)
    if walk and root.is_dir():
        for folder, dirs, files in os.walk(root):  # never follows a link (and any link was refused above)
            for name in dirs + files:
                path = Path(folder) / name
                if path.is_symlink():
                    raise StateError(f"{path} is a symbolic link; patchmgr never writes through links in its "
                                     "state folder", LINK_HINT)


def remove_tree(path: Path | str) -> None:
    """Remove a folder patchmgr made; a symbolic link in its place is removed itself, never followed."""
    if os.path.islink(path):
        os.unlink(path)
        return
    shutil.rmtree(path, ignore_errors=True)  # removes links inside as links, never what they point to


def fsync_file(path: Path) -> None:
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
