"""A quilt ``series`` file, read as quilt and Debian's dpkg-source read it; and written back.

One patch per line, in the order they apply: its file name relative to the series' folder (subfolders
allowed), then options. ``#`` at the start of a line or after a space starts a comment; blank lines and
comment lines are skipped. The one option patchmgr follows is quilt's ``-pN`` (the number of leading
path parts ``patch`` strips; ``-p1`` when none is given). ``-R`` (apply reversed) and any other option
are refused with the line: applying the patch otherwise than quilt would is worse than stopping.

A patch's id is its file name without ``.patch`` or ``.diff``, a subfolder's name joined to it with ``-``
(``fixes/crash.patch``: ``fixes-crash``), so that ids stay file names in ``patches/<upstream>/``.

Import keeps the series file as it was (``patches/<upstream>/<target>.series``) so that export can give it
back byte for byte, comments, blank lines and file names included (``series_out``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import takewhile
from pathlib import PurePosixPath

from patchmgr.model.errors import UsageError
from patchmgr.model.manifest import PATCH_ID

SERIES = "series"
DEFAULT_STRIP = 1
_COMMENT = re.compile(r"(?:^|[ \t])#.*$")
_STRIP = re.compile(r"-p(\d+)\Z")
_STRIP_OPTION = re.compile(r"[ \t]+-p\d+(?=[ \t\r]|$)")  # a -pN option in a series line (CRLF ones too)
_SUFFIXES = (".patch", ".diff")


@dataclass(frozen=True)
class QuiltEntry:
    """One patch of a series: its file (relative to the series' folder), its -p level, its line."""

    name: str
    strip: int
    line: int

    @property
    def id(self) -> str:
        return patch_id_of(self.name)


@dataclass(frozen=True)
class QuiltSeries:
    entries: tuple[QuiltEntry, ...]


def patch_id_of(name: str) -> str:
    """``fixes/crash.patch`` -> ``fixes-crash``; a name without a known suffix keeps its whole last part."""
    parts = PurePosixPath(name).parts
    last = parts[-1]
    for suffix in _SUFFIXES:
        if last.endswith(suffix) and len(last) > len(suffix):
            last = last[: -len(suffix)]
            break
    return "-".join((*parts[:-1], last))


def parse_series(text: str, where: str) -> QuiltSeries:
    """The entries of a series file's ``text``; ``where`` names it in errors. Bad input: one UsageError."""
    entries: list[QuiltEntry] = []
    ids: dict[str, QuiltEntry] = {}
    for number, raw in enumerate(text.split("\n"), 1):
        line = _COMMENT.sub("", raw.removesuffix("\r")).strip()
        if not line:
            continue
        name, *options = line.split()
        at = f"{where}:{number}"
        strip = DEFAULT_STRIP
        for option in options:
            level = _STRIP.match(option)
            if level:
                strip = int(level[1])
            elif option == "-R":
                raise UsageError(
                    f"{at}: {name} is applied reversed (-R); patchmgr applies each patch as it is written",
                    f"reverse the patch file itself (interdiff or `patch -R` then a new diff) and drop -R from {at}",
                )
            else:
                raise UsageError(
                    f"{at}: option {option!r} of {name} is not one patchmgr follows (only -pN)",
                    f"take it out of {at}, or make the patch apply without it",
                )
        pure = PurePosixPath(name)
        if pure.is_absolute() or ".." in pure.parts or name.endswith("/"):
            raise UsageError(
                f"{at}: {name!r} is not a file inside the series' folder",
                "name each patch relative to the folder holding the series (no '..', no absolute path)",
            )
        entry = QuiltEntry(pure.as_posix(), strip, number)
        if not PATCH_ID.match(entry.id):
            raise UsageError(
                f"{at}: the patch file name {name!r} gives the id {entry.id!r}, which cannot name a patch file",
                "rename the patch to letters, digits, '.', '_', '+' and '-' (and its line in the series)",
            )
        clash = ids.get(entry.id)
        if clash is not None:
            raise UsageError(
                f"{at}: {name} and {clash.name} (line {clash.line}) both give the patch id {entry.id!r}",
                "rename one of them (the id is the file name, a subfolder joined with '-')",
            )
        ids[entry.id] = entry
        entries.append(entry)
    if not entries:
        raise UsageError(f"{where} lists no patches", "add one patch file name per line, in the order they apply")
    return QuiltSeries(tuple(entries))


def series_text(names: list[str]) -> str:
    """A series file naming ``names`` in order, each applied with quilt's default -p1."""
    return "".join(f"{name}\n" for name in names)


def kept_series_name(target: str) -> str:
    """The file, in ``patches/<upstream>/``, that keeps the series a target's patches were imported from."""
    return f"{target}.series"


@dataclass(frozen=True)
class SeriesOut:
    """A series to write: its text, each patch's file name in it (by id), and whether the kept series gave it."""

    text: str
    names: dict[str, str]
    kept: bool


def series_out(ids: list[str], kept: str | None, where: str) -> SeriesOut:
    """The series for the patches ``ids`` (the manifest's order). From ``kept``, the series they were imported
    from, when its patches still come in that order: its lines as they were (comments, blank lines, file names,
    subfolders), a line of a patch that left the series taken out, a patch added since given its own line
    (``<id>.patch``) after the one before it. A ``-pN`` other than ``-p1`` is taken out of its line: the patch
    holds ``-p1`` names since the import (``model.strip_level``). Without a kept series, or when the order
    changed (quilt's order is the series' own), a plain series of ``<id>.patch`` lines."""
    plain = SeriesOut(series_text([f"{pid}.patch" for pid in ids]), {pid: f"{pid}.patch" for pid in ids}, False)
    if kept is None:
        return plain
    entries = {entry.line: entry for entry in parse_series(kept, where).entries}
    listed = set(ids)
    still = [entry.id for entry in entries.values() if entry.id in listed]
    if still != [pid for pid in ids if pid in set(still)]:
        return plain
    names = {entry.id: entry.name for entry in entries.values() if entry.id in listed}
    body, ending = (kept[:-1], "\n") if kept.endswith("\n") else (kept, "")
    lines: list[str] = []
    waiting = iter(ids)
    for number, raw in enumerate(body.split("\n"), 1):
        entry = entries.get(number)
        if entry is None:
            lines.append(raw)
        elif entry.id in listed:
            lines += [f"{pid}.patch" for pid in takewhile(entry.id.__ne__, waiting)]  # those added before it
            lines.append(raw if entry.strip == DEFAULT_STRIP else _STRIP_OPTION.sub("", raw, count=1))
    lines += [f"{pid}.patch" for pid in waiting]
    names = {pid: names.get(pid, f"{pid}.patch") for pid in ids}
    return SeriesOut("\n".join(lines) + ending, names, True)
