"""The one hunk walker: a diff's hunks read against their headers' line counts, as git reads them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from patchmgr.model.errors import PatchFormatError
from patchmgr.model.text import split_lines

MAIL_START = re.compile(r"^From [0-9a-f]{40} ")  # the next mail of an mbox: where a diff ends
HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
COUNTS_HINT = "the hunk line counts must match the hunk's lines; regenerate the patch with git format-patch"


@dataclass(frozen=True)
class CheckedDiff:
    """A diff whose hunks match their headers' counts: its text, without a mail signature, and the line in the
    patch file of each hunk header, in the order the hunks come."""

    text: str
    hunk_lines: tuple[int, ...]


def check_hunks(diff_text: str, path: Path, first_line: int) -> CheckedDiff:
    """Check every hunk against its header's line counts, as git reads them (``first_line``: the diff's first
    line in the patch file, for the errors and the hunks' lines).

    unidiff stops reading a hunk once its counts are met and silently skips a
    malformed hunk header, so a wrong count would drop the rest of a hunk (a
    removed line quietly not removed) or a whole hunk. Here any line that
    could be part of a hunk but is not counted by one is an error.
    """
    lines = split_lines(diff_text)
    if not lines[-1].endswith("\n"):
        # the patch file lost its final newline (lint says so); it ends the last
        # line of the file, it is not content, so read the line as if it were there
        lines[-1] += "\n"
    index, section = 0, None
    hunk_lines: list[int] = []
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
            hunk_lines.append(first_line + index)
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
            return CheckedDiff("".join(lines[:index]), tuple(hunk_lines))
        elif line.startswith("--- ") and index + 1 < len(lines) and lines[index + 1].startswith("+++ "):
            if section is not None:
                _check_names(section, line, lines[index + 1], where)
            index, section = index + 2, None
        elif line[:1] in (" ", "+", "-", "\\"):
            raise PatchFormatError(
                f"{where}: malformed diff: {line.rstrip()!r} is outside any hunk (a hunk header above counts too "
                "few lines, or is missing)",
                COUNTS_HINT,
            )
        else:
            index += 1
    return CheckedDiff("".join(lines), tuple(hunk_lines))


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
                COUNTS_HINT,
            )
        index += 1
    while index < len(lines) and lines[index].startswith("\\"):
        index += 1
    return index
