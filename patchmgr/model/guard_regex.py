"""A guard's regular expression: RE2 syntax, searched in each line of a file in time linear in the file's size.

Python's ``re`` backtracks, so an expression like ``^(\\w+\\s?)+:$`` takes time exponential in the length of an
ordinary line of words that does not end in ``:``: one ``Guard:`` header could stall every command that reads
the patch. RE2 (``google-re2``) never backtracks: a search takes time linear in the text, whatever the
expression. The price is the syntax RE2 does not have (``UNSUPPORTED``), which is refused when the guard is read.

A file is searched in one pass, not line by line: with ``never_nl`` no match can span a line break and with
``(?m)`` ``^`` and ``$`` anchor at each line, so a match's first line is a line that matches on its own. An
expression that anchors at the whole text (``\\A``, ``\\z``), reads raw bytes (``\\C``) or turns a flag off
(``(?-m)``) is searched line by line instead, as the one-pass reading would change what it means.
"""

from __future__ import annotations

import re
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
    ("invalid escape sequence: \\Z", "\\Z", "write \\z or $"),
    ("invalid escape sequence: \\u", "\\uXXXX", "write \\x{XXXX}"),
    ("invalid escape sequence: \\U", "\\UXXXXXXXX", "write \\x{XXXXXXXX}"),
    ("invalid escape sequence: \\N", "\\N{NAME}", "write the character, or \\x{XXXX}"),
    ("invalid escape sequence: \\", "a backreference (\\1) or this escape", None),
    ("invalid repetition size", "a repeat count above 1000", None),
    ("pattern too large", "an expression this large (its compiled program exceeds RE2's memory bound)", None),
)
GUARD_SYNTAX = "RE2 syntax (linear-time matching: no backreferences, no lookaround; see the README's Guards)"
_LINE_BY_LINE = re.compile(r"\\[AzC]|\(\?[a-zA-Z]*-")


class GuardRegexError(ValueError):
    """An expression RE2 cannot compile; the message says what is wrong and, when it is valid for Python's
    ``re``, which syntax RE2 lacks."""


class LineRegex:
    """A compiled guard expression; ``matching_lines`` gives each line of a text that it matches."""

    def __init__(self, pattern: str) -> None:
        import re2  # here, not at the top: a command whose patches have no guards does not load it

        options = re2.Options()
        options.log_errors = False  # RE2 would also print each refused expression on stderr
        options.never_nl = True
        self.pattern = pattern
        try:
            self._line = re2.compile(pattern, options)
            self._text = None if _LINE_BY_LINE.search(pattern) else re2.compile(f"(?m){pattern}", options)
        except re2.error as exc:
            raise GuardRegexError(_explain(pattern, exc)) from None

    def matching_lines(self, data: bytes) -> Iterator[tuple[int, bytes]]:
        """``(line number, line)`` for each line of ``data`` that the expression matches, in order. A line is
        without its ending (``\\n`` or ``\\r\\n``); bytes that are not UTF-8 read as U+FFFD, as Python decodes."""
        text = data.decode("utf-8", "replace").encode("utf-8").replace(b"\r\n", b"\n")
        if self._text is None:
            for number, line in enumerate(text.split(b"\n"), 1):
                if self._line.search(line):
                    yield number, line
            return
        number, counted, position = 1, 0, 0
        while (found := self._text.search(text, position)) is not None:
            start = found.start()
            number += text.count(b"\n", counted, start)
            counted = start
            end = text.find(b"\n", start)
            end = len(text) if end < 0 else end
            yield number, text[text.rfind(b"\n", 0, start) + 1:end]
            if end == len(text):
                return
            position = end + 1


def _explain(pattern: str, exc: Exception) -> str:
    said = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
    try:
        re.compile(pattern)
    except (re.error, RecursionError, OverflowError):
        return f"the regular expression does not compile ({said})"
    for start, what, instead in UNSUPPORTED:
        if said.startswith(start):
            return (f"the regular expression uses {what} ({said}), which guards do not support: they use "
                    f"{GUARD_SYNTAX}" + (f"; {instead}" if instead else ""))
    return f"the regular expression is not RE2 syntax ({said}); guards use {GUARD_SYNTAX}"
