"""Text as git reads it: lines end at LF only, and keep their endings; bytes that are not UTF-8 kept as they are."""

from __future__ import annotations


def split_lines(text: str) -> list[str]:
    """``text`` split at LF only, endings kept (``str.splitlines`` also splits at FF, VT, CR, U+0085, U+2028...)."""
    lines = text.split("\n")
    last = lines.pop()
    lines = [line + "\n" for line in lines]
    if last:
        lines.append(last)
    return lines


def bare_lines(text: str) -> list[str]:
    """``text`` split at LF only, without the LF or a CR before it (for mail headers and messages)."""
    return [line[:-1] if line.endswith("\r") else line for line in (raw.rstrip("\n") for raw in split_lines(text))]


def as_text(data: bytes) -> str:
    """``data`` as text for the line tools: UTF-8, each byte that is not (Latin-1 sources, a NUL is UTF-8) carried
    as a lone surrogate, so that ``as_bytes`` gives the same bytes back; patches and files are bytes, as git's
    are, and text is only how patchmgr reads them (render/outside.py shows such a byte as ``\\xe9``)."""
    return data.decode("utf-8", "surrogateescape")


def as_bytes(text: str) -> bytes:
    """The bytes ``as_text`` read ``text`` from."""
    return text.encode("utf-8", "surrogateescape")


def quoted(text: str) -> str:
    """``text`` in single quotes as ``repr`` writes it, except that a byte that was not UTF-8 (``as_text``) stays the
    lone surrogate it was read as, for render/outside.py to show as ``\\xe9``: a repr would write ``\\udce9``, a
    character that was never in the file."""
    return "'" + "".join(_quoted_char(char) for char in text) + "'"


def _quoted_char(char: str) -> str:
    if char == "'":
        return "\\'"
    if 0xDC80 <= ord(char) <= 0xDCFF:
        return char
    return repr(char)[1:-1]
