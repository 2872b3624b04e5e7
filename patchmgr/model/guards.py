"""Guards: cheap facts about the patched tree that any correct version of a patch keeps true.

A patch states them in its header, one ``Guard:`` field each (the field may repeat)::

    Guard: absent /torch\\.cuda\\.nvtx\\./ in src/pkg/model.py
    Guard: present /"MindSpeedTELinear"/ in src/pkg/mapping.py
    Guard: absent /if not self\\.training/ in src/pkg/*.py

``absent`` or ``present``, a Python regular expression between slashes (a
slash inside it needs no escape: the expression ends at the last ``/`` before
`` in ``), then ``in`` and one path or glob (``fnmatch``: ``*`` also crosses
``/``), relative to the upstream's root, without spaces. The expression is
searched in each line of each file (``re.search``, lines without their
ending), so ``^`` anchors at a line's start; flags go inline (``(?i)``).

- ``absent``: no line matches; each line that does is an offense ``path:line: text``.
- ``present``: some line of some file matches; none anywhere is one offense.
- A plain path that is not a file of the patched tree, or a glob that matches
  no file, breaks the guard (an ``error``): a guard must look at something, so
  a file that moved upstream is noticed instead of passing unread.
- A glob is matched against the tree's file list when the reader can list
  (a git source can); otherwise (a release, an installed environment) against
  the paths of the patched tree the patch itself touches, and the result says so.

All of this is pure: text in, values out. The check layer (``engine.classify``)
evaluates a patch's guards on the tree after its whole series has been applied.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache

KINDS = ("absent", "present")
SYNTAX = "Guard: absent|present /REGEX/ in PATH-OR-GLOB"
_FORM = re.compile(r"^(?P<kind>\S+)\s+/(?P<regex>.*)/\s+in\s+(?P<where>\S+)\s*$")
_GLOB_CHARS = set("*?[")
MAX_TEXT = 160  # an offending line is shown up to this many characters


class GuardSyntaxError(ValueError):
    """A ``Guard:`` value that cannot be read; the message says what is wrong (the caller adds where)."""


@dataclass(frozen=True)
class Guard:
    text: str  # the header value as written
    kind: str  # "absent" or "present"
    pattern: re.Pattern[str]
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
        pattern = re.compile(regex)
    except re.error as exc:
        raise GuardSyntaxError(f"Guard {value!r}: the regular expression does not compile ({exc})") from exc
    if where.startswith("/") or ".." in where.split("/") or "\\" in where:
        raise GuardSyntaxError(f"Guard {value!r}: {where!r} must be a path relative to the upstream's root, "
                               "with / and without '..'")
    return Guard(value, kind, pattern, where)


@dataclass(frozen=True)
class Verdict:
    """A guard evaluated: whether it holds, each offense, or why it could not be evaluated."""
    holds: bool
    offenses: tuple[str, ...] = ()
    error: str | None = None


def evaluate(guard: Guard, read: Callable[[str], bytes | None], listing: Iterable[str] | None,
             touched: Iterable[str] = ()) -> Verdict:
    """Evaluate ``guard`` on a tree: ``read(path)`` gives a file's bytes (None: not a file); ``listing`` is every
    file's path, or None when the tree cannot list (a glob then looks only at ``touched``)."""
    if guard.is_glob:
        pool = sorted(set(listing) if listing is not None else set(touched))
        paths = [p for p in pool if fnmatch.fnmatchcase(p, guard.where)]
        files = [(p, data) for p in paths if _is_file(data := read(p))]
        if not files:
            among = ("the tree's files" if listing is not None
                     else "the files the patch touches (this source cannot list)")
            return Verdict(False, error=f"no file matches {guard.where} among {among}")
    else:
        data = read(guard.where)
        if not _is_file(data):
            return Verdict(False, error=f"{guard.where} is not a file of the patched tree")
        files = [(guard.where, data)]
    hits = [f"{path}:{number}: {_shown(line)}" for path, data in files for number, line in _matches(guard, data)]
    if guard.kind == "absent":
        return Verdict(not hits, tuple(hits))
    if hits:
        return Verdict(True)
    return Verdict(False, (f"{guard.where}: no line matches /{guard.pattern.pattern}/",))


def _is_file(data: bytes | None) -> bool:
    """A regular file's bytes: not absent, not a link's target, not a submodule (see ``engine.results.TreeReader``)."""
    return data is not None and not getattr(data, "is_symlink", False) and not getattr(data, "is_submodule", False)


def _matches(guard: Guard, data: bytes) -> Iterable[tuple[int, str]]:
    text = data.decode("utf-8", "replace")
    for number, line in enumerate(text.split("\n"), 1):
        line = line.removesuffix("\r")
        if guard.pattern.search(line):
            yield number, line


def _shown(line: str) -> str:
    line = line.strip()
    return line if len(line) <= MAX_TEXT else line[: MAX_TEXT - 1] + "…"
