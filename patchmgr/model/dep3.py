"""A patch's header read as the DEP-3 specification (Debian's Patch Tagging Guidelines) reads it.

The header is what comes before the diff, up to a line ``---`` (after it: a diffstat, not meta-information).
Its first set of fields starts on the first non-empty line; a field line is ``Name: value``, and a line that
starts with a space continues the field before it (so a Description holds a long description). A set ends
at the first empty line; what follows is free text, and a later paragraph may start a second set of fields
(pseudo-headers, as ``git format-patch`` mails carry them after the message). Field names are read in any
case (``origin`` is ``Origin``) and a field may come more than once (two ``Author`` lines). A header that
dpatch keeps in shell comments (each line starting with ``#``) is read without the ``#``.

A git mail's first line (``From <commit> <date>``) is not a field; its ``From:`` and ``Subject:`` headers are
DEP-3's ``From`` (``Author``'s alias) and ``Subject`` (``Description``'s alias).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from patchmgr.model.text import bare_lines

_FIELD = re.compile(r"([A-Za-z][A-Za-z0-9-]*):(?:[ \t]+(.*)|)$")
_MBOX = re.compile(r"From [0-9a-f]{7,40} ")
_DPATCH = re.compile(r"#+ ?")


@dataclass(frozen=True)
class Dep3Header:
    fields: tuple[tuple[str, str], ...]  # (name as written, value: continuation lines joined with "\n")

    def values(self, name: str) -> list[str]:
        wanted = name.lower()
        return [value for key, value in self.fields if key.lower() == wanted]

    def first(self, *names: str) -> str | None:
        """The first non-empty value of any of ``names`` (aliases), in the header's order."""
        wanted = {name.lower() for name in names}
        return next((value for key, value in self.fields if key.lower() in wanted and value.strip()), None)


def read_header(message: str) -> Dep3Header:
    """The DEP-3 fields of ``message``: a patch's text before its diff."""
    lines = bare_lines(message)
    start = next((n for n, line in enumerate(lines) if line.strip()), len(lines))
    if start < len(lines) and _MBOX.match(lines[start]):
        start += 1
    lines = lines[start:]
    if lines and lines[0].startswith("#"):
        lines = [_DPATCH.sub("", line, count=1) if line.startswith("#") else line for line in lines]
    fields: list[tuple[str, str]] = []
    in_fields, paragraph_start = False, True  # a paragraph is a set of fields when its first line is a field
    for line in lines:
        if line.rstrip() == "---":
            break
        if not line.strip():
            in_fields, paragraph_start = False, True
            continue
        field = _FIELD.match(line)
        if paragraph_start:
            in_fields, paragraph_start = field is not None, False
        if not in_fields:
            continue
        if field is not None:
            fields.append((field[1], (field[2] or "").strip()))
        elif line[:1] in (" ", "\t") and fields:
            name, value = fields[-1]
            fields[-1] = (name, f"{value}\n{line.strip()}")
        else:
            in_fields = False  # free text inside the paragraph: the set of fields ended
    return Dep3Header(tuple(fields))
