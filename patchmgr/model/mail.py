"""The commit a patch file becomes, and the patch file that commit becomes again, in every form patchmgr reads.

Patches are git format-patch mails or plain diffs (``git diff``, ``diff -u``), with or without DEP-3 fields
before the diff. A commit needs a message, an author and a date. A mail names them in its headers, read as
git am reads them (``model.mailheader``: encoded words decoded, ``[PATCH]`` prefixes off); a plain
patch gets its subject from ``Description`` (or its alias ``Subject``), its author from ``Author`` (or
``From``), its date from ``Last-Update``, and keeps its message part (the DEP-3 fields) as the message body.
``edit`` commits each patch with ``commit_spec`` (targets/build.py); ``edit --onto`` hands ``git am`` the same
as a mail (``as_mail``), so both make the same commit. ``export`` writes a commit back in the form its file
had (``in_file_form``): a plain diff stays one, its message part kept byte for byte, its diff replaced.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from patchmgr.model.patchfile import PatchFile, diff_line_index, is_mail
from patchmgr.model.text import as_bytes, as_text, bare_lines, split_lines

PATCHMGR_AUTHOR = ("patchmgr", "patchmgr@localhost")  # who patchmgr's own commits, notes and saves are by
FIXED_DATE = "1970-01-01T00:00:00+00:00"  # a patch that names no date: the same series gives the same commit ids
_ZERO_FROM = f"From {'0' * 40} Mon Sep 17 00:00:00 2001\n"  # what git format-patch --zero-commit writes
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_NAME_ADDRESS = re.compile(r"\s*(.*?)\s*<([^<>\s]+@[^<>\s]+)>\s*")
_STAT_SUMMARY = re.compile(r"^ \d+ files? changed")  # the last line of a diffstat
# lines a traditional diff puts before its ---/+++ pair (the command, svn's Index:): the new diff has its own
_DIFF_PREAMBLE = ("diff ", "Index: ", "=" * 10)


@dataclass(frozen=True)
class CommitSpec:
    """What one patch's commit is made of."""

    message: str
    name: str
    address: str
    date: str  # as git takes an author date (RFC 2822 or ISO 8601)


def commit_spec(patch: PatchFile) -> CommitSpec:
    name, address = PATCHMGR_AUTHOR
    author = patch.author  # a mail's From header, or the DEP-3 Author (or its alias From)
    if author:
        # "Name <address>" as people write it in DEP-3 (commas and quotes unescaped), else what mail allows
        written = _NAME_ADDRESS.fullmatch(author)
        import email.utils  # here: io.git imports this module for PATCHMGR_AUTHOR, and status needs no mail

        parsed_name, parsed_address = written.groups() if written else email.utils.parseaddr(author)
        if "@" in parsed_address:
            name, address = parsed_name.strip() or name, parsed_address
        else:  # DEP-3 allows a bare name ("Author: Jane Doe")
            name = author.strip()
    message = f"{patch.subject or patch.id}\n\n{patch.body}".strip() + "\n"
    return CommitSpec(
        message,
        _CONTROL.sub(" ", name),
        _CONTROL.sub("", address),
        patch.date or _day(patch.field("Last-Update")) or FIXED_DATE,
    )


def as_mail(patch: PatchFile) -> bytes:
    """``patch`` as ``git am`` takes it: a mail as it is (less a byte-order mark); a plain diff with a mail's
    headers and message made from its fields (``commit_spec``) before its diff."""
    text = patch.text.removeprefix("\ufeff")
    if is_mail(text):
        return as_bytes(text)
    lines = split_lines(text)
    spec = commit_spec(patch)
    import email.utils

    when = email.utils.format_datetime(_parsed_date(spec.date))
    # No Subject header: git am then takes the whole body as the message, so a DEP-3 "From:" or "Subject:"
    # field at its top is kept as text (as edit keeps it), not taken as an in-body header.
    head = (
        f"{_ZERO_FROM}From: {email.utils.formataddr((spec.name, spec.address), 'utf-8')}\nDate: {when}\n"
        "MIME-Version: 1.0\nContent-Type: text/plain; charset=UTF-8\nContent-Transfer-Encoding: 8bit\n\n"
    )
    return as_bytes(head + spec.message + "---\n" + "".join(lines[diff_line_index(lines) or 0 :]))


def in_file_form(old: bytes, mail: bytes, reworded: str | None = None) -> bytes:
    """``mail`` (git format-patch of a commit) in the form of the patch file ``old`` it replaces.

    A mail stays the mail. A plain diff keeps its message part (its DEP-3 fields, byte for byte) and gets the
    mail's diff; ``reworded`` is the commit's message when someone changed it, and the fields then say it.
    """
    old_text = as_text(old)
    if is_mail(old_text):
        return mail
    mail_lines = split_lines(as_text(mail))
    diff_at = diff_line_index(mail_lines) or 0
    lines = split_lines(old_text)
    fields, tail = message_part(lines)
    if any(line.strip() for line in tail[1:]):  # a diffstat after the "---": the mail's, which is the new diff's
        tail = _split_at_dashes(mail_lines[:diff_at])[1]
    if reworded is not None:
        fields = _reworded(fields, reworded)
    return as_bytes("".join(fields + tail) + "".join(mail_lines[diff_at:]))


def message_part(lines: list[str]) -> tuple[list[str], list[str]]:
    """The lines of a patch before its diff, less a traditional diff's preamble (its command, svn's ``Index:``),
    split at the ``---`` line that ends its message: the message's lines, and those from the ``---`` on."""
    head = lines[: diff_line_index(lines) or 0]
    while head and head[-1].startswith(_DIFF_PREAMBLE):
        head.pop()
    return _split_at_dashes(head)


def with_diffstat(prologue: list[str], stat: str) -> list[str]:
    """The lines of a mail before its diff with ``stat`` in place of the diffstat format-patch put after the
    ``---`` line (up to its ``N files changed`` summary, which ``stat`` brings anew); a plain diff's as they are."""
    try:
        separator = max(i for i, line in enumerate(prologue) if line.rstrip("\r\n") == "---")
        end = next(i for i in range(separator, len(prologue)) if _STAT_SUMMARY.match(prologue[i]))
    except (ValueError, StopIteration):
        return prologue  # a plain diff without a diffstat
    return prologue[: separator + 1] + split_lines(stat) + prologue[end + 1 :]


def _split_at_dashes(head: list[str]) -> tuple[list[str], list[str]]:
    """A message part split at its ``---`` line (what ends a patch's message): the lines before, and from it."""
    end = next((i for i, line in enumerate(head) if re.match(r"---\s*$", line)), len(head))
    return head[:end], head[end:]


def _reworded(fields: list[str], message: str) -> list[str]:
    """The fields of a plain patch, saying ``message``: the message's own DEP-3 fields when
    it has them (the fields were edited in the commit), else its text as the Description, the other fields
    kept."""
    subject, _, body = message.strip("\n").partition("\n")
    body_lines = bare_lines(body.strip("\n"))
    if any(re.match(r"(Description|Subject):", line) for line in body_lines):
        return [line + "\n" for line in body_lines]
    kept, in_description = [], False
    for line in fields:
        if re.match(r"(Description|Subject):", line):
            in_description = True
        elif not (in_description and line[:1] == " "):
            in_description = False
            kept.append(line)
    described = [f"Description: {subject}\n"] + [f" {line}\n" if line.strip() else " .\n" for line in body_lines]
    return described + kept


def _day(value: str | None) -> str | None:
    """A DEP-3 date (``Last-Update: 2026-01-31``) as an author date; None when it is not one."""
    try:
        return datetime.strptime((value or "").strip(), "%Y-%m-%d").replace(tzinfo=UTC).isoformat()
    except ValueError:
        return None


def _parsed_date(date: str) -> datetime:
    try:
        when = datetime.fromisoformat(date)
    except ValueError:
        import email.utils

        when = email.utils.parsedate_to_datetime(date)
    return when if when.tzinfo else when.replace(tzinfo=UTC)
