"""Rewrite one DEP-3 field in a patch's message, leaving every other byte as it was."""

from __future__ import annotations

import re
from datetime import UTC, datetime


def today() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d")


def set_last_update(data: bytes, date: str | None = None) -> bytes:
    """``data`` with its ``Last-Update:`` field set to ``date`` (today, UTC, when None).

    The field is looked for only in the message, before the ``---`` that ends it or the first diff line;
    a patch without one gets it after its last DEP-3 field, or at the end of the message.
    """
    date = date or today()
    end = _message_end(data)
    message, rest = data[:end], data[end:]
    line_end = b"\r\n" if b"\r\n" in message else b"\n"
    new, count = re.subn(rb"(?m)^Last-Update:[ \t]*[^\r\n]*", b"Last-Update: " + date.encode(), message, count=1)
    if count:
        return new + rest
    if not message.strip():  # a bare diff: the field is its whole message
        return b"Last-Update: " + date.encode() + line_end + rest
    fields = list(
        re.finditer(
            rb"(?m)^(Origin|Upstream-Status|Forwarded|Bug|Applied-Upstream|Author|"
            rb"Reviewed-by|Acked-by|Smoke-Test|Guard|Description):[^\n]*\n",
            message,
        )
    )
    at = fields[-1].end() if fields else len(message.rstrip(b"\r\n")) + len(line_end)
    if not fields and not message.endswith(line_end):
        message += line_end
        at = len(message)
    return message[:at] + b"Last-Update: " + date.encode() + line_end + message[at:] + rest


def _message_end(data: bytes) -> int:
    for pattern in (rb"(?m)^---[ \t]*\r?$", rb"(?m)^diff --git ", rb"(?m)^--- "):
        match = re.search(pattern, data)
        if match:
            return match.start()
    return len(data)
