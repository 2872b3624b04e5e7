"""Text as git reads it: lines end at LF only, and keep their endings."""

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
