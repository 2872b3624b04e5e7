"""A series of commits made in one ``git fast-import``, each the very object ``git commit`` makes of it.

``apply`` makes one commit per patch. One ``git commit`` (and its index update, work-tree write and ``rev-parse``)
per patch cost five git processes a patch: 300 real patches took several times ``git am`` of them. fast-import
writes them all in one process; the index and the work tree then follow the last one in one ``reset``.

A commit object holds its tree, its parent, its author and committer lines and its message; fast-import writes
what it is given, so what ``git commit`` would have changed is done here first, exactly as git does it: the name
and address lose the characters git strips (``ident.c``: ``strbuf_addstr_without_crud``), the message is cleaned as
``git commit -F`` cleans it (``--cleanup=whitespace``: ``strbuf_stripspace``), and the date is read by git's own
``parse_date`` (fast-import's ``--date-format=rfc2822`` reads it with the same function as ``GIT_AUTHOR_DATE``).
What fast-import would write otherwise than git commit (a NUL in a message, an empty name, a path it quotes)
is refused by ``plan`` (None), and the caller commits that series the way before.
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


def plan(branch: str, parent: str, commits: Sequence[SeriesCommit]) -> bytes | None:
    """The fast-import stream of ``commits`` on ``branch`` from ``parent`` (marks 1..n), or None where fast-import
    would not write what git commit does."""
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
            if path.startswith('"') or "\n" in path or not path:
                return None  # fast-import would read a C-quoted name
            if data is None:
                parts.append(f"D {path}\n".encode("utf-8", "surrogateescape"))
            else:  # the bytes inline: fast-import writes the blob (no filters: it never reads attributes)
                parts.append(f"M {mode} inline {path}\ndata {len(data)}\n".encode("utf-8", "surrogateescape"))
                parts += [data, b"\n"]
        parts.append(b"\n")
    parts.append(b"done\n")
    return b"".join(parts)


def commit_series(repo: GitRepo, branch: str, parent: str, commits: Sequence[SeriesCommit]) -> list[str] | None:
    """Make ``commits`` on ``branch`` (checked out, at ``parent``) in one fast-import, then move the index and the
    work tree to the last (``reset --hard``: written with the upstream's attributes, as any checkout). Their ids,
    in order; None when ``plan`` refuses the series (nothing was done)."""
    stream = plan(branch, parent, commits)
    if stream is None:
        return None
    if not commits:
        return []
    with scratch.folder("marks") as folder:
        marks = os.path.join(folder, "marks")
        repo.run("fast-import", "--quiet", "--done", "--date-format=rfc2822", f"--export-marks={marks}", stdin=stream)
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
