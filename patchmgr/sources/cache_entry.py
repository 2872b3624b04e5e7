"""One trust check for everything patchmgr reuses from its cache: cached clones and smoke environments alike.

What patchmgr reuses from its cache runs as this user: git reads a clone's config (which can name programs),
``smoke`` runs an environment's ``bin/python`` and counts its result as proof. So an entry is reused only
when it is patchmgr's own, as git's ``safe.directory`` rule has it and further: a real folder (never a
symbolic link to somewhere else), owned by this user and writable by no other, and so is every file and
folder in it that decides what runs. Group-write counts as writable by another user unless the file's group is
this user's own (its gid is ``os.getegid()``: a user-private group under umask 002); any other group may hold
other users; a link inside it leads only inside it, or to the one program it may
name (a virtual environment's ``bin/python`` names the interpreter that built it). The checks of what a
file says (a clone's config keys, an environment's ``.pth``) belong to the kind of entry and follow this.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path

from patchmgr.io.disk import os_problem
from patchmgr.sources.cache_errors import CacheError, disk_hint


def check_owned(path: Path, what: str, hint: str) -> None:
    """Refuse ``path`` (followed, if a link) unless this user owns it: another user's files run programs as
    this one."""
    try:
        owner = os.stat(path).st_uid
    except OSError as exc:
        raise CacheError(f"cannot read {what} {path}: {os_problem(exc, path)}", hint) from None
    if owner != os.geteuid():
        raise CacheError(
            f"{what} ({path}) belongs to another user (uid {owner}, not {os.geteuid()}): refusing to use it", hint
        )


def cache_folder(cache_dir: Path, name: str) -> Path:
    """``cache_dir / name`` (``git``, ``smoke-envs``), made when absent: the cache folder (which may be a link
    the user made) and this one are folders of this user's, and this one is a real folder no other user can
    write, so that no entry in it is put there by someone else."""
    where = "PATCHMGR_CACHE" if os.environ.get("PATCHMGR_CACHE") else "the patchmgr cache"
    hint = "point PATCHMGR_CACHE at a folder of your own, or give this one to your user (chown)"
    for folder in (cache_dir, cache_dir / name):
        if os.path.lexists(folder) and not folder.is_dir():
            what = f"{where} points at a file" if folder == cache_dir else "the patchmgr cache holds a file"
            raise CacheError(
                f"{what}, not a folder: {folder}", "point PATCHMGR_CACHE at a folder of your own (or remove that file)"
            )
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            problem = os_problem(exc, folder)
            raise CacheError(f"cannot create the patchmgr cache {folder}: {problem}", disk_hint(problem)) from None
        check_owned(folder, "the patchmgr cache", hint)
    check_cache_entry(cache_dir / name, "the patchmgr cache", hint)
    return cache_dir / name


def check_cache_entry(
    entry: Path,
    what: str,
    hint: str,
    inside: Iterable[str] = (),
    programs: Mapping[str, Path] | None = None,
    walk: bool = False,
    listed: Iterable[str] = (),
) -> None:
    """Refuse (CacheError, one message) the cache entry ``entry`` unless it is this user's own.

    ``entry`` must be a real folder of this user's that no other user can write; so must each path of
    ``inside`` (relative to ``entry``) that exists, and every folder on the way to it, none of them a link;
    and each entry directly in a folder of ``listed`` (one level: cheap, however many files lie deeper).
    Each path of ``programs`` may be a link (or a chain of them) but must lead to the program given for it.
    With ``walk``, every file, folder and link anywhere below ``entry`` is checked the same way, and a
    link there must lead inside ``entry`` or to one of the ``programs``.
    """
    programs = dict(programs or {})
    allowed = {os.path.realpath(target) for target in programs.values()}
    _check_node(entry, entry, what, hint)
    for relative in inside:
        current = entry
        for part in Path(relative).parts:
            current = current / part
            if not os.path.lexists(current):
                break
            _check_node(current, entry, what, hint)
    for relative in listed:
        listing = entry / relative
        if os.path.isdir(listing) and not os.path.islink(listing):
            _check_node(listing, entry, what, hint)
            for child in sorted(os.listdir(listing)):
                _check_node(listing / child, entry, what, hint)
    for relative, program in programs.items():
        path = entry / relative
        if os.path.lexists(path):
            _check_program(path, program, entry, what, hint)
    if walk:
        for folder, dirs, files in os.walk(entry):  # never follows a link
            for name in dirs + files:
                path = Path(folder) / name
                if path.is_symlink():
                    real = os.path.realpath(path)
                    if real not in allowed and not _inside(Path(real), Path(os.path.realpath(entry))):
                        raise CacheError(
                            f"{what} ({entry}) holds {path}, a symbolic link that leads out of it "
                            f"(to {real}): refusing to use it",
                            hint,
                        )
                    continue
                _check_node(path, entry, what, hint)


def _check_node(path: Path, entry: Path, what: str, hint: str) -> None:
    try:
        info = os.lstat(path)
    except OSError as exc:
        raise CacheError(f"cannot read {what} {path}: {os_problem(exc, path)}", hint) from None
    where = f"{what} ({entry})" if path == entry else f"{path} in {what}"
    if stat.S_ISLNK(info.st_mode):
        raise CacheError(
            f"{where} is a symbolic link (to {os.readlink(path)}): patchmgr reuses only files "
            "and folders of its own in its cache, never what a link names",
            hint,
        )
    if info.st_uid != os.geteuid():
        raise CacheError(
            f"{where} belongs to another user (uid {info.st_uid}, not {os.geteuid()}): refusing to use it", hint
        )
    if info.st_mode & stat.S_IWOTH and not (stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_ISVTX):
        raise CacheError(
            f"{where} can be written by every user (mode {stat.filemode(info.st_mode)}): refusing to use it", hint
        )
    if info.st_mode & stat.S_IWGRP and info.st_gid != os.getegid():
        raise CacheError(
            f"{where} can be written by group {info.st_gid}, which is not your own "
            f"(mode {stat.filemode(info.st_mode)}): refusing to use it",
            hint,
        )
    if path == entry and not stat.S_ISDIR(info.st_mode):
        raise CacheError(f"{where} is not a folder: refusing to use it", hint)


def _check_program(path: Path, program: Path, entry: Path, what: str, hint: str) -> None:
    """``path`` is ``program`` itself (a copy of this user's) or a chain of links that ends at it."""
    if not path.is_symlink():
        _check_node(path, entry, what, hint)
        return
    real = os.path.realpath(path)
    if real != os.path.realpath(program):
        raise CacheError(f"{path} in {what} runs {real}, not {program}: refusing to run it", hint)


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents
