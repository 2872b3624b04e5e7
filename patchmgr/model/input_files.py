"""Reading a file someone named or wrote: only a regular file, never more than a bound, and TOML never nested
deeper than patchmgr's own files are.

Every file patchmgr reads as input goes through ``read_input``: ``add --diff``, import's patch files,
series.conf, ``--dockerfile`` and ``--map``, the manifests and patch files of the project, the settings
files, the records export writes. A FIFO would block the read for ever, a device (``/dev/zero``) would
never end, a folder or a socket is no file: each is refused with what it is, before a byte is read, and
opening never blocks (``O_NONBLOCK``, the kind checked again on the open file). A regular file is read to
at most its bound plus one byte: one larger is refused, never read whole into memory.

``parse_toml`` is the one TOML parser of such files (``read_toml`` reads and parses one): a syntax error
is said with its line, and nesting deeper than ``MAX_TOML_DEPTH`` (which makes Python's TOML parser
recurse until it fails) is one error, not a traceback.

Here in ``model`` (the lowest layer) because the manifest and patch readers of ``model`` use it too.
"""

from __future__ import annotations

import os
import re
import stat
import tomllib
from pathlib import Path
from typing import Any

from patchmgr.model.errors import PatchmgrError, UsageError

MAX_PATCH_BYTES = 64 << 20  # a patch or a diff: the largest monolithic patch sets are a few MiB
MAX_TEXT_BYTES = 4 << 20  # a manifest, a settings file, a Dockerfile, a series.conf, a map: kilobytes
MAX_TOML_DEPTH = 32  # tables, arrays one in another: a manifest nests 6 deep (upstreams.x.smoke-env[0].requirements)
_CHUNK = 1 << 20


def file_kind(mode: int) -> str:
    """What a file that is not a regular one is, for a message: ``a FIFO (named pipe)``, ``a folder`` ..."""
    for test, name in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISLNK, "a symbolic link"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def not_readable(path: Path | str) -> str | None:
    """Why ``path`` is no regular file to read (``is a FIFO (named pipe), not a regular file``, ``does not
    exist``), looked at without opening it; None for a regular file or a link to one."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "is a symbolic link to nothing" if os.path.islink(path) else "does not exist"
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    return None if stat.S_ISREG(mode) else f"is {file_kind(mode)}, not a regular file"


def read_input(
    path: Path | str, what: str, hint: str, *, limit: int = MAX_TEXT_BYTES, error: type[PatchmgrError] = UsageError
) -> bytes:
    """The bytes of the regular file ``path`` (a link to one is read); ``error(what: why, hint)`` when it is not
    one, cannot be read, or holds more than ``limit`` bytes."""
    problem = not_readable(path)
    if problem is not None:  # refused unopened: opening a device may already do something
        raise error(f"{what}: {problem}", hint)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise error(f"{what}: cannot be read ({exc.strerror or exc})", hint) from None
    chunks: list[bytes] = []
    size = 0
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):  # put in its place since it was looked at: still never read
            raise error(f"{what}: is {file_kind(mode)}, not a regular file", hint)
        while size <= limit:
            chunk = os.read(fd, min(_CHUNK, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise error(f"{what}: cannot be read ({exc.strerror or exc})", hint) from None
    finally:
        os.close(fd)
    if size > limit:
        raise error(f"{what}: is larger than {limit >> 20} MiB, more than patchmgr reads of such a file", hint)
    return b"".join(chunks)


class TomlProblem(ValueError):
    """TOML that ``parse_toml`` refuses: why, and the line when it is known."""

    def __init__(self, reason: str, line: int | None = None) -> None:
        super().__init__(f"line {line}: {reason}" if line else reason)
        self.reason = reason
        self.line = line


_POSITION = re.compile(r"\s*\(at line (?P<line>\d+), column \d+\)$")
_TOO_DEEP = f"tables or arrays nested more than {MAX_TOML_DEPTH} deep; no file patchmgr reads needs that"


def parse_toml(text: str) -> dict[str, Any]:
    """``text`` parsed as TOML; ``TomlProblem`` for a syntax error (with its line) or nesting past the bound."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = _POSITION.search(str(exc))
        if found is None:
            raise TomlProblem(str(exc)) from None
        raise TomlProblem(_POSITION.sub("", str(exc)), int(found["line"])) from None
    except RecursionError:  # the parser recurses once per level: it stops before the bound is checked below
        raise TomlProblem(_TOO_DEEP) from None
    if _depth(document) > MAX_TOML_DEPTH:  # dotted keys (a.b.c...) nest without recursing
        raise TomlProblem(_TOO_DEEP)
    return document


def _depth(document: dict[str, Any]) -> int:
    """How deep tables and arrays are nested in ``document`` (itself 1), found without recursing."""
    deepest = 0
    stack: list[tuple[object, int]] = [(document, 1)]
    while stack:
        value, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > MAX_TOML_DEPTH:
            break
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return deepest


def read_toml(
    path: Path | str, what: str, hint: str, *, encoding: str = "utf-8", error: type[PatchmgrError] = UsageError
) -> tuple[str, dict[str, Any]]:
    """The text of the TOML file ``path`` (``read_input``'s checks) and its table; one ``error`` naming ``what``
    (and the line) for a file that is not UTF-8, not TOML or nested too deeply."""
    data = read_input(path, what, hint, error=error)
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise error(f"{what}:{line}: not UTF-8 text (byte 0x{data[exc.start]:02x})", hint) from None
    try:
        return text, parse_toml(text)
    except TomlProblem as exc:
        where = f"{what}:{exc.line}" if exc.line else what
        raise error(f"{where}: invalid TOML: {exc.reason}", hint) from None
