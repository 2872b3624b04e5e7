"""Patch files: git format-patch mails or plain diffs, with DEP-3 fields.

Parsing is strict: a patch that git would refuse, or whose paths leave the
tree, is a ``PatchFormatError`` naming the file and the line. Lines are kept
with their own endings so that CRLF patches and files without a final
newline are compared exactly; like git, only LF ends a line (a form feed,
vertical tab, lone CR, U+0085 or U+2028 is part of the line it is in).

Plain diffs (no ``diff --git`` line: ``diff -ruN old new``, ``diff -u``) are
read as ``git apply`` reads them: one leading folder stripped from each name
(none when the names have no folder), the shorter name when one extends the
other (``x.py`` from ``a/x.py.orig`` and ``b/x.py``), and a side dated at the
epoch (what ``diff -N`` writes) meaning the file is created or deleted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

from patchmgr.model.diff import FileDiff, check_hunks, parse_diff
from patchmgr.model.errors import PatchFormatError
from patchmgr.model.guards import SYNTAX, GuardSyntaxError, parse_guard
from patchmgr.model.input_files import MAX_PATCH_BYTES, read_input
from patchmgr.model.mailheader import am_subject, decoded, in_body_headers
from patchmgr.model.text import as_bytes, as_text, bare_lines, split_lines
from patchmgr.model.urls import mask_url

DEP3_KEYS = (
    "Description",
    "Subject",
    "Origin",
    "Upstream-Status",
    "Forwarded",
    "Bug",
    "Applied-Upstream",
    "Last-Update",
    "Author",
    "From",
    "Reviewed-by",
    "Acked-by",
    "Signed-off-by",
    "Smoke-Test",
    "Guard",
)


# git (2.39) takes author dates from 1970 to 2099; apply commits each patch with its Date
_DATE_RANGE = (datetime(1970, 1, 1, tzinfo=UTC), datetime(2100, 1, 1, tzinfo=UTC))

UPSTREAM_STATUSES = ("Pending", "Submitted", "Backport", "Accepted", "Denied", "Inappropriate", "Inactive-Upstream")


_FIELD_LINE = re.compile(r"^(" + "|".join(re.escape(k) for k in DEP3_KEYS) + r"):[ \t]*(.*)$")


@dataclass(frozen=True)
class PatchFile:
    id: str
    upstream: str
    path: Path
    data: bytes = field(repr=False)
    subject: str
    body: str
    author: str | None
    date: str | None
    fields: tuple[tuple[str, str], ...]
    files: tuple[FileDiff, ...]

    @property
    def sha256(self) -> str:
        import hashlib  # here: hashlib loads OpenSSL, and only what records or compares a patch needs it

        return hashlib.sha256(self.data).hexdigest()

    def field(self, key: str) -> str | None:
        for name, value in self.fields:
            if name == key:
                return value
        return None

    def field_values(self, key: str) -> list[str]:
        return [value for name, value in self.fields if name == key]

    @property
    def is_empty_commit(self) -> bool:
        """Whether the patch is a commit that changes no file (``is_empty_commit``): checked and applied, it is
        skipped."""
        return not self.files

    @property
    def text(self) -> str:
        """The patch's bytes as text (``text.as_text``: a byte that is not UTF-8 kept, ``as_bytes`` gives it back)."""
        return as_text(self.data)

    @property
    def description(self) -> str:
        return self.field("Description") or self.subject

    @property
    def touched_paths(self) -> list[str]:
        paths: list[str] = []
        for diff in self.files:
            for p in (diff.old_path, diff.new_path):
                if p and p not in paths:
                    paths.append(p)
        return paths

    def reversed_files(self) -> tuple[FileDiff, ...]:
        return tuple(d.reversed() for d in reversed(self.files))


def read_patch(path: Path, upstream: str, patch_id: str) -> PatchFile:
    data = read_input(
        path,
        str(path),
        "a patch file is a regular file of text: fix it or take it out of the series",
        limit=MAX_PATCH_BYTES,
        error=PatchFormatError,
    )
    return parse_patch(data, path, upstream, patch_id)


def parse_patch(data: bytes, path: Path, upstream: str = "", patch_id: str = "") -> PatchFile:
    # a patch is bytes, as git apply and patch read it: Latin-1 sources, a NUL, any byte, kept as it is (as_text)
    text = as_text(data)
    # Editors on Windows start files with a byte-order mark; it is not part of
    # the patch, and left in place it hides the first "From"/"diff" line.
    text = text.removeprefix("\ufeff")
    header_text, diff_text, diff_line = _split_message(text)
    empty = not diff_text.strip()
    if empty and not is_empty_commit(text):
        raise PatchFormatError(f"{path}: holds no diff", "an empty patch changes nothing; remove it from the series")
    if empty:
        header_text = re.split(r"(?m)^-- \r?$", header_text, maxsplit=1)[0]  # format-patch's signature
    checked = None if empty else check_hunks(diff_text, path, diff_line)
    subject, body, author, date = _parse_mail(header_text)
    if date is not None:
        _check_date(date, header_text, path)
    fields = _parse_fields(body)
    _check_guards(fields, header_text, path)
    files = parse_diff(checked, path, diff_line) if checked is not None else ()
    named = dict(fields)
    described = named.get("Description") or named.get("Subject")  # DEP-3: Subject is its alias
    if not subject and described:
        subject = bare_lines(described)[0]
    author = author or named.get("Author") or named.get("From") or None  # DEP-3: From is Author's alias
    return PatchFile(patch_id or path.stem, upstream, path, data, subject, body, author, date, tuple(fields), files)


def _split_message(text: str) -> tuple[str, str, int]:
    """Split into (message part, diff part, line number where the diff starts)."""
    lines = split_lines(text)
    index = diff_line_index(lines)
    if index is None:
        return text, "", len(lines) + 1
    message = "".join(lines[:index])
    # format-patch puts "---", a diffstat and a blank line before the diff
    message = re.split(r"(?m)^---\s*$", message, maxsplit=1)[0]
    # the mail signature ("-- " and git's version) is cut by check_hunks,
    # which alone can tell it from a removed line that reads "- "
    return message, "".join(lines[index:]), index + 1


def diff_line_index(lines: list[str]) -> int | None:
    """The index of the line where a patch's diff begins (``diff --git``, or a ``---``/``+++`` pair); None: no diff."""
    for index, line in enumerate(lines):
        if line.startswith("diff --git ") or (
            line.startswith("--- ") and index + 1 < len(lines) and lines[index + 1].startswith("+++ ")
        ):
            return index
    return None


def with_message_masked(data: bytes) -> bytes:
    """A patch's bytes with every credential in its message (the mail, the DEP-3 fields: all before the diff)
    masked (``urls.mask_url``), the diff byte for byte: a patch as patchmgr writes it outside the project."""
    lines = split_lines(as_text(data))
    index = diff_line_index(lines)
    cut = len(lines) if index is None else index
    message = "".join(lines[:cut])
    masked = mask_url(message)
    if masked == message:
        return data
    return as_bytes(masked + "".join(lines[cut:]))


def is_empty_commit(text: str) -> bool:
    """Whether a patch without a diff is the mail ``git format-patch --always`` writes of an empty commit: a mail
    whose message has no ``---`` line (a mail cut before its diff still has the ``---`` and diffstat)."""
    return is_mail(text) and not any(line.rstrip("\r\n") == "---" for line in split_lines(text))


def is_mail(text: str) -> bool:
    """Whether a patch's text is a mail (``git format-patch``'s ``From <commit> <date>`` first line), not a plain
    diff with or without DEP-3 fields."""
    return re.match(r"From [0-9a-f]{40} ", text.removeprefix("\ufeff")) is not None


_MAIL_HEADER = re.compile(r"(From|Subject|Date):")  # a mail's header at the top, without the mbox line


def _parse_mail(message: str) -> tuple[str, str, str | None, str | None]:
    """Subject, body, author and date of a patch's message part: a mail's (``From <commit> <date>`` and its
    headers, as git am reads them), a mail-style header block without that mbox line (``From:``, ``Subject:``,
    ``Date:`` at the top, as DEP-3 allows: the body stays the whole message part, its fields kept), or a plain
    patch's (no subject, author or date: they come from its DEP-3 fields)."""
    lines = bare_lines(message)
    if lines and is_mail(lines[0]):
        headers, index = _headers(lines, 1)
        in_body, rest = in_body_headers(lines[index + 1 :])
        headers.update(in_body)
        body = "\n".join(rest).strip("\n")
    elif lines and _MAIL_HEADER.match(lines[0]):
        # DEP-3 reads a field's next lines as its long description, not as a folded header: the first line alone
        headers, _ = _headers(lines, 0, fold=False)
        if "Subject" not in headers and "From" not in headers:
            return "", message.strip("\n"), None, None
        body = message.strip("\n")
    else:
        return "", message.strip("\n"), None, None
    author = headers.get("From")
    return am_subject(headers.get("Subject", "")), body, decoded(author) if author else None, headers.get("Date")


def _headers(lines: list[str], start: int, fold: bool = True) -> tuple[dict[str, str], int]:
    """The header block from ``lines[start]`` to the first blank line (folded lines joined, or with ``fold``
    False left out), and where it ends."""
    headers: dict[str, str] = {}
    index, last = start, None
    while index < len(lines) and lines[index].strip():
        line = lines[index]
        if line[:1] in (" ", "\t"):
            if last and fold:
                headers[last] += " " + line.strip()
        else:
            key, _, value = line.partition(":")
            last = key.strip()
            headers[last] = value.strip()
        index += 1
    return headers, index


def _parse_fields(body: str) -> list[tuple[str, str]]:
    fields: list[tuple[str, str]] = []
    for line in bare_lines(body):
        match = _FIELD_LINE.match(line)
        if match:
            fields.append((match.group(1), match.group(2).strip()))
        elif fields and line[:1] == " " and fields[-1][0] in ("Description", "Subject"):
            fields[-1] = (fields[-1][0], fields[-1][1] + "\n" + line.strip())
    return fields


def _check_guards(fields: list[tuple[str, str]], message: str, path: Path) -> None:
    """Each ``Guard:`` value must parse (model/guards.py): a malformed one names its line and the syntax."""
    for name, value in fields:
        if name != "Guard":
            continue
        try:
            parse_guard(value)
        except GuardSyntaxError as exc:
            line = next(
                (
                    n
                    for n, text in enumerate(bare_lines(message), 1)
                    if text.startswith("Guard:") and text[len("Guard:") :].strip() == value
                ),
                1,
            )
            raise PatchFormatError(
                f"{path}:{line}: {exc}", exc.hint or f"write it as {SYNTAX!r} (see the README's Guards)"
            ) from exc


# the date git format-patch writes ("Thu, 1 Jan 2026 00:00:00 +0000"), read without the mail date parser:
# email.utils costs `status` about 40 ms of imports, and every shipped patch has a Date header
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_GIT_DATE = re.compile(
    rf"(?:(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), )?(\d{{1,2}}) ({'|'.join(_MONTHS)}) (\d{{4}}) "
    r"(\d{2}):(\d{2}):(\d{2}) ([+-])(\d{2})(\d{2})"
)


def _git_date(date: str) -> datetime | None:
    """``date`` in git format-patch's own form, or None (another form, or no such day)."""
    found = _GIT_DATE.fullmatch(date)
    if found is None:
        return None
    day, month, year, hour, minute, second, sign, zone_hours, zone_minutes = found.groups()
    offset = timedelta(hours=int(zone_hours), minutes=int(zone_minutes)) * (-1 if sign == "-" else 1)
    try:
        return datetime(
            int(year), _MONTHS.index(month) + 1, int(day), int(hour), int(minute), int(second), tzinfo=timezone(offset)
        )
    except ValueError:
        return None


def _check_date(date: str, message: str, path: Path) -> None:
    """The Date header must be one git takes as an author date: apply commits each patch with it."""
    when = _git_date(date)
    if when is None:
        import email.utils  # here: only a Date header in another form needs the mail date parser

        try:
            when = email.utils.parsedate_to_datetime(date)
        except (TypeError, ValueError, IndexError, OverflowError):
            try:
                when = datetime.fromisoformat(date)
            except ValueError:
                pass
    if when is not None and when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    if when is None or not _DATE_RANGE[0] <= when < _DATE_RANGE[1]:
        line = next((n for n, text in enumerate(bare_lines(message), 1) if text.startswith("Date:")), 1)
        problem = "cannot be read as a date" if when is None else "is outside the years git records"
        raise PatchFormatError(
            f"{path}:{line}: the Date header {date!r} {problem} (git takes RFC 2822 or ISO 8601 dates from 1970 "
            "to 2099); apply would commit the patch with it as the author date",
            "write an RFC 2822 date, as git format-patch does (Date: Thu, 1 Jan 2026 00:00:00 +0000)",
        )
