"""A series of commits made in one ``git fast-import``, each the very object ``git commit`` makes of it.

``apply`` makes one commit per patch. One ``git commit`` (and its index update, work-tree write and ``rev-parse``)
per patch cost five git processes a patch: 300 real patches took several times ``git am`` of them. fast-import
writes them all in one process; the index and the work tree are then written once, at the last one, in one
``reset`` (a checkout of the pin first, then the changes, wrote every changed file twice).

A commit object holds its tree, its parent, its author and committer lines and its message; fast-import writes
what it is given, so what ``git commit`` would have changed is done here first, exactly as git does it: the name
and address lose the characters git strips (``ident.c``: ``strbuf_addstr_without_crud``), the message is cleaned as
``git commit -F`` cleans it (``--cleanup=whitespace``: ``strbuf_stripspace``), and the date is read by git's own
``parse_date`` (fast-import's ``--date-format=rfc2822`` reads it with the same function as ``GIT_AUTHOR_DATE``).
What fast-import would write otherwise than git commit (a NUL in a message, an empty name) is refused by
``plan`` (None), and the caller commits that series the way before; a name fast-import would read as C-quoted (one
starting with a double quote) is written quoted, so it reads back the name itself.

The objects are stored as ``git commit`` stores them: compressed at git's loose-object level (zlib 1), without
deltas. fast-import's defaults (a delta against the path's earlier blob, zlib 6) cost two thirds of its CPU time on
300 real Megatron-LM commits (64 MB of post-images), for a smaller pack in a checkout that a later ``git gc``
there packs as in any repository.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from patchmgr.io import scratch
from patchmgr.model.errors import GitError

if TYPE_CHECKING:
    from patchmgr.io.git import GitRepo

_CRUD = frozenset(b".,:;<>\"\\'")  # besides every byte up to the space (ident.c: crud)
_GIT_SPACE = " \t\n\r"  # git's isspace (ctype.c): not \v, not \f
# fast-import's objects stored as git commit's loose ones (core.looseCompression's default, zlib 1; no deltas)
_STORAGE = ("-c", "pack.compression=1", "-c", "pack.depth=0")


@dataclass(frozen=True)
class SeriesCommit:
    """One commit of a series: who and when (as ``GIT_AUTHOR_*`` takes them: author and committer alike), the
    message as ``git commit -F`` would be given it, and its changes on top of the one before: ``(path, mode,
    bytes)``, the file's bytes as they are (written as a blob by fast-import itself), None for a deletion."""

    name: str
    address: str
    date: str
    message: str
    changes: tuple[tuple[str, str, bytes | None], ...]


def without_crud(value: str) -> str:
    """``value`` as git writes it in an ident line: crud off both ends, no LF, ``<`` or ``>`` inside."""
    data = value.encode("utf-8", "surrogateescape")
    start, end = 0, len(data)
    while start < end and (data[start] <= 32 or data[start] in _CRUD):
        start += 1
    while end > start and (data[end - 1] <= 32 or data[end - 1] in _CRUD):
        end -= 1
    kept = bytes(c for c in data[start:end] if c not in b"\n<>")
    return kept.decode("utf-8", "surrogateescape")


def stripspace(message: str) -> str:
    """``message`` as ``git commit`` keeps it without an editor: trailing whitespace off each line, runs of empty
    lines made one, none at the start or the end, every line ending in LF."""
    lines: list[str] = []
    empties = 0
    for line in message.split("\n"):
        kept = line.rstrip(_GIT_SPACE)
        if not kept:
            empties += 1
            continue
        if empties and lines:
            lines.append("")
        empties = 0
        lines.append(kept)
    return "".join(f"{line}\n" for line in lines)


def c_quoted(name: bytes) -> bytes:
    """``name`` C-quoted as fast-import reads a quoted path (``unquote_c_style``): backslash, double quote and
    control bytes escaped (octal), everything else as it is."""
    escaped = b"".join(
        b"\\" + bytes([byte]) if byte in b'"\\' else b"\\%03o" % byte if byte < 32 or byte == 127 else bytes([byte])
        for byte in name
    )
    return b'"' + escaped + b'"'


def plan(branch: str, parent: str, commits: Sequence[SeriesCommit]) -> list[bytes] | None:
    """The fast-import stream of ``commits`` on ``branch`` from ``parent`` (marks 1..n), in parts (the files'
    bytes are the commits' own, not copied), or None where fast-import would not write what git commit does."""
    parts: list[bytes] = [f"reset refs/heads/{branch}\nfrom {parent}\n\n".encode()]
    for number, commit in enumerate(commits, 1):
        name, address, message = without_crud(commit.name), without_crud(commit.address), stripspace(commit.message)
        if not name or "\0" in message or not message or "\n" in commit.date or ">" in commit.date:
            return None
        ident = f"{name} <{address}> {commit.date}".encode("utf-8", "surrogateescape")
        body = message.encode("utf-8", "surrogateescape")
        parts += [
            f"commit refs/heads/{branch}\nmark :{number}\n".encode(),
            b"author " + ident + b"\n",
            b"committer " + ident + b"\n",
            f"data {len(body)}\n".encode() + body + b"\n",
        ]
        for path, mode, data in commit.changes:
            if not path:
                return None
            written = path.encode("utf-8", "surrogateescape")
            if path.startswith('"') or "\n" in path:
                written = c_quoted(written)  # as fast-import reads such a name back
            if data is None:
                parts.append(b"D " + written + b"\n")
            else:  # the bytes inline: fast-import writes the blob (no filters: it never reads attributes)
                parts += [f"M {mode} inline ".encode() + written + f"\ndata {len(data)}\n".encode(), data, b"\n"]
        parts.append(b"\n")
    parts.append(b"done\n")
    return parts


def commit_series(repo: GitRepo, branch: str, parent: str, commits: Sequence[SeriesCommit]) -> list[str] | None:
    """Make ``commits`` on ``branch`` (HEAD's, at ``parent`` or not made yet) from ``parent`` in one fast-import,
    then write the index and the work tree of the last once (``reset --hard``: with the upstream's attributes, as
    any checkout; a partial clone fetches the blobs it lacks in one request). Their ids, in order; None when
    ``plan`` refuses the series (nothing was done)."""
    stream = plan(branch, parent, commits)
    if stream is None:
        return None
    if not commits:
        repo.run("reset", "--quiet", "--hard", parent)
        return []
    with scratch.folder("marks") as folder:
        marks, streamed = os.path.join(folder, "marks"), os.path.join(folder, "stream")
        # read from a file: joined, the stream would hold every post-image of the series a second time in memory
        with open(streamed, "wb") as out:
            out.writelines(stream)
        with open(streamed, "rb") as source:
            repo.run(
                *_STORAGE,
                "fast-import",
                "--quiet",
                "--done",
                "--date-format=rfc2822",
                f"--export-marks={marks}",
                stdin=source,
            )
        with open(marks, encoding="ascii") as kept:
            made = dict(line.split() for line in kept.read().splitlines() if line)
    ids = [made.get(f":{number}", "") for number in range(1, len(commits) + 1)]
    if not all(ids):
        raise GitError(f"git fast-import left commits unmarked in {repo.path}", "run apply again")
    repo.run("reset", "--quiet", "--hard", ids[-1])
    return ids


def write_blobs(repo: GitRepo, contents: Sequence[bytes]) -> list[str]:
    """Write each of ``contents`` as a blob of exactly those bytes (no filters, no attributes), in one
    ``git hash-object`` for them all rather than a process each: their ids, in order."""
    if not contents:
        return []
    with scratch.folder("blobs") as folder:
        names = []
        for number, data in enumerate(contents):
            name = os.path.join(folder, f"{number}.blob")
            with open(name, "wb") as out:
                out.write(data)
            names.append(name)
        out_ids = repo.run(
            "hash-object", "-w", "--no-filters", "--stdin-paths", stdin="".join(f"{n}\n" for n in names).encode()
        )
    ids = out_ids.split()
    if len(ids) != len(contents):
        raise GitError(f"git hash-object wrote {len(ids)} blobs of {len(contents)} in {repo.path}", "run it again")
    return ids
