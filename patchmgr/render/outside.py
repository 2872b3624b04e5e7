"""Text from outside (upstream lines, commit subjects, tag and branch names, paths, patch headers, git's and
other programs' words) as every output format may show it: the one sanitizer all renderings go through.

``visible`` writes out every character that a terminal, a reader or a parser would act on instead of show:
C0 and C1 control characters (ESC starts the sequences that set a terminal's title or clear its screen; CSI
is one byte in C1), DEL, the Unicode line and paragraph separators, the bidirectional controls that reorder
what is shown, and the two non-characters XML forbids. Each becomes an escape that reads as what it is:
``\\x1b`` for an ASCII control, ``\\u009b`` for any other character, and ``\\xff`` for a byte that is not
UTF-8 (git's output is decoded with ``surrogateescape``, so such a byte arrives as a lone surrogate, which
no encoder writes). A tab stays; a line break (LF, or CR LF) stays where the text may span lines.

It masks every credential first (``urls.mask_url``: a URL's password or token, a query parameter named like a
secret, an ``Authorization:`` header's value), before any format's escapes change the text's shape and before
rich wraps a table's cells: no format shows a credential, whatever part of a value holds it.

The format functions below build on it, so no format can show a character another one escapes, nor a
credential another one masks: the terminal (``for_terminal``; rich markup is never read, see
``console.make_console``), Markdown, GitHub workflow commands, XML (JUnit), HTML and JSON.
"""

from __future__ import annotations

import re
from html import escape

from patchmgr.model.urls import mask_url

_CONTROLS = "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff\ufffe\uffff"
_UNSAFE = re.compile(f"\r\n|[{_CONTROLS}]")  # CR LF is a line break as Windows writes it
_UNSAFE_IN_A_LINE = re.compile(f"[\n{_CONTROLS}]")
_SURROGATES = re.compile("[\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char == "\r\n":
        return char  # a line break, kept as written
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"  # a byte that was not UTF-8, as surrogateescape carried it
    return f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}"


def visible(text: str, lines: bool = True) -> str:
    """``text`` with every credential masked and every character a terminal or a reader would act on written out
    as an escape; line feeds (and CR LF) kept when ``lines``, else escaped too: one line stays one line."""
    return (_UNSAFE if lines else _UNSAFE_IN_A_LINE).sub(_escape, mask_url(text))


def one_line(text: str) -> str:
    """``visible`` for a value that must stay on one line (a name, a subject, a path)."""
    return visible(text, lines=False)


# -- the formats ----------------------------------------------------------------------
def for_terminal(text: str) -> str:
    """What a console prints (``console.SafeConsole`` applies it to everything it renders)."""
    return visible(text)


_MD_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
# punctuation that Markdown (or GitHub's extensions: tables, strikethrough, maths) may read as syntax
_MD_SYNTAX = re.compile(r"([\\`*_\[\]|~$!#])")


def for_markdown(text: str, newline: str = "<br>") -> str:
    """``text`` as literal Markdown text: a ``|`` does not split a cell, ``<tag>`` is not HTML, ``*`` and ``_``
    do not emphasise, ``$`` does not start maths; a line feed becomes ``newline`` (a table cell is one line)."""
    text = re.sub(r"[&<>]", lambda m: _MD_ENTITIES[m.group()], visible(text))
    text = _MD_SYNTAX.sub(r"\\\1", text)
    return text.replace("\r\n", "\n").replace("\n", newline)


def for_github_data(text: str) -> str:
    """A workflow command's message, escaped as the runner unescapes it (``%``, CR and LF)."""
    return visible(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def for_github_property(text: str) -> str:
    """A workflow command's property value (file, line, title): also ``:`` and ``,``."""
    return for_github_data(text).replace(":", "%3A").replace(",", "%2C")


def for_github_log(text: str) -> str:
    """A plain log line that the runner cannot take for a command (commands start a line with ``::``)."""
    return " ".join(visible(text).split())


def for_xml(text: str) -> str:
    """Text XML 1.0 can carry (ElementTree escapes ``&<>"``): nothing it forbids, not even as a reference."""
    return visible(text)


def for_html(text: str) -> str:
    """Text for an HTML element or a quoted attribute."""
    return escape(visible(text), quote=True)


def for_json(value: object) -> object:
    """A JSON document's values with every credential masked and every string valid Unicode: a byte that was not
    UTF-8 (a lone surrogate, which strict JSON readers refuse) as ``\\xff``; ``json.dumps`` escapes the control
    characters itself."""
    if isinstance(value, str):
        value = mask_url(value)
        return _SURROGATES.sub(_escape, value) if _SURROGATES.search(value) else value
    if isinstance(value, dict):
        return {for_json(key): for_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [for_json(item) for item in value]
    return value
