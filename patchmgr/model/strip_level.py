"""A patch written for ``patch -pN`` made a ``-p1`` patch, as git and patchmgr read every patch.

Only the file names of its diff change: each ``---``/``+++`` name (and a ``diff --git`` line's two) loses
its first N parts and gets git's ``a/``/``b/``; its message, its hunks and every other byte stay as they
are. Hunks are walked by their counts, so a removed line that reads ``-- x`` is never taken for a name.
"""

from __future__ import annotations

import re
from pathlib import Path

from patchmgr.model.errors import PatchFormatError

_HUNK = re.compile(rb"@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")


def as_strip_one(data: bytes, strip: int, path: Path) -> bytes:
    """``data`` (a patch applied with ``-p<strip>``) with its names as ``-p1`` names them."""
    if strip == 1:
        return data
    lines = data.split(b"\n")
    out: list[bytes] = []
    old = new = 0
    for index, line in enumerate(lines):
        if old > 0 or new > 0:  # inside a hunk: its lines are content
            kind = line[:1]
            if kind in (b" ", b"") or line == b"\r":
                old, new = old - 1, new - 1
            elif kind == b"-":
                old -= 1
            elif kind == b"+":
                new -= 1
            out.append(line)
            continue
        hunk = _HUNK.match(line)
        if hunk:
            old = int(hunk[1]) if hunk[1] is not None else 1
            new = int(hunk[2]) if hunk[2] is not None else 1
        elif line.startswith(b"--- ") and index + 1 < len(lines) and lines[index + 1].startswith(b"+++ "):
            line = b"--- " + _renamed(line[4:], strip, b"a/", path, index + 1)
        elif line.startswith(b"+++ ") and out and out[-1].startswith(b"--- "):
            line = b"+++ " + _renamed(line[4:], strip, b"b/", path, index + 1)
        elif line.startswith(b"diff --git "):
            names = line[len(b"diff --git ") :].split(b" ")
            if len(names) != 2:
                raise PatchFormatError(
                    f"{path}:{index + 1}: cannot tell the two names of this diff --git line apart for -p{strip}",
                    "regenerate the patch with git diff (its a/ and b/ names), then list it without -p",
                )
            renamed = [
                _renamed(name, strip, side, path, index + 1) for name, side in zip(names, (b"a/", b"b/"), strict=True)
            ]
            line = b"diff --git " + b" ".join(renamed)
        out.append(line)
    return b"\n".join(out)


def _renamed(field: bytes, strip: int, prefix: bytes, path: Path, line: int) -> bytes:
    """A name field (the name, then perhaps a tab and a date) with the name as -p1 reads it."""
    name, tab, rest = field.partition(b"\t")
    ending = b"\r" if name.endswith(b"\r") and not tab else b""
    name = name.removesuffix(ending)
    if name == b"/dev/null":
        return field
    parts = [part for part in name.split(b"/") if part]
    if len(parts) <= strip:
        raise PatchFormatError(
            f"{path}:{line}: the name {name.decode('utf-8', 'replace')!r} has no {strip + 1} parts to strip "
            f"{strip} of (-p{strip})",
            "check the -p option of the patch's line in the series",
        )
    kept = [part for part in parts[strip:] if part != b"."]  # "./x" under -p0 is x
    return prefix + b"/".join(kept) + tab + rest + ending
