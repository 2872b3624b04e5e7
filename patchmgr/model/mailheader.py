"""A mail header's value as ``git mailinfo`` (what ``git am`` runs) reads it.

``edit`` commits a mail with what patchmgr reads from its headers and ``edit --onto`` hands it to ``git am``: the
two make the same commit only when both read a header the same way. git format-patch writes a subject or a
name beyond ASCII as RFC 2047 encoded words (``=?UTF-8?q?Fix=20caf=C3=A9?=``) and folds long lines; git am
decodes and unfolds them, and takes the ``[PATCH n/m]`` prefixes (any leading ``[...]``, ``Re:``) off a subject.
"""

from __future__ import annotations

import re

_SPACE_RUN = re.compile(r"[ \t\n\r]+")  # what git's isspace() takes as space


def decoded(value: str) -> str:
    """``value`` (unfolded) with its RFC 2047 encoded words decoded; as written when they do not decode."""
    if "=?" not in value:
        return value
    import email.errors  # here: only a header with encoded words needs the mail header decoder
    import email.header

    try:
        return str(email.header.make_header(email.header.decode_header(value)))
    except (email.errors.HeaderParseError, LookupError, UnicodeError, ValueError):
        return value


def am_subject(value: str) -> str:
    """A Subject header's value as git am makes it the commit's subject (``cleanup_subject`` and
    ``cleanup_space`` of git's mailinfo.c, without ``-k``): decoded, leading ``Re:``, ``:``, spaces and
    ``[...]`` groups removed, each run of spaces one space."""
    subject = decoded(value)
    at = 0
    while at < len(subject):
        char = subject[at]
        if char in "rR":
            if len(subject) > at + 3 and subject[at + 1] in "eE" and subject[at + 2] == ":":
                subject = subject[:at] + subject[at + 3 :]
                continue
            break
        if char in " \t:":
            subject = subject[:at] + subject[at + 1 :]
            continue
        if char == "[":
            end = subject.find("]", at)
            if end < 0:
                break
            subject = subject[:at] + subject[end + 1 :]
            continue
        break
    return _SPACE_RUN.sub(" ", subject.strip(" \t\n\r"))


_IN_BODY = re.compile(r"(From|Subject|Date):[ \t]*(.*)$", re.IGNORECASE)


def in_body_headers(lines: list[str]) -> tuple[dict[str, str], list[str]]:
    """The ``From:``, ``Subject:`` and ``Date:`` lines at the top of a mail's body, which git am takes over the
    mail's own headers (``git format-patch --from`` writes the author there), and the body after them: the
    blank line that ends them goes; a first other line ends them too and stays (mailinfo.c's
    ``check_inbody_header``)."""
    index = 0
    while index < len(lines) and lines[index] == "":
        index += 1
    found: dict[str, str] = {}
    last = None
    while index < len(lines):
        line = lines[index]
        if line[:1] in (" ", "\t") and last:
            found[last] += " " + line.strip()
        else:
            match = _IN_BODY.match(line)
            if not match:
                break
            last = match.group(1).capitalize()
            found[last] = match.group(2).strip()
        index += 1
    if not found:
        return {}, lines
    if index < len(lines) and lines[index] == "":
        index += 1
    return found, lines[index:]
