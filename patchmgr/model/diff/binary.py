"""Git's binary diffs: a ``GIT binary patch`` section's ``literal`` and ``delta`` blocks read as git apply reads
them (base85 lines, zlib-deflated data), and git's delta applied to the bytes it was made from.

``git diff --binary`` writes the change forward, then (for the reverse, ``git apply -R``) backward; a section
``Binary files a/x and b/x differ`` (``git diff`` without ``--binary``) carries no data, and git apply then
takes the result from the blob its index line names, where the repository has it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import zlib
from dataclasses import dataclass
from pathlib import Path

from patchmgr.model.errors import PatchFormatError

BINARY_START = "GIT binary patch"
BINARY_NOTE = "Binary files "  # git diff without --binary: "Binary files a/x and b/x differ"
_HINT = "regenerate the patch with git format-patch --binary (or git diff --binary)"


@dataclass(frozen=True)
class BinaryData:
    """One direction of a binary patch: ``literal`` (the whole result) or ``delta`` (git's delta from the other
    side), inflated."""

    method: str
    data: bytes


@dataclass(frozen=True)
class BinaryChange:
    """A file's binary change: forward and reverse data (None where the patch has none, as in ``Binary files ...
    differ``), and whether its index line names both sides in full, which git apply requires of a binary patch."""

    forward: BinaryData | None
    reverse: BinaryData | None
    full_index: bool

    def reversed(self) -> BinaryChange:
        return BinaryChange(self.reverse, self.forward, self.full_index)


def parse_binary(lines: list[str], path: Path, first_line: int) -> tuple[BinaryData | None, BinaryData | None]:
    """The forward and reverse blocks of a ``GIT binary patch`` section: ``lines`` the lines after that line
    (``first_line``: the patch file's line of ``lines[0]``), up to the section's end."""
    blocks: list[BinaryData] = []
    index = 0
    while index < len(lines) and len(blocks) < 2:
        head = lines[index].rstrip("\r\n")
        method, _, size_text = head.partition(" ")
        if method not in ("literal", "delta") or not size_text.isdigit():
            break
        start, index = index, index + 1
        encoded = bytearray()
        while index < len(lines) and lines[index].rstrip("\r\n"):
            encoded += _base85_line(lines[index].rstrip("\r\n"), path, first_line + index)
            index += 1
        try:
            data = zlib.decompress(bytes(encoded))
        except zlib.error:
            data = None
        if data is None or len(data) != int(size_text):
            # git's own words: apply.c's "corrupt binary patch at line %d"
            raise PatchFormatError(f"{path}:{first_line + start}: corrupt binary patch", _HINT)
        blocks.append(BinaryData(method, data))
        index += 1  # the blank line that ends a block
    if not blocks:
        raise PatchFormatError(f"{path}:{first_line}: unrecognized binary patch", _HINT)
    return blocks[0], blocks[1] if len(blocks) > 1 else None


def _base85_line(line: str, path: Path, line_number: int) -> bytes:
    """One line of base85: its first character is the length (A-Z: 1-26, a-z: 27-52), then the data in groups
    of five characters (git's alphabet is RFC 1924's, which ``base64.b85decode`` reads)."""
    length_char, body = line[:1], line[1:]
    if "A" <= length_char <= "Z":
        length = ord(length_char) - ord("A") + 1
    elif "a" <= length_char <= "z":
        length = ord(length_char) - ord("a") + 27
    else:
        length = 0
    if not length or len(body) % 5 or len(body) // 5 * 4 < length:
        raise PatchFormatError(f"{path}:{line_number}: corrupt binary patch", _HINT)
    try:
        return base64.b85decode(body)[:length]
    except (ValueError, binascii.Error):
        raise PatchFormatError(f"{path}:{line_number}: corrupt binary patch", _HINT) from None


class DeltaError(ValueError):
    """A delta that does not apply to the bytes given (git: ``binary patch does not apply``)."""


def apply_delta(base: bytes, delta: bytes) -> bytes:
    """``base`` changed by git's ``delta`` (patch-delta.c): the sizes of the source and the result, then copies
    from the source and inserted bytes."""
    source_size, at = _size(delta, 0)
    if source_size != len(base):
        raise DeltaError("the delta was made from another size")
    result_size, at = _size(delta, at)
    out = bytearray()
    while at < len(delta):
        command = delta[at]
        at += 1
        if command & 0x80:
            offset = size = 0
            for bit, shift in ((0x01, 0), (0x02, 8), (0x04, 16), (0x08, 24)):
                if command & bit:
                    offset |= delta[at] << shift
                    at += 1
            for bit, shift in ((0x10, 0), (0x20, 8), (0x40, 16)):
                if command & bit:
                    size |= delta[at] << shift
                    at += 1
            size = size or 0x10000
            if offset + size > len(base):
                raise DeltaError("the delta copies past the source's end")
            out += base[offset : offset + size]
        elif command:
            out += delta[at : at + command]
            at += command
        else:
            raise DeltaError("the delta holds an unknown command")
    if len(out) != result_size or at != len(delta):
        raise DeltaError("the delta makes another size")
    return bytes(out)


def _size(delta: bytes, at: int) -> tuple[int, int]:
    """A size in a delta's header: seven bits a byte, least significant first."""
    size = shift = 0
    while True:
        if at >= len(delta):
            raise DeltaError("the delta ends in its header")
        byte = delta[at]
        at += 1
        size |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return size, at


def blob_id(data: bytes, like: str = "") -> str:
    """The id git gives ``data`` as a blob (the hash of ``blob <size>\\0`` and the bytes), in the hash the id
    ``like`` is of (SHA-256 ids are longer than SHA-1's 40 digits)."""
    algorithm = hashlib.sha256 if len(like) > 40 else hashlib.sha1
    return algorithm(b"blob %d\0" % len(data) + bytes(data)).hexdigest()
