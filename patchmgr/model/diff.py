"""The diff part of a patch file: its file sections and hunks, parsed and checked (the one hunk walker)."""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

import unidiff

from patchmgr.model.errors import PatchFormatError

MAIL_START = re.compile(r"^From [0-9a-f]{40} ")  # the next mail of an mbox: where a diff ends
INDEX_LINE = re.compile(r"^index ([0-9a-f]+)\.\.([0-9a-f]+)(?: (\d+))?$")
HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_C_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}
REGULAR_MODE = "100644"
_SPECIAL_MODES = {"120000": "symbolic link", "160000": "submodule"}
_COUNTS_HINT = "the hunk line counts must match the hunk's lines; regenerate the patch with git format-patch"


# what diff -N writes for the absent side: git's has_epoch_timestamp
_EPOCH_STAMP = re.compile(
    r"^(1969-12-31|1970-01-01) ([0-2][0-9]):([0-5][0-9]):00(?:\.0+)? ([-+])([0-2][0-9]):?([0-5][0-9])$"
)


# git (2.39) takes author dates from 1970 to 2099; apply commits each patch with its Date
_DATE_RANGE = (datetime(1970, 1, 1, tzinfo=UTC), datetime(2100, 1, 1, tzinfo=UTC))


def _lines(text: str) -> list[str]:
    """``text`` split at LF only, endings kept (``str.splitlines`` also splits at FF, VT, CR, U+0085, U+2028...)."""
    lines = text.split("\n")
    last = lines.pop()
    lines = [line + "\n" for line in lines]
    if last:
        lines.append(last)
    return lines


def _bare_lines(text: str) -> list[str]:
    """``text`` split at LF only, without the LF or a CR before it (for mail headers and messages)."""
    return [line[:-1] if line.endswith("\r") else line for line in (raw.rstrip("\n") for raw in _lines(text))]


@dataclass(frozen=True)
class Hunk:
    """One hunk; ``old_lines``/``new_lines`` are context plus removed/added lines, endings kept."""

    header: str
    old_start: int
    new_start: int
    old_lines: tuple[str, ...]
    new_lines: tuple[str, ...]
    leading: int
    trailing: int

    def reversed(self) -> Hunk:
        return Hunk(
            self.header, self.new_start, self.old_start, self.new_lines, self.old_lines, self.leading, self.trailing
        )


@dataclass(frozen=True)
class FileDiff:
    old_path: str | None  # None for a created file
    new_path: str | None  # None for a deleted file
    old_blob: str | None
    new_blob: str | None
    hunks: tuple[Hunk, ...]
    new_mode: str | None = None

    @property
    def path(self) -> str:
        return self.new_path or self.old_path or ""

    @property
    def kind(self) -> str:
        if self.old_path is None:
            return "add"
        if self.new_path is None:
            return "delete"
        if self.old_path != self.new_path:
            return "rename"
        return "modify"

    def reversed(self) -> FileDiff:
        return FileDiff(
            self.new_path, self.old_path, self.new_blob, self.old_blob, tuple(h.reversed() for h in self.hunks)
        )


def _check_hunks(diff_text: str, path: Path, first_line: int) -> str:
    """Check every hunk against its header's line counts, as git reads them; return the diff without its signature.

    unidiff stops reading a hunk once its counts are met and silently skips a
    malformed hunk header, so a wrong count would drop the rest of a hunk (a
    removed line quietly not removed) or a whole hunk. Here any line that
    could be part of a hunk but is not counted by one is an error.
    """
    lines = _lines(diff_text)
    if not lines[-1].endswith("\n"):
        # the patch file lost its final newline (lint says so); it ends the last
        # line of the file, it is not content, so read the line as if it were there
        lines[-1] += "\n"
    index, section = 0, None
    while index < len(lines):
        line = lines[index]
        where = f"{path}:{first_line + index}"
        header = HUNK_HEADER.match(line)
        if line.startswith("diff --git "):
            section = [line.rstrip("\r\n")]
            index += 1
        elif section is not None and line.startswith(("new file mode ", "deleted file mode ")):
            section.append(line.split(" file mode")[0])
            index += 1
        elif header:
            index = _skip_hunk(lines, index, header, path, first_line)
        elif line.startswith("@@"):
            raise PatchFormatError(
                f"{where}: malformed diff: bad hunk header {line.rstrip()!r}",
                "a hunk header reads @@ -START,COUNT +START,COUNT @@",
            )
        elif line.rstrip("\r\n") == "-- " or MAIL_START.match(line):
            # format-patch's signature ends the diff; another mail after it is another commit
            later = next((i for i in range(index, len(lines)) if MAIL_START.match(lines[i])), None)
            if later is not None:
                raise PatchFormatError(
                    f"{path}:{first_line + later}: holds a second commit; a .patch file holds exactly one",
                    "split it: git format-patch writes one file per commit",
                )
            return "".join(lines[:index])
        elif line.startswith("--- ") and index + 1 < len(lines) and lines[index + 1].startswith("+++ "):
            if section is not None:
                _check_names(section, line, lines[index + 1], where)
            index, section = index + 2, None
        elif line[:1] in (" ", "+", "-", "\\"):
            raise PatchFormatError(
                f"{where}: malformed diff: {line.rstrip()!r} is outside any hunk (a hunk header above counts too "
                "few lines, or is missing)",
                _COUNTS_HINT,
            )
        else:
            index += 1
    return "".join(lines)


def _check_names(section: list[str], minus: str, plus: str, where: str) -> None:
    """The ---/+++ names of a "diff --git" section must agree with its header, as git requires.

    unidiff takes the names from the "diff --git" line and ignores the "---"
    line, so a "--- /dev/null" without "new file mode" would silently become a
    modification, and "--- a/other" a change to another file than git reads.
    """
    old, new = (name.split("\t")[0].rstrip("\r\n")[4:] for name in (minus, plus))
    header, created, deleted = section[0], "new" in section, "deleted" in section
    consistent = (
        (old == "/dev/null") == created
        and (new == "/dev/null") == deleted
        and (created or header.startswith(f"diff --git {old} "))
        and (deleted or header.endswith(f" {new}"))
    )
    if not consistent:
        missing_mode = "/dev/null" in (old, new) and not (created or deleted)
        raise PatchFormatError(
            f"{where}: malformed diff: '--- {old}' and '+++ {new}' disagree with {header!r}"
            + (
                " (a created or deleted file needs a 'new file mode' or 'deleted file mode' line)"
                if missing_mode
                else ""
            ),
            "regenerate the patch with git format-patch",
        )


def hunk_end(lines: list[str], index: int) -> int:
    """The index of the first line after the (already checked) hunk whose header is at ``index``."""
    header = HUNK_HEADER.match(lines[index])
    if header is None:
        raise ValueError(f"line {index + 1} is not a hunk header")  # a caller's mistake, not the patch's
    return _skip_hunk(lines, index, header, Path("patch"), 1)


def _skip_hunk(lines: list[str], index: int, header: re.Match[str], path: Path, first_line: int) -> int:
    """The index of the first line after the hunk whose header is at ``index``."""
    old = int(header.group(2)) if header.group(2) is not None else 1
    new = int(header.group(4)) if header.group(4) is not None else 1
    start, want = index, (old, new)
    index += 1
    while old > 0 or new > 0:
        problem = None
        if index == len(lines):
            problem = "the patch ends"
        else:
            line = lines[index]
            # an empty line is an empty context line whose space a mailer or editor stripped (git reads it so)
            kind = " " if line in ("\n", "\r\n") else line[:1]
            old -= kind in (" ", "-")
            new -= kind in (" ", "+")
            if kind not in (" ", "-", "+", "\\"):
                problem = f"line {first_line + index} is not a hunk line"
            elif old < 0 or new < 0:
                problem = f"line {first_line + index} is one more than it counts"
        if problem:
            raise PatchFormatError(
                f"{path}:{first_line + start}: malformed diff: hunk {lines[start].split(' @@')[0]} @@ does not match "
                f"its line counts ({want[0]} old, {want[1]} new lines): {problem}",
                _COUNTS_HINT,
            )
        index += 1
    while index < len(lines) and lines[index].startswith("\\"):
        index += 1
    return index


def _parse_diff(diff_text: str, path: Path, first_line: int) -> tuple[FileDiff, ...]:
    try:
        # newline="\n": lines end at LF only, as git reads them (not at a lone CR)
        patch_set = unidiff.PatchSet(io.StringIO(diff_text, newline="\n"))
    except unidiff.UnidiffParseError as exc:
        # unidiff's message may end with the raw line: keep the error on one line
        raise PatchFormatError(f"{path}: malformed diff ({str(exc).strip()!r})", _COUNTS_HINT) from exc
    if not len(patch_set):
        raise PatchFormatError(
            f"{path}:{first_line}: no file changes found in the diff", "a patch needs at least one 'diff --git' section"
        )
    strip = [None]  # git's -p for plain diffs: guessed from the first file's names, then kept
    return tuple(_file_diff(patched, path, strip) for patched in patch_set)


def _is_epoch(stamp: str | None) -> bool:
    """Whether a plain diff's timestamp is the epoch, which diff -N writes for an absent file (git's rule)."""
    match = _EPOCH_STAMP.match((stamp or "").strip())
    if not match:
        return False
    day, hour, minute, sign, zone_hour, zone_minute = match.groups()
    zone = (int(zone_hour) * 60 + int(zone_minute)) * (-1 if sign == "-" else 1)
    return int(hour) * 60 + int(minute) - zone == (24 * 60 if day == "1969-12-31" else 0)


def _plain_names(patched: unidiff.PatchedFile, path: Path, strip: list) -> tuple[str | None, str | None]:
    """(old path, new path) of a plain diff's file, named as ``git apply`` names it."""
    first, second = (_unquote(name, path) for name in (patched.source_file, patched.target_file))
    if strip[0] is None:
        # git guesses -p0 when neither name has a folder, else keeps its default -p1
        guesses = {name.count("/") > 0 for name in (first, second) if name != "/dev/null"}
        strip[0] = 0 if guesses == {False} else 1

    def stripped(name: str) -> str:
        _strip_prefix(name, "", path)  # an absolute name, or one with "..", is refused as written
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
        return None, _strip_prefix(stripped(second), "", path)
    if second == "/dev/null":
        return _strip_prefix(stripped(first), "", path), None
    old, new = stripped(first), stripped(second)
    # git prefers the shorter name when the other extends it ("x.py" and "x.py.orig" or "x.py~")
    name = _strip_prefix(old if len(old) < len(new) and new.startswith(old) else new, "", path)
    if _is_epoch(patched.source_timestamp):
        return None, name
    if _is_epoch(patched.target_timestamp):
        return name, None
    return name, name


def _file_diff(patched: unidiff.PatchedFile, path: Path, strip: list) -> FileDiff:
    # a plain diff (no "diff --git" line) has no extended header at all
    info = [str(line).rstrip("\r\n") for line in patched.patch_info or ()]
    old_blob = new_blob = None
    modes: dict[str, str] = {}
    names: dict[str, str] = {}
    for line in info:
        match = INDEX_LINE.match(line)
        if match:
            old_blob, new_blob = match.group(1), match.group(2)
            if match.group(3):
                modes["index"] = match.group(3)
            continue
        for key in ("new file mode", "deleted file mode", "old mode", "new mode"):
            if line.startswith(key + " "):
                modes[key] = line[len(key) + 1 :].strip()
        for key in ("rename from", "rename to", "copy from", "copy to"):
            if line.startswith(key + " "):
                names[key] = _unquote(line[len(key) + 1 :], path)
    if any(line.startswith("diff --git ") for line in info):
        old_path = _strip_prefix(_unquote(patched.source_file, path), "a/", path)
        new_path = _strip_prefix(_unquote(patched.target_file, path), "b/", path)
    else:
        old_path, new_path = _plain_names(patched, path, strip)
    shown = new_path or old_path
    if shown is None:
        raise PatchFormatError(
            f"{path}: a file's section has /dev/null on both sides, so it names no file",
            "regenerate the patch with git format-patch",
        )
    if patched.is_binary_file or any(line.startswith(("GIT binary patch", "Binary files ")) for line in info):
        raise PatchFormatError(
            f"{path}: binary change to {shown} is not supported",
            "keep binary files out of patches; ship them another way",
        )
    _check_modes(modes, shown, path)
    if "copy from" in names or "copy to" in names:
        raise PatchFormatError(
            f"{path}: copies {names.get('copy from')} to {names.get('copy to')}; copies are not supported",
            "write the copy as a new file (git diff --no-renames)",
        )
    for key, value in (("rename from", old_path), ("rename to", new_path)):
        if key in names and _strip_prefix(names[key], "", path) != value:
            raise PatchFormatError(
                f"{path}: '{key} {names[key]}' disagrees with the diff's file name {value!r}",
                "regenerate the patch with git format-patch",
            )
    hunks = tuple(_hunk(h) for h in patched)
    if not hunks and old_path == new_path and old_path is not None:
        raise PatchFormatError(
            f"{path}: the section for {shown} changes nothing (no hunks)",
            "a hunk starts with a '@@ -START,COUNT +START,COUNT @@' line; remove the section or regenerate the patch",
        )
    return FileDiff(old_path, new_path, _full(old_blob), _full(new_blob), hunks, modes.get("new file mode"))


def _check_modes(modes: dict[str, str], shown: str, path: Path) -> None:
    """Refuse what apply could not write faithfully: it writes regular files, and only their content."""
    for mode in modes.values():
        if mode in _SPECIAL_MODES:
            raise PatchFormatError(
                f"{path}: {shown} is a {_SPECIAL_MODES[mode]} (mode {mode}); patches may only change regular files",
                "leave it out of the patch",
            )
    if modes.get("old mode", REGULAR_MODE) != modes.get("new mode", modes.get("old mode", REGULAR_MODE)):
        raise PatchFormatError(
            f"{path}: changes the mode of {shown} ({modes['old mode']} to {modes['new mode']}); "
            "mode changes are not supported",
            "leave the mode change out of the patch",
        )
    if modes.get("new file mode", REGULAR_MODE) != REGULAR_MODE:
        raise PatchFormatError(
            f"{path}: creates {shown} with mode {modes['new file mode']}; only regular, "
            f"non-executable files ({REGULAR_MODE}) can be created",
            "create it as 100644",
        )


def _unquote(name: str, path: Path) -> str:
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


def _strip_prefix(name: str, prefix: str, path: Path) -> str | None:
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


def _full(blob: str | None) -> str | None:
    if blob is None or set(blob) == {"0"}:
        return None
    return blob


def _hunk(hunk: unidiff.Hunk) -> Hunk:
    old: list[str] = []
    new: list[str] = []
    kinds: list[str] = []
    for line in hunk:
        kind = line.line_type
        if kind == "\\":
            # "\ No newline at end of file" belongs to the line before it
            previous = kinds[-1] if kinds else " "
            if previous in (" ", "-") and old:
                old[-1] = _strip_eol(old[-1])
            if previous in (" ", "+") and new:
                new[-1] = _strip_eol(new[-1])
            continue
        if kind not in (" ", "-", "+"):
            # unidiff appends a blank line that follows a hunk as an "empty" line:
            # it is not in the hunk (git's counts end the hunk), and counting it would
            # turn the hunk's trailing context into none, anchoring it at the file's end
            continue
        kinds.append(kind)
        if kind in (" ", "-"):
            old.append(line.value)
        if kind in (" ", "+"):
            new.append(line.value)
    leading = next((i for i, k in enumerate(kinds) if k != " "), len(kinds))
    trailing = next((i for i, k in enumerate(reversed(kinds)) if k != " "), len(kinds))
    header = f"@@ -{hunk.source_start},{hunk.source_length} +{hunk.target_start},{hunk.target_length} @@"
    return Hunk(header, hunk.source_start, hunk.target_start, tuple(old), tuple(new), leading, trailing)


def _strip_eol(line: str) -> str:
    # git drops exactly one character, the LF: a CR before it is content (a
    # CRLF file whose last line has no LF ends in a bare CR)
    return line[:-1] if line.endswith("\n") else line
