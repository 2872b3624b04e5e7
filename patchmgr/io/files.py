"""Writing files so that a crash leaves the old bytes or the new ones: atomic replacement, fsync, no links followed."""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

from patchmgr.model.errors import StateError, UsageError
from patchmgr.model.input_files import file_kind
from patchmgr.model.urls import mask_url


def temp_path(path: Path) -> Path:
    """The temporary file ``write_atomic`` writes next to ``path`` before it renames it into place."""
    return path.with_name(f".{path.name}.patchmgr-tmp")


def write_atomic(path: Path, data: bytes, written: Callable[[], None] | None = None) -> None:
    """Replace ``path`` with ``data`` by a rename; ``written()`` is called between writing the temporary
    file and the rename (a kill point of the transactions)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = temp_path(path)
    try:
        # never through a link or into a FIFO or device left at the temporary name: a file of our own, or an error
        if os.path.lexists(temp) and not stat.S_ISREG(os.lstat(temp).st_mode):
            os.unlink(temp)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o666)
        with open(fd, "wb") as handle:
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


# kernel interfaces, not storage: a "file" there is a setting or a device, never a report
_PSEUDO_FOLDERS = ("/proc", "/sys", "/dev")


def linked_tree(source: Path, copy: Path, *left_out: str, linkable: Callable[[str], bool] | None = None) -> None:
    """``source`` copied to ``copy`` (folders and symbolic links made anew, names matching ``left_out`` left
    out), each file that is ``linkable`` (every file without it) a hard link to its original where the file
    system allows one, every other file copied with its times and modes. After one refusal (another device,
    EPERM, EMLINK) the rest is copied without trying each file. A linked file shares its bytes with the
    original: change it only by replacing it (``write_atomic``), never by writing into it."""
    linking = True

    def link_or_copy(src: str, dst: str) -> str:
        nonlocal linking
        if linking and (linkable is None or linkable(src)):
            try:
                os.link(src, dst, follow_symlinks=False)
                return dst
            except OSError:
                linking = False
        return shutil.copy2(src, dst)

    shutil.copytree(source, copy, symlinks=True, ignore=shutil.ignore_patterns(*left_out), copy_function=link_or_copy)


def output_file_problem(given: str | Path) -> str | None:
    """Why patchmgr may not write a file the user named at ``given``, or None.

    An output file is a regular file (replaced whole) or absent (created) in an existing folder on
    storage: a FIFO, a device, a socket or a folder there would be replaced or written into, a
    symbolic link would be replaced instead of what it names, a path that ends in ``/`` (or ``/.``,
    ``/..``) names a folder, and a path under /proc, /sys or /dev names a kernel interface: as given
    (made absolute and normalised lexically, no link followed: /proc/self/cwd/x is under /proc) and
    as its folder really is (a link into /proc is no way around it)."""
    raw = os.fspath(given)  # as typed: a Path would have dropped a trailing slash
    if os.path.basename(raw) in ("", ".", ".."):
        return "ends in / (or /. or /..), so it names a folder, not a file"
    path = Path(raw)
    lexical = Path(os.path.normpath(os.path.abspath(raw)))
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        return f"cannot be looked at ({exc.strerror or exc})"
    if mode is not None and stat.S_ISLNK(mode):
        try:
            pointed = file_kind(os.stat(path).st_mode) if os.path.exists(path) else "nothing"
        except OSError:
            pointed = "something that cannot be looked at"
        return f"is a symbolic link (to {pointed if pointed != 'not a regular file' else 'a regular file'})"
    if mode is not None and not stat.S_ISREG(mode):
        return f"is {file_kind(mode)}, not a regular file"
    parent = Path(os.path.realpath(Path(path).absolute().parent))
    for pseudo in _PSEUDO_FOLDERS:
        if any(Path(pseudo) in place.parents for place in (parent / path.name, lexical)):
            return f"is under {pseudo}, a kernel interface, not a folder for files"
    if not parent.is_dir():
        return f"the folder {Path(path).parent} does not exist"
    return None


def check_output_file(path: str | Path, option: str) -> None:
    """Refuse (exit 2) an output path that ``output_file_problem`` finds fault with, before any work."""
    problem = output_file_problem(path)
    if problem is not None:
        raise UsageError(
            f"{option} {path}: {problem}; patchmgr writes only a regular file or a new one",
            "give the path of a regular file, or a new name in an existing folder (nothing was written)",
        )


def write_output(path: str | Path, data: bytes, option: str) -> None:
    """Write a file the user named (``--html PATH`` ...): checked again just before, then replaced atomically;
    every credential in it masked (``urls.mask_url``), whatever rendering made it: a report is an output."""
    check_output_file(path, option)
    data = mask_url(data.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")
    try:
        write_atomic(Path(path), data)
    except OSError as exc:
        raise StateError(
            f"{option} {path}: cannot be written ({exc.strerror or exc})",
            "check the folder's permissions and free space, then run again",
        ) from None


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
            raise StateError(
                f"{path} is a symbolic link; patchmgr never writes through links in its state folder", LINK_HINT
            )
    if walk and root.is_dir():
        for folder, dirs, files in os.walk(root):  # never follows a link (and any link was refused above)
            for name in dirs + files:
                path = Path(folder) / name
                if path.is_symlink():
                    raise StateError(
                        f"{path} is a symbolic link; patchmgr never writes through links in its state folder", LINK_HINT
                    )


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
