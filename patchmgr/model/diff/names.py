"""File names in a diff as git reads them: C-quoted names, the ``a/``/``b/`` prefixes, plain diffs' names."""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

import unidiff

from patchmgr.model.errors import PatchFormatError

_C_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


# what diff -N writes for the absent side: git's has_epoch_timestamp
_EPOCH_STAMP = re.compile(
    r"^(1969-12-31|1970-01-01) ([0-2][0-9]):([0-5][0-9]):00(?:\.0+)? ([-+])([0-2][0-9]):?([0-5][0-9])$"
)


def _is_epoch(stamp: str | None) -> bool:
    """Whether a plain diff's timestamp is the epoch, which diff -N writes for an absent file (git's rule)."""
    match = _EPOCH_STAMP.match((stamp or "").strip())
    if not match:
        return False
    day, hour, minute, sign, zone_hour, zone_minute = match.groups()
    zone = (int(zone_hour) * 60 + int(zone_minute)) * (-1 if sign == "-" else 1)
    return int(hour) * 60 + int(minute) - zone == (24 * 60 if day == "1969-12-31" else 0)


def plain_names(patched: unidiff.PatchedFile, path: Path, strip: list) -> tuple[str | None, str | None]:
    """(old path, new path) of a plain diff's file, named as ``git apply`` names it."""
    first, second = (unquote(name, path) for name in (patched.source_file, patched.target_file))
    if strip[0] is None:
        # git guesses -p0 when neither name has a folder, else keeps its default -p1
        guesses = {name.count("/") > 0 for name in (first, second) if name != "/dev/null"}
        strip[0] = 0 if guesses == {False} else 1

    def stripped(name: str) -> str:
        strip_prefix(name, "", path)  # an absolute name, or one with "..", is refused as written
        name = re.sub(r"/+", "/", name)
        if strip[0]:
            if "/" not in name:
                raise PatchFormatError(
                    f"{path}: plain diff names {name!r} without the folder the other names have",
                    "regenerate the patch (git diff, or diff -ruN old new from the folder above)",
                )
            name = name.split("/", 1)[1]
        return name

    if first == "/dev/null":
        return None, strip_prefix(stripped(second), "", path)
    if second == "/dev/null":
        return strip_prefix(stripped(first), "", path), None
    old, new = stripped(first), stripped(second)
    # git prefers the shorter name when the other extends it ("x.py" and "x.py.orig" or "x.py~")
    name = strip_prefix(old if len(old) < len(new) and new.startswith(old) else new, "", path)
    if _is_epoch(patched.source_timestamp):
        return None, name
    if _is_epoch(patched.target_timestamp):
        return name, None
    return name, name


def unquote(name: str, path: Path) -> str:
    """A file name as git wrote it: C-quoted (``"a/\\303\\251.py"``) when it has unusual bytes."""
    name = name.rstrip("\r")  # a patch saved with CRLF endings: the CR is not part of the name
    if not (len(name) >= 2 and name[0] == name[-1] == '"'):
        return name
    body, raw, index = name[1:-1], bytearray(), 0
    while index < len(body):
        char = body[index]
        octal = body[index + 1 : index + 4]
        if char != "\\":
            raw += char.encode("utf-8", "surrogateescape")
            index += 1
        elif body[index + 1 : index + 2] in _C_ESCAPES:
            raw.append(_C_ESCAPES[body[index + 1]])
            index += 2
        elif re.fullmatch(r"[0-3][0-7][0-7]", octal):
            raw.append(int(octal, 8))
            index += 4
        else:
            raise PatchFormatError(f"{path}: file name {name} has a bad escape", "regenerate the patch with git")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PatchFormatError(f"{path}: file name {name} is not UTF-8", "rename the file upstream") from exc


def strip_prefix(name: str, prefix: str, path: Path) -> str | None:
    if name == "/dev/null":
        return None
    name = name[len(prefix) :] if name.startswith(prefix) else name
    pure = PurePosixPath(name)
    if pure.is_absolute() or ".." in pure.parts or not pure.parts or name.startswith("~"):
        raise PatchFormatError(
            f"{path}: path {name!r} leaves the upstream tree", "patch paths must be relative to the upstream's root"
        )
    # git refuses these too (verify_path): a patch must not reach into a repository's
    # own metadata, and a name with a control character cannot be passed to git safely
    if any(part.lower() == ".git" for part in pure.parts):
        raise PatchFormatError(f"{path}: path {name!r} is inside a .git folder", "patch only the upstream's files")
    if any(ord(char) < 32 or char == "\x7f" for char in name):
        raise PatchFormatError(f"{path}: path {name!r} holds a control character", "rename the file upstream")
    if name.startswith(":"):
        # apply hands the paths to git add, where ":/top" is pathspec magic (":/" = the whole tree)
        raise PatchFormatError(
            f"{path}: path {name!r} starts with ':', which git reads as pathspec magic "
            "(':/top' would name the whole tree, not a file)",
            "patch files whose names do not start with ':'",
        )
    return str(pure)
