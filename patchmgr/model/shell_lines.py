"""Shell text cut as a shell cuts it before it runs anything: logical lines and here-documents (pure: text only).

A build script (``build.sh``), a Dockerfile ``RUN <<'EOS'`` body and a ``RUN`` line are read the same way:

- a line ending in ``\\`` goes on on the next one; a quote left open goes on too (its line break kept);
- ``<<WORD``, ``<<-WORD``, ``<<'WORD'`` and ``<<"WORD"`` (outside quotes and comments) start here-documents,
  whose bodies are the lines after the line holding them, each up to a line that is the delimiter alone
  (``<<-``: after its leading tabs, which the body loses too). The bodies belong to that line, in order.

The shell substitutes ``$`` and backquotes in the body of an unquoted delimiter; import runs nothing, so such a
body is taken only when it holds none (``Heredoc.literal``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from patchmgr.model.errors import UsageError

_DELIMITER = re.compile(r"""\s*(?:'([^'\n]*)'|"([^"\n]*)"|([A-Za-z0-9_.\-]+))""")
# in a body of an unquoted delimiter the shell substitutes $ and `...`, and drops the \ before $ ` \ and a line end
_SUBSTITUTED = re.compile(r"[$`]|\\[$`\\\n]")


@dataclass(frozen=True)
class Heredoc:
    """A here-document: its delimiter as written, and its body (each line ending in LF)."""

    delimiter: str
    quoted: bool  # <<'EOF' or <<"EOF": the body is taken as it is
    strip_tabs: bool  # <<-EOF
    body: str
    line: int  # the line number of the body's first line in its file

    def literal(self, where: str, what: str) -> str:
        """The body as the command reads it; one the shell would change (``$``, backquotes) is one error."""
        found = None if self.quoted else _SUBSTITUTED.search(self.body)
        if found is not None:
            line = self.line + self.body[: found.start()].count("\n")
            raise UsageError(
                f"{where}:{line}: the here-document <<{self.delimiter} holding {what} has an unquoted delimiter, so "
                f"the shell substitutes its {found.group(0)[0]!r}: import runs nothing and cannot know the text the "
                "command reads; nothing was written",
                f"quote the delimiter (<<'{self.delimiter}'), as the text is meant to be taken as it is",
            )
        return self.body


@dataclass(frozen=True)
class ShellLine:
    """One logical line: its first physical line's number, its text, and the here-documents it opens."""

    line: int
    text: str
    heredocs: tuple[Heredoc, ...] = ()


@dataclass(frozen=True)
class _Scan:
    markers: tuple[tuple[str, bool, bool], ...]  # (delimiter, quoted, strip_tabs), in order
    open_quote: bool  # the line ends inside a quote: the next line goes on with it
    continued: bool  # the line ends in an unquoted backslash


def _scan(text: str) -> _Scan:
    """Where ``text`` opens here-documents, outside quotes and comments (what a shell's lexer would find)."""
    markers: list[tuple[str, bool, bool]] = []
    quote = ""
    index, size = 0, len(text)
    word_start = True
    while index < size:
        char = text[index]
        if quote == "'":
            quote = "" if char == "'" else quote
        elif quote == '"':
            if char == "\\":
                index += 1
            elif char == '"':
                quote = ""
        elif char == "\\":
            if index == size - 1:
                return _Scan(tuple(markers), False, True)
            index += 1
        elif char in "'\"":
            quote = char
        elif char == "#" and word_start:
            break
        elif text.startswith("<<<", index):
            index += 3
            word_start = True
            continue
        elif text.startswith("<<", index):
            strip = text.startswith("<<-", index)
            match = _DELIMITER.match(text, index + (3 if strip else 2))
            if match:
                single, double, bare = match.groups()
                delimiter = single if single is not None else double if double is not None else bare
                markers.append((delimiter, bare is None, strip))
                index = match.end()
                word_start = False
                continue
        word_start = char in " \t;&|()<>\n"
        index += 1
    return _Scan(tuple(markers), bool(quote), False)


def take_heredocs(text: str, lines: list[str], start: int, number_of: int) -> tuple[tuple[Heredoc, ...], int]:
    """The bodies of the here-documents that ``text`` opens, read from ``lines[start:]`` (``number_of``: the file's
    line number of ``lines[0]``); and the index of the first line after them."""
    found = []
    index = start
    for delimiter, quoted, strip in _scan(text).markers:
        body: list[str] = []
        first = index
        while index < len(lines):
            raw = lines[index]
            index += 1
            shown = raw.lstrip("\t") if strip else raw
            if shown == delimiter:
                break
            body.append(shown)
        found.append(Heredoc(delimiter, quoted, strip, "".join(f"{line}\n" for line in body), number_of + first))
    return tuple(found), index


def shell_lines(text: str, first_line: int = 1) -> list[ShellLine]:
    """The logical lines of shell ``text`` whose first line is line ``first_line`` of its file, blank ones left out."""
    lines = [raw.removesuffix("\r") for raw in text.split("\n")]
    if lines and lines[-1] == "":
        lines.pop()
    out: list[ShellLine] = []
    index = 0
    while index < len(lines):
        start = index
        joined = lines[index]
        index += 1
        while index < len(lines):
            scan = _scan(joined)
            if scan.continued:
                joined = joined[:-1] + lines[index]
            elif scan.open_quote:
                joined = f"{joined}\n{lines[index]}"
            else:
                break
            index += 1
        heredocs, index = take_heredocs(joined, lines, index, first_line)
        if joined.strip():
            out.append(ShellLine(first_line + start, joined, heredocs))
    return out
