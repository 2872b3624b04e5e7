"""A checked diff read into values (with unidiff): each file's names, blobs and mode, and its hunks."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from pathlib import Path

import unidiff

from patchmgr.model.diff.binary import BINARY_NOTE, BINARY_START, BinaryChange, parse_binary
from patchmgr.model.diff.hunks import EXECUTABLE_MODE, REGULAR_MODE, SYMLINK_MODE, FileDiff, Hunk
from patchmgr.model.diff.names import plain_names, strip_prefix, unquote
from patchmgr.model.diff.walk import COUNTS_HINT, CheckedDiff
from patchmgr.model.errors import PatchFormatError

INDEX_LINE = re.compile(r"^index ([0-9a-f]+)\.\.([0-9a-f]+)(?: (\d+))?$")
_SUBMODULE_MODE = "160000"
_MODE = re.compile(r"[0-7]{1,6}")


def parse_diff(diff: CheckedDiff, path: Path, first_line: int) -> tuple[FileDiff, ...]:
    """The files of a diff ``check_hunks`` checked; each hunk keeps the line of its header in the patch file."""
    try:
        # newline="\n": lines end at LF only, as git reads them (not at a lone CR)
        patch_set = unidiff.PatchSet(io.StringIO(diff.text, newline="\n"))
    except unidiff.UnidiffParseError as exc:
        # unidiff's message may end with the raw line: keep the error on one line
        raise PatchFormatError(f"{path}: malformed diff ({str(exc).strip()!r})", COUNTS_HINT) from exc
    if not len(patch_set):
        raise PatchFormatError(
            f"{path}:{first_line}: no file changes found in the diff", "a patch needs at least one 'diff --git' section"
        )
    if sum(len(patched) for patched in patch_set) != len(diff.hunk_lines):
        # both read the hunks of a checked diff alike; a difference would misplace every hunk's line after it
        raise PatchFormatError(
            f"{path}:{first_line}: malformed diff: its hunks cannot be read alike by git and patchmgr",
            "regenerate the patch with git format-patch",
        )
    strip = [None]  # git's -p for plain diffs: guessed from the first file's names, then kept
    hunk_lines = iter(diff.hunk_lines)
    binaries = iter(_binary_sections(diff.text, path, first_line))
    files = [_file_diff(patched, path, strip, hunk_lines, binaries) for patched in patch_set]
    if not any(files):
        raise PatchFormatError(
            f"{path}:{first_line}: no file changes found in the diff", "a patch needs at least one 'diff --git' section"
        )
    return tuple(file for file in files if file is not None)


def _binary_sections(text: str, path: Path, first_line: int) -> list[BinaryChange | None]:
    """Each ``diff --git`` section's binary change, in order (None: a text section): unidiff marks a section
    binary but keeps none of its data."""
    lines = text.split("\n")
    starts = [index for index, line in enumerate(lines) if line.startswith("diff --git ")]
    found: list[BinaryChange | None] = []
    for start, end in zip(starts, [*starts[1:], len(lines)], strict=False):
        change, full = None, False
        for at in range(start + 1, end):
            line = lines[at].rstrip("\r")
            index = INDEX_LINE.match(line)
            if index:
                full = len(index.group(1)) == len(index.group(2)) >= 40
            elif line.startswith(("--- ", "@@")):
                break  # a text section: its hunks may hold any line
            elif line == BINARY_START:
                change = BinaryChange(*parse_binary(lines[at + 1 : end], path, first_line + at + 1), full)
                break
            elif line.startswith(BINARY_NOTE):
                change = BinaryChange(None, None, full)
                break
        found.append(change)
    return found


def _file_diff(
    patched: unidiff.PatchedFile,
    path: Path,
    strip: list,
    hunk_lines: Iterator[int],
    binaries: Iterator[BinaryChange | None],
) -> FileDiff | None:
    # a plain diff (no "diff --git" line) has no extended header at all
    info = [str(line).rstrip("\r\n") for line in patched.patch_info or ()]
    git_section = any(line.startswith("diff --git ") for line in info)
    if not git_section and patched.is_binary_file:
        return None  # a plain diff's "Binary files x and y differ": git apply and patch pass over it, as here
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
                names[key] = unquote(line[len(key) + 1 :], path)
    if any(line.startswith("diff --git ") for line in info):
        old_path = strip_prefix(unquote(patched.source_file, path), "a/", path)
        new_path = strip_prefix(unquote(patched.target_file, path), "b/", path)
    else:
        old_path, new_path = plain_names(patched, path, strip)
    shown = new_path or old_path
    if shown is None:
        raise PatchFormatError(
            f"{path}: a file's section has /dev/null on both sides, so it names no file",
            "regenerate the patch with git format-patch",
        )
    binary = next(binaries, None) if git_section else None
    old_mode, new_mode = _modes(modes, shown, path)
    if "copy from" in names or "copy to" in names:
        raise PatchFormatError(
            f"{path}: copies {names.get('copy from')} to {names.get('copy to')}; copies are not supported",
            "write the copy as a new file (git diff --no-renames)",
        )
    for key, value in (("rename from", old_path), ("rename to", new_path)):
        if key in names and strip_prefix(names[key], "", path) != value:
            raise PatchFormatError(
                f"{path}: '{key} {names[key]}' disagrees with the diff's file name {value!r}",
                "regenerate the patch with git format-patch",
            )
    hunks = tuple(_hunk(h, next(hunk_lines)) for h in patched)
    changes_mode = new_mode is not None and new_mode != old_mode
    if not hunks and binary is None and not changes_mode and old_path == new_path and old_path is not None:
        raise PatchFormatError(
            f"{path}: the section for {shown} changes nothing (no hunks)",
            "a hunk starts with a '@@ -START,COUNT +START,COUNT @@' line; remove the section or regenerate the patch",
        )
    return FileDiff(old_path, new_path, _full(old_blob), _full(new_blob), hunks, new_mode, old_mode, binary)


def _modes(modes: dict[str, str], shown: str, path: Path) -> tuple[str | None, str | None]:
    """The (old, new) modes a section gives, as git apply reads them: "old mode", "deleted file mode" or the
    index line's for the old side, "new mode" or "new file mode" for the new; a regular file's mode made 100644
    or 100755 by its executable bit, as git does (canon_mode). A submodule is refused: patchmgr writes files, and a
    checkout has no blobs below a gitlink."""
    old = modes.get("old mode") or modes.get("deleted file mode") or modes.get("index")
    # the index line's mode is the old side's alone: git apply warns where the file's differs, and keeps the file's
    new = modes.get("new mode") or modes.get("new file mode")
    said = []
    for mode in (old, new):
        if mode == _SUBMODULE_MODE:
            raise PatchFormatError(
                f"{path}: {shown} is a submodule (mode {mode}); patches may only change files and links",
                "leave it out of the patch",
            )
        said.append(None if mode is None else _canonical(mode, shown, path))
    return said[0], said[1]


def _canonical(mode: str, shown: str, path: Path) -> str:
    """A file's or a link's mode as git records it: a regular file 100755 when its owner may run it, else
    100644 (git's canon_mode)."""
    value = int(mode, 8) if _MODE.fullmatch(mode) else -1
    if value & 0o170000 == 0o120000:
        return SYMLINK_MODE
    if value & 0o170000 == 0o100000:
        return EXECUTABLE_MODE if value & 0o100 else REGULAR_MODE
    raise PatchFormatError(
        f"{path}: invalid mode {mode} for {shown}: neither a file nor a link", "regenerate the patch with git"
    )


def _full(blob: str | None) -> str | None:
    if blob is None or set(blob) == {"0"}:
        return None
    return blob


def _hunk(hunk: unidiff.Hunk, patch_line: int) -> Hunk:
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
    return Hunk(header, hunk.source_start, hunk.target_start, tuple(old), tuple(new), leading, trailing, patch_line)


def _strip_eol(line: str) -> str:
    # git drops exactly one character, the LF: a CR before it is content (a
    # CRLF file whose last line has no LF ends in a bare CR)
    return line[:-1] if line.endswith("\n") else line
