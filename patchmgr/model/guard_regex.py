"""A guard's regular expression: RE2 syntax, searched in each line of a file in time linear in the file's size.

Python's ``re`` backtracks, so an expression like ``^(\\w+\\s?)+:$`` takes time exponential in the length of an
ordinary line of words that does not end in ``:``: one ``Guard:`` header could stall every command that reads
the patch. RE2 (``google-re2``) never backtracks: a search takes time linear in the text, whatever the
expression (its factor grows with the expression's size: ``guards.MAX_SECONDS`` bounds that). The price is the
syntax RE2 does not have (``UNSUPPORTED``), which is refused when the guard is read.

A file is searched in one pass, not line by line: with ``never_nl`` no match can span a line break and with
``(?m)`` ``^`` and ``$`` anchor at each line, so a match's first line is a line that matches on its own, and only
the matches cost Python's time, not the lines. What would change that meaning is refused (``LINE_ONLY``): ``\\A``
and ``\\z`` (the whole text's start and end), ``\\C`` (any byte, a line break too) and turning ``m`` off.
"""

from __future__ import annotations

import re
import time
import warnings
from collections.abc import Iterator

# what RE2 says (the start of its message) -> the syntax that is missing, and what to write instead
UNSUPPORTED = (
    ("invalid perl operator: (?=", "lookahead (?=...)", None),
    ("invalid perl operator: (?!", "negative lookahead (?!...)", None),
    ("invalid perl operator: (?<=", "lookbehind (?<=...)", None),
    ("invalid perl operator: (?<!", "negative lookbehind (?<!...)", None),
    ("invalid perl operator: (?P", "a named backreference (?P=name)", None),
    ("invalid perl operator: (?>", "an atomic group (?>...)", None),
    ("invalid perl operator: (?(", "a conditional (?(1)...|...)", None),
    ("invalid perl operator: (?#", "a comment (?#...)", None),
    ("invalid perl operator: (?", "this inline flag (only i, m, s and U exist)", None),
    ("bad repetition operator: ", "a possessive quantifier (*+, ++, ?+, {n}+)", "drop the +"),
    ("invalid escape sequence: \\Z", "\\Z", "write $ (a line's end)"),
    ("invalid escape sequence: \\u", "\\uXXXX", "write \\x{XXXX}"),
    ("invalid escape sequence: \\U", "\\UXXXXXXXX", "write \\x{XXXXXXXX}"),
    ("invalid escape sequence: \\N", "\\N{NAME}", "write the character, or \\x{XXXX}"),
    *((f"invalid escape sequence: \\{digit}", "a backreference (\\1 to \\9)", None) for digit in "123456789"),
    ("invalid escape sequence: \\", "an escape RE2 does not have", None),
    ("invalid repetition size", "a repeat count above 1000 (nested counts multiply)", None),
    ("pattern too large", "an expression this large (its compiled program exceeds RE2's memory bound)", None),
)
GUARD_SYNTAX = "RE2 syntax (linear-time matching: no backreferences, no lookaround; see the README's Guards)"
# what a guard cannot say because its expression is searched in each line: the escape or flag -> what to write
LINE_ONLY = {
    "A": "^ (a line's start)",
    "z": "$ (a line's end)",
    "C": ". (any character but a line break)",
    "-m": "the expression with m left on (^ and $ anchor at each line)",
}
CHUNK = 64 << 10  # bytes searched between two looks at the clock: RE2 is linear, yet a large program is slow
_ESCAPE_OR_FLAGS = re.compile(r"\\(.)|\(\?([a-zA-Z]*-[a-zA-Z]*)", re.DOTALL)


class TooSlow(Exception):
    """A search passed its deadline; ``position`` is where in the text it stopped."""

    def __init__(self, position: int) -> None:
        super().__init__(position)
        self.position = position


class GuardRegexError(ValueError):
    """An expression RE2 cannot compile; the message says what is wrong and, when it is valid for Python's
    ``re``, which syntax RE2 lacks."""


class LineRegex:
    """A compiled guard expression; ``line_starts`` finds each line of a text that it matches."""

    def __init__(self, pattern: str) -> None:
        import re2  # here, not at the top: a command whose patches have no guards does not load it

        options = re2.Options()
        options.log_errors = False  # RE2 would also print each refused expression on stderr
        options.never_nl = True
        options.never_capture = True  # a group's bounds cost a second, slower pass: only whether a line matches counts
        self.pattern = pattern
        try:
            re2.compile(pattern, options)
        except re2.error as exc:
            raise GuardRegexError(_explain(pattern, exc)) from None
        except UnicodeEncodeError:  # a lone surrogate: not text RE2 can read
            raise GuardRegexError("the regular expression is not UTF-8 text") from None
        _refuse_whole_text(pattern)
        self._regex = re2.compile(f"(?m){pattern}", options)

    def line_starts(self, text: bytes, deadline: float) -> Iterator[int]:
        """Where each line of ``text`` (from ``as_lines``) that the expression matches starts, in order: one
        search per such line, none per line that does not match. ``TooSlow`` once ``time.monotonic()`` passes
        ``deadline``: the text is searched ``CHUNK`` bytes at a time (to a line's end), the clock read between."""
        search, position, size = self._regex.search, 0, len(text)
        while True:
            stop = text.find(b"\n", position + CHUNK)
            stop = size if stop < 0 else stop  # text[position:stop] is whole lines: no match crosses its ends
            while position <= stop and (found := search(text, position, stop)) is not None:
                start = found.start()
                yield text.rfind(b"\n", 0, start) + 1
                end = text.find(b"\n", start, stop)
                position = (stop if end < 0 else end) + 1
            if stop >= size:
                return
            position = stop + 1
            if time.monotonic() > deadline:
                raise TooSlow(position)


def as_lines(data: bytes) -> bytes:
    """A file's bytes as ``LineRegex`` searches them: UTF-8 (bytes that are not read as U+FFFD, as Python decodes),
    each line ending one ``\\n`` (a ``\\r`` before it, or at the end, is the ending's too)."""
    text = data.decode("utf-8", "replace").encode("utf-8").replace(b"\r\n", b"\n")
    return text.removesuffix(b"\r")


def line_at(text: bytes, start: int) -> bytes:
    """The line of ``text`` that starts at ``start``, without its ending."""
    end = text.find(b"\n", start)
    return text[start:] if end < 0 else text[start:end]


def _refuse_whole_text(pattern: str) -> None:
    """``GuardRegexError`` for an escape or flag that reads past a line (``LINE_ONLY``). Escapes are read in pairs
    from the left, as RE2 reads them, so ``\\\\A`` (a backslash, then A) is no anchor."""
    for match in _ESCAPE_OR_FLAGS.finditer(pattern):
        escaped, flags = match.group(1), match.group(2)
        said = f"\\{escaped}" if escaped else f"(?{flags}"
        key = escaped if escaped else ("-m" if "m" in flags.partition("-")[2] else None)
        if key in LINE_ONLY:
            raise GuardRegexError(
                f"the regular expression uses {said}, which a guard cannot use: its expression is "
                f"searched in each line on its own; write {LINE_ONLY[key]} instead"
            )


def _explain(pattern: str, exc: Exception) -> str:
    said = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
    try:
        with warnings.catch_warnings():  # Python's FutureWarnings ("Possible nested set") are not for the user
            warnings.simplefilter("ignore")
            re.compile(pattern)
    except (re.error, RecursionError, OverflowError):
        return f"the regular expression does not compile ({said})"
    for start, what, instead in UNSUPPORTED:
        if said.startswith(start):
            return (
                f"the regular expression uses {what} ({said}), which guards do not support: they use "
                f"{GUARD_SYNTAX}" + (f"; {instead}" if instead else "")
            )
    return f"the regular expression is not RE2 syntax ({said}); guards use {GUARD_SYNTAX}"
