"""Patch files: git format-patch mails or plain diffs, with DEP-3 fields.

Parsing is strict: a patch that git would refuse, or whose paths leave the
tree, is a ``PatchFormatError`` naming the file and the line. Lines are kept
with their own endings so that CRLF patches and files without a final
newline are compared exactly.
"""

from __future__ import annotations

import hashlib
import io
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import unidiff

from patchmgr.errors import PatchFormatError

DEP3_KEYS = (
    "Description", "Subject", "Origin", "Upstream-Status", "Forwarded", "Bug", "Applied-Upstream",
    "Last-Update", "Author", "From", "Reviewed-by", "Acked-by", "Signed-off-by", "Smoke-Test",
)
UPSTREAM_STATUSES = ("Pending", "Submitted", "Backport", "Accepted", "Denied", "Inappropriate",
                     "Inactive-Upstream")
_FIELD_LINE = re.compile(r"^(%s):[ \t]*(.*)$" % "|".join(re.escape(k) for k in DEP3_KEYS))
_INDEX_LINE = re.compile(r"^index ([0-9a-f]+)\.\.([0-9a-f]+)(?: (\d+))?$")
_SUBJECT_PREFIX = re.compile(r"^\[[^\]]*PATCH[^\]]*\]\s*")


@dataclass(frozen=True)
class Hunk:
    """One hunk; ``old_lines``/``new_lines`` are context plus removed/added lines, endings kept."""

    header: str
    old_start: int
    new_start: int
    old_lines: tuple[str, ...]
    new_lines: tuple[str, ...]
    leading: int
    trailing: int

    def reversed(self) -> Hunk:
        return Hunk(self.header, self.new_start, self.old_start, self.new_lines, self.old_lines,
                    self.leading, self.trailing)


@dataclass(frozen=True)
class FileDiff:
    old_path: str | None  # None for a created file
    new_path: str | None  # None for a deleted file
    old_blob: str | None
    new_blob: str | None
    hunks: tuple[Hunk, ...]
    binary: bool = False
    new_mode: str | None = None

    @property
    def path(self) -> str:
        return self.new_path or self.old_path or ""

    @property
    def kind(self) -> str:
        if self.old_path is None:
            return "add"
        if self.new_path is None:
            return "delete"
        if self.old_path != self.new_path:
            return "rename"
        return "modify"

    def reversed(self) -> FileDiff:
        return FileDiff(self.new_path, self.old_path, self.new_blob, self.old_blob,
                        tuple(h.reversed() for h in self.hunks), self.binary)


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
        return hashlib.sha256(self.data).hexdigest()

    def field(self, key: str) -> str | None:
        for name, value in self.fields:
            if name == key:
                return value
        return None

    def field_values(self, key: str) -> list[str]:
        return [value for name, value in self.fields if name == key]

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
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise PatchFormatError(f"{path}: cannot be read ({exc.strerror})", "check the file") from exc
    return parse_patch(data, path, upstream, patch_id)


def parse_patch(data: bytes, path: Path, upstream: str = "", patch_id: str = "") -> PatchFile:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise PatchFormatError(
            f"{path}:{line}: not UTF-8 text (byte 0x{data[exc.start]:02x})",
            "patches must be UTF-8; re-export the patch with git format-patch",
        ) from exc
    header_text, diff_text, diff_line = _split_message(text)
    if not diff_text.strip():
        raise PatchFormatError(f"{path}: holds no diff", "an empty patch changes nothing; remove it from the series")
    subject, body, author, date = _parse_mail(header_text)
    fields = _parse_fields(body)
    files = _parse_diff(diff_text, path, diff_line)
    if not subject:
        subject = dict(fields).get("Description", "").splitlines()[0] if dict(fields).get("Description") else ""
    return PatchFile(patch_id or path.stem, upstream, path, data, subject, body, author, date,
                     tuple(fields), files)


def _split_message(text: str) -> tuple[str, str, int]:
    """Split into (message part, diff part, line number where the diff starts)."""
    lines = text.splitlines(keepends=True)
    for index, line in enumerate(lines):
        if line.startswith("diff --git ") or (
            line.startswith("--- ") and index + 1 < len(lines) and lines[index + 1].startswith("+++ ")
        ):
            message = "".join(lines[:index])
            # format-patch puts "---", a diffstat and a blank line before the diff
            message = re.split(r"(?m)^---\s*$", message, maxsplit=1)[0]
            diff = "".join(lines[index:])
            diff = re.sub(r"(?m)^-- \n[\s\S]*\Z", "", diff)  # mail signature
            return message, diff, index + 1
    return text, "", len(lines) + 1


def _parse_mail(message: str) -> tuple[str, str, str | None, str | None]:
    lines = message.splitlines()
    if not lines or not re.match(r"^From [0-9a-f]{40} ", lines[0]):
        return "", message.strip("\n"), None, None
    headers: dict[str, str] = {}
    index, last = 1, None
    while index < len(lines) and lines[index].strip():
        line = lines[index]
        if line[:1] in (" ", "\t") and last:
            headers[last] += " " + line.strip()
        else:
            key, _, value = line.partition(":")
            last = key.strip()
            headers[last] = value.strip()
        index += 1
    subject = _SUBJECT_PREFIX.sub("", headers.get("Subject", ""))
    body = "\n".join(lines[index + 1:]).strip("\n")
    return subject, body, headers.get("From"), headers.get("Date")


def _parse_fields(body: str) -> list[tuple[str, str]]:
    fields: list[tuple[str, str]] = []
    for line in body.splitlines():
        match = _FIELD_LINE.match(line)
        if match:
            fields.append((match.group(1), match.group(2).strip()))
        elif fields and line[:1] == " " and fields[-1][0] == "Description":
            fields[-1] = (fields[-1][0], fields[-1][1] + "\n" + line.strip())
    return fields


def _parse_diff(diff_text: str, path: Path, first_line: int) -> tuple[FileDiff, ...]:
    try:
        patch_set = unidiff.PatchSet(io.StringIO(diff_text, newline=""))
    except unidiff.UnidiffParseError as exc:
        raise PatchFormatError(
            f"{path}: malformed diff ({exc})",
            "the hunk line counts must match the hunk's lines; regenerate it with git format-patch",
        ) from exc
    if not len(patch_set):
        raise PatchFormatError(f"{path}:{first_line}: no file changes found in the diff",
                               "a patch needs at least one 'diff --git' section")
    return tuple(_file_diff(patched, path) for patched in patch_set)


def _file_diff(patched: unidiff.PatchedFile, path: Path) -> FileDiff:
    info = "".join(str(line) for line in patched.patch_info)
    old_blob = new_blob = new_mode = None
    for line in info.splitlines():
        match = _INDEX_LINE.match(line)
        if match:
            old_blob, new_blob = match.group(1), match.group(2)
        elif line.startswith("new file mode ") or line.startswith("new mode "):
            new_mode = line.split()[-1]
        elif line.startswith("old mode ") or line.startswith("deleted file mode "):
            pass
    old_path = _strip_prefix(patched.source_file, "a/", path)
    new_path = _strip_prefix(patched.target_file, "b/", path)
    if patched.is_binary_file or "GIT binary patch" in info or "Binary files " in info:
        raise PatchFormatError(f"{path}: binary change to {new_path or old_path} is not supported",
                               "keep binary files out of patches; ship them another way")
    hunks = tuple(_hunk(h) for h in patched)
    if patched.is_rename and not hunks and old_path == new_path:
        pass
    return FileDiff(old_path, new_path, _full(old_blob), _full(new_blob), hunks, False, new_mode)


def _strip_prefix(name: str, prefix: str, path: Path) -> str | None:
    if name == "/dev/null":
        return None
    name = name[len(prefix):] if name.startswith(prefix) else name
    pure = PurePosixPath(name)
    if pure.is_absolute() or ".." in pure.parts or not name or name.startswith("~"):
        raise PatchFormatError(f"{path}: path {name!r} leaves the upstream tree",
                               "patch paths must be relative to the upstream's root")
    return str(pure)


def _full(blob: str | None) -> str | None:
    if blob is None or set(blob) == {"0"}:
        return None
    return blob


def _hunk(hunk: unidiff.Hunk) -> Hunk:
    old: list[str] = []
    new: list[str] = []
    kinds: list[str] = []
    for line in hunk:
        kind = line.line_type
        if kind == "\\":
            # "\ No newline at end of file" belongs to the line before it
            previous = kinds[-1] if kinds else " "
            if previous in (" ", "-") and old:
                old[-1] = _strip_eol(old[-1])
            if previous in (" ", "+") and new:
                new[-1] = _strip_eol(new[-1])
            continue
        kinds.append(kind)
        if kind in (" ", "-"):
            old.append(line.value)
        if kind in (" ", "+"):
            new.append(line.value)
    leading = next((i for i, k in enumerate(kinds) if k != " "), len(kinds))
    trailing = next((i for i, k in enumerate(reversed(kinds)) if k != " "), len(kinds))
    header = f"@@ -{hunk.source_start},{hunk.source_length} +{hunk.target_start},{hunk.target_length} @@"
    return Hunk(header, hunk.source_start, hunk.target_start, tuple(old), tuple(new), leading, trailing)


def _strip_eol(line: str) -> str:
    if line.endswith("\r\n"):
        return line[:-2]
    return line[:-1] if line.endswith("\n") else line
