"""Guards: cheap facts about the patched tree that any correct version of a patch keeps true.

A patch states them in its header, one ``Guard:`` field each (the field may repeat)::

    Guard: absent /torch\\.cuda\\.nvtx\\./ in src/pkg/model.py
    Guard: present /"MindSpeedTELinear"/ in src/pkg/mapping.py
    Guard: absent /if not self\\.training/ in src/pkg/*.py

``absent`` or ``present``, a regular expression in RE2 syntax between slashes
(a slash inside it needs no escape: the expression ends at the last ``/`` before
`` in ``), then ``in`` and one path or glob (``fnmatch``: ``*`` also crosses
``/``), relative to the upstream's root, without spaces. The expression is
searched in each line of each file (lines without their ending), so ``^``
anchors at a line's start; flags go inline (``(?i)``). RE2 matches in time
linear in the text, whatever the expression (see model/guard_regex.py).

- ``absent``: no line matches; each line that does is an offense ``path:line: text``.
  The first ``MAX_OFFENSES`` are kept, the others only counted (up to ``MAX_COUNT``).
- ``present``: some line of some file matches; none anywhere is one offense.
- A plain path that is not a file of the patched tree, or a glob that matches
  no file, breaks the guard (an ``error``): a guard must look at something, so
  a file that moved upstream is noticed instead of passing unread.
- A glob is matched against the tree's file list when the reader can list
  (a git source can); otherwise (a release, an installed environment) against
  the paths of the patched tree the patch itself touches, and the result says so.
- A guard reads at most ``MAX_BYTES`` of files and takes at most ``MAX_SECONDS``;
  one that needs more breaks (an ``error`` saying where it stopped): its work is
  bounded however large the tree and however costly the expression.

All of this is pure but for the clock of ``MAX_SECONDS``: text in, values out. The check layer (``engine.classify``)
evaluates a patch's guards on the tree after its whole series has been applied.
"""

from __future__ import annotations

import fnmatch
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from typing import TypeGuard

from patchmgr.model.guard_regex import GuardRegexError, LineRegex, TooSlow, as_lines, line_at


class GuardKind(StrEnum):
    """Whether a guard's lines must be absent from the patched files, or present in them."""

    ABSENT = "absent"
    PRESENT = "present"


KINDS = tuple(GuardKind)
SYNTAX = "Guard: absent|present /REGEX/ in PATH-OR-GLOB"
_FORM = re.compile(r"^(?P<kind>\S+)\s+/(?P<regex>.*)/\s+in\s+(?P<where>\S+)\s*$")
_GLOB_CHARS = set("*?[")
MAX_TEXT = 160  # an offending line is shown up to this many characters
MAX_OFFENSES = 10  # offenses kept per guard: enough to see what breaks it; the others are counted
MAX_BYTES = 256 << 20  # bytes of files one guard reads at most: its time is bounded, however large the tree
MAX_COUNT = 1_000_000  # offenses one guard counts at most: each costs Python's time, a line does not
# seconds one guard may take: RE2 is linear in the text, but its factor grows with the expression (a large
# repeat like a[ab]{999} on text that defeats RE2's DFA costs seconds per MiB), so the clock bounds it too
MAX_SECONDS = 10.0


class GuardSyntaxError(ValueError):
    """A ``Guard:`` value that cannot be read; the message says what is wrong (the caller adds where), ``hint``
    what to write when the form is right but the expression is not."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


REGEX_HINT = (
    "write the expression in RE2 syntax, searched in each line (^ and $ anchor at the line): no "
    "backreferences, no lookaround (see the README's Guards)"
)


@dataclass(frozen=True)
class Guard:
    text: str  # the header value as written
    kind: GuardKind
    pattern: LineRegex
    where: str  # a path, or a glob

    @property
    def is_glob(self) -> bool:
        return bool(_GLOB_CHARS & set(self.where))


@lru_cache(maxsize=512)
def parse_guard(text: str) -> Guard:
    """One ``Guard:`` value, or ``GuardSyntaxError`` saying what is wrong with it."""
    value = text.strip()
    match = _FORM.match(value)
    if match is None:
        raise GuardSyntaxError(f"Guard {value!r} is not of the form {SYNTAX!r}")
    kind, regex, where = match["kind"], match["regex"], match["where"]
    if kind not in KINDS:
        raise GuardSyntaxError(f"Guard {value!r} starts with {kind!r}: give absent or present")
    if not regex:
        raise GuardSyntaxError(f"Guard {value!r} has an empty regular expression")
    try:
        pattern = LineRegex(regex)
    except GuardRegexError as exc:
        raise GuardSyntaxError(f"Guard {value!r}: {exc}", REGEX_HINT) from None
    if where.startswith("/") or ".." in where.split("/") or "\\" in where:
        raise GuardSyntaxError(
            f"Guard {value!r}: {where!r} must be a path relative to the upstream's root, with / and without '..'"
        )
    return Guard(value, GuardKind(kind), pattern, where)


@dataclass(frozen=True)
class Verdict:
    """A guard evaluated: whether it holds, its first ``MAX_OFFENSES`` offenses and how many there are in all
    (``count``), or why it could not be evaluated."""

    holds: bool
    offenses: tuple[str, ...] = ()
    error: str | None = None
    count: int = 0


def more_offenses(shown: int, count: int) -> str | None:
    """The line that stands for the offenses not kept (``… and 9,990 more (10,000 in all)``), or None."""
    if count <= shown:
        return None
    if count >= MAX_COUNT:
        return f"… and at least {count - shown:,} more (counting stops at {MAX_COUNT:,})"
    return f"… and {count - shown:,} more ({count:,} in all)"


def evaluate(
    guard: Guard, read: Callable[[str], bytes | None], listing: Iterable[str] | None, touched: Iterable[str] = ()
) -> Verdict:
    """Evaluate ``guard`` on a tree: ``read(path)`` gives a file's bytes (None: not a file); ``listing`` is every
    file's path, or None when the tree cannot list (a glob then looks only at ``touched``). The files are read
    one at a time, each let go once searched, up to ``MAX_BYTES`` in all."""
    offenses: list[str] = []
    count = size = 0
    looked = False
    deadline = time.monotonic() + MAX_SECONDS
    for path in _paths(guard, listing, touched):
        if time.monotonic() > deadline:
            return Verdict(False, tuple(offenses), _too_slow(f"before {path}"), count)
        data = read(path)
        if not _is_file(data):
            continue
        looked = True
        size += len(data)
        if size > MAX_BYTES:
            return Verdict(
                False,
                tuple(offenses),
                f"{guard.where} holds more than {_size(MAX_BYTES)} of files "
                f"(stopped at {path}); a guard reads at most that much: name fewer files",
                count,
            )
        text, number, counted = as_lines(data), 1, 0
        try:
            for start in guard.pattern.line_starts(text, deadline):
                if guard.kind is GuardKind.PRESENT:
                    return Verdict(True)
                count += 1
                if len(offenses) < MAX_OFFENSES:
                    number, counted = number + text.count(b"\n", counted, start), start
                    offenses.append(f"{path}:{number}: {_shown(line_at(text, start))}")
                if count >= MAX_COUNT:
                    return Verdict(False, tuple(offenses), count=count)
        except TooSlow as stopped:
            line = text.count(b"\n", 0, stopped.position) + 1
            return Verdict(False, tuple(offenses), _too_slow(f"at {path}:{line}"), count)
    if not looked:
        return Verdict(False, error=_nothing_to_read(guard, listing))
    if guard.kind is GuardKind.ABSENT:
        return Verdict(not count, tuple(offenses), count=count)
    return Verdict(False, (f"{guard.where}: no line matches /{guard.pattern.pattern}/",), count=1)


def _too_slow(where: str) -> str:
    return (
        f"stopped after {MAX_SECONDS:g} s {where}: a guard may take at most that long; make its expression "
        "simpler (a smaller repeat count) or name fewer files"
    )


def _paths(guard: Guard, listing: Iterable[str] | None, touched: Iterable[str]) -> list[str]:
    if not guard.is_glob:
        return [guard.where]
    pool = sorted(set(listing) if listing is not None else set(touched))
    return [p for p in pool if fnmatch.fnmatchcase(p, guard.where)]


def _nothing_to_read(guard: Guard, listing: Iterable[str] | None) -> str:
    """Why a guard breaks when it found no file to read: a guard must look at something."""
    if not guard.is_glob:
        return f"{guard.where} is not a file of the patched tree"
    among = "the tree's files" if listing is not None else "the files the patch touches (this source cannot list)"
    return f"no file matches {guard.where} among {among}"


def _is_file(data: bytes | None) -> TypeGuard[bytes]:
    """A regular file's bytes: not absent, not a link's target, not a submodule (see ``engine.results.TreeReader``)."""
    return data is not None and not getattr(data, "is_symlink", False) and not getattr(data, "is_submodule", False)


def _size(count: int) -> str:
    return f"{count >> 20} MiB" if count >= 1 << 20 else f"{count:,} bytes"


def _shown(line: bytes) -> str:
    """An offending line as shown: stripped, at most ``MAX_TEXT`` characters, decoding only that much of it."""
    line = line.strip()
    head = 4 * (MAX_TEXT + 1)  # bytes enough for MAX_TEXT + 1 characters of up to 4 bytes each
    text = line[:head].decode("utf-8", "replace").strip()
    return text[: MAX_TEXT - 1] + "…" if len(text) > MAX_TEXT or len(line) > head else text
