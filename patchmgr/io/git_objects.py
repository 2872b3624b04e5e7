"""Reading git objects: one long-lived ``git cat-file --batch`` per repository, and the values it returns.

Trees and blobs are immutable, so they are kept (within a memory budget) by object id: reading the
same paths at the next commit costs one request for the commit and only those that changed.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from patchmgr.io import children
from patchmgr.io.git_run import LazyFetchLoop, RepositoryDamaged, damage_in
from patchmgr.model.errors import GitError
from patchmgr.model.urls import mask_url

# what a partial clone's git says when its promisor remote (the source) does not have an object either
_UNFETCHABLE = re.compile(r"could not fetch ([0-9a-f]{7,64}) from promisor remote")


class ObjectUnavailable(GitError):
    """An object that neither a partial clone nor its source has (a mirror without its large files' blobs):
    not damage, so nothing is fetched again; what needs the object cannot be done from this source."""

    def __init__(self, sha: str, what: str | None = None) -> None:
        named = f"{what} (blob {sha[:12]})" if what else f"object {sha[:12]}"
        super().__init__(
            f"cannot read {named}: the source lacks it (a mirror without its large files, or a source "
            "out of reach), so a patch that changes it cannot be checked or applied from there",
            "pass a complete clone of the upstream (one that has that file) with --source NAME=PATH_OR_URL",
        )
        self.sha = sha


SYMLINK_MODE = "120000"


class LinkBlob(bytes):
    """The blob of a symbolic link: its bytes are the link's target, not file content.

    Readers of upstream trees return it for links (``is_symlink`` is what the
    engine looks for), because writing a patched link's path would write
    through the link, possibly outside the tree.
    """

    is_symlink = True


SUBMODULE_MODE = "160000"


class SubmoduleEntry(bytes):
    """A submodule (gitlink) in an upstream tree: no file content (its bytes are empty).

    Readers return it for the submodule's own path (``is_submodule`` is what the
    engine looks for), so that a patch touching the submodule or a path inside
    it is refused the same way by ``status`` and ``apply``: the superproject's
    tree has no blobs below a gitlink, and a checkout leaves the folder empty.
    """

    is_submodule = True


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    subject: str
    parents: tuple[str, ...]


_Tree = dict[bytes, tuple[str, str]]  # a parsed tree: name -> (mode, object id)

_OBJECT_ID = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")

# ``git log -z --format=COMMIT_RECORD``: one NUL-terminated record per commit, its subject last on a line of its own
COMMIT_RECORD = "%H %P%n%s"


def commit_records(out: str) -> list[CommitInfo]:
    """The commits of a ``git log -z --format=COMMIT_RECORD``, split only on git's own separators (NUL, then the
    first line feed): a subject holding a CR, a form feed or U+2028 (all of which ``str.splitlines`` splits on)
    stays one subject; a NUL in a forged message stays in its subject too."""
    commits: list[CommitInfo] = []
    for record in out.split("\0"):
        head, newline, subject = record.partition("\n")
        ids = head.split(" ")
        if newline and _OBJECT_ID.match(ids[0]):
            commits.append(CommitInfo(ids[0], subject, tuple(i for i in ids[1:] if i)))
        elif commits and record:
            last = commits[-1]
            commits[-1] = CommitInfo(last.sha, f"{last.subject}\0{record}", last.parents)
    return commits


class ObjectReader:
    """Objects through one ``git cat-file --batch`` process, trees and blobs kept by id within a budget."""

    BUDGET = 64 << 20  # bytes of kept objects: a sweep's working set, far below the memory goal
    TREE_COST = 8  # a parsed tree takes ~6.5 times its raw size in memory (measured on a 3 KB tree)

    def __init__(self, path: Path, env: Mapping[str, str], untrusted: bool = False) -> None:
        self._path, self._env, self._untrusted = path, env, untrusted
        self._process: subprocess.Popen[bytes] | None = None
        # git's error output, in a file (a pipe nobody reads could fill and stall it)
        self._stderr: IO[bytes] | None = None
        self._stderr_seen = 0
        self._kept: OrderedDict[str, tuple[str, bytes | _Tree, int]] = OrderedDict()  # sha -> (kind, value, cost)
        self._kept_bytes = 0
        self._root_trees: dict[str, str | None] = {}
        self._entries: dict[tuple[str, str], tuple[str, str] | None] = {}  # (root tree, path) -> entry
        self._last_sha = ""

    def entry(self, commit: str, path: str) -> tuple[str, str] | None:
        """``(mode, object id)`` of ``path`` at ``commit``, or None when it is not there."""
        tree = self._root_trees.get(commit) or self._root_tree(commit)
        if tree is None:
            return None
        key = (tree, path)
        try:
            return self._entries[key]
        except KeyError:
            if len(self._entries) > 50_000:
                self._entries.clear()
            found = self._entries[key] = self._walk(tree, path)
            return found

    def _walk(self, tree: str | None, path: str) -> tuple[str, str] | None:
        parts = path.split("/")
        for depth, name in enumerate(parts):
            if tree is None:
                return None
            entries = self._tree(tree)
            if entries is None:
                return None
            found = entries.get(name.encode("utf-8", "surrogateescape"))
            if found is None or depth == len(parts) - 1:
                return found
            mode, sha = found
            tree = sha if mode == "40000" else None
        return None

    def blob(self, sha: str) -> bytes | None:
        kind, data = self._object(sha)
        return data if kind == "blob" and isinstance(data, bytes) else None  # a blob is its bytes, never parsed

    def commit_time(self, sha: str) -> int | None:
        """The committer time of commit ``sha``, from its ``committer`` header; None when it is no commit."""
        kind, data = self._read(sha)
        if kind != "commit":
            return None
        for line in data.split(b"\n"):
            if not line:
                break  # the headers end at the first empty line
            if line.startswith(b"committer "):
                fields = line.rsplit(b" ", 2)
                return int(fields[1]) if len(fields) == 3 and fields[1].isdigit() else None
        return None

    def kind(self, name: str) -> str | None:
        """The type of the object ``name`` names (``<commit>^{commit}``), or None when there is none."""
        kind, _data = self._read(name)
        return kind

    def _root_tree(self, commit: str) -> str | None:
        if commit in self._root_trees:
            return self._root_trees[commit]
        kind, data = self._read(f"{commit}^{{tree}}")
        sha = self._last_sha if kind == "tree" else None
        if sha is not None:
            self._keep(sha, "tree", _parse_tree(data, len(sha) // 2), len(data) * self.TREE_COST)
        if sha is not None and _OBJECT_ID.match(commit):
            self._root_trees[commit] = sha  # a commit id never moves (a ref may); a missing one may be fetched
        return sha

    def _tree(self, sha: str) -> _Tree | None:
        _kind, data = self._object(sha)
        return data if isinstance(data, dict) else None  # only a tree is parsed (into a dict)

    def _object(self, sha: str) -> tuple[str | None, bytes | _Tree | None]:
        """``(type, value)``: a tree parsed, any other object its content; ``(None, None)`` when there is none."""
        if sha in self._kept:
            self._kept.move_to_end(sha)
            kept_kind, kept, _size = self._kept[sha]
            return kept_kind, kept
        kind, data = self._read(sha)
        if kind is None:
            return None, None
        value: bytes | _Tree = _parse_tree(data, len(self._last_sha) // 2) if kind == "tree" else data
        if kind in ("tree", "blob"):
            self._keep(self._last_sha, kind, value, len(data) * (self.TREE_COST if kind == "tree" else 1))
        return kind, value

    def _keep(self, sha: str, kind: str, value: bytes | _Tree, size: int) -> None:
        if size > self.BUDGET // 4 or sha in self._kept:
            return
        self._kept[sha] = (kind, value, size)
        self._kept_bytes += size
        while self._kept_bytes > self.BUDGET:
            _sha, (_kind, _value, dropped) = self._kept.popitem(last=False)
            self._kept_bytes -= dropped

    def _read(self, name: str) -> tuple[str | None, bytes]:
        """One request: ``(type, content)``, or ``(None, b"")`` when git has no such object.

        A damaged repository shows in two ways: the process dies (a garbage HEAD or
        config, an unreadable pack: a broken pipe or an early end of output), or it
        answers ``missing`` for an object whose pack it cannot read. Both raise
        ``RepositoryDamaged`` with git's own words, never an absent file.
        """
        stdin, stdout = _pipes(self._start())
        try:
            stdin.write(name.encode("utf-8", "surrogateescape") + b"\n")
            stdin.flush()
            header = stdout.readline()
        except (BrokenPipeError, ConnectionResetError):
            header = b""
        if not header:
            raise self._stopped(f"stopped while reading {name}")
        parts = header.split()
        if len(parts) != 3 or parts[1] == b"missing" or parts[2] == b"missing":
            damage = damage_in(self._new_stderr())
            if damage:
                self.close()
                raise RepositoryDamaged(self._path, damage)
            return None, b""
        self._last_sha = parts[0].decode("ascii")
        size = int(parts[2])
        data = stdout.read(size + 1)[:size]  # the content, then one line feed
        if len(data) < size:
            raise self._stopped(f"stopped in the middle of {name}")
        return parts[1].decode("ascii"), data

    def _stopped(self, what: str) -> GitError:
        if self._process is not None:  # None: closed already
            try:
                self._process.wait(timeout=5)  # its last words reach the file before it exits
            except subprocess.TimeoutExpired:
                pass
            grown = children.overgrown(self._process)
            if grown is not None:  # a lazy fetch of what it was asked for started fetch after fetch
                self.close()
                return LazyFetchLoop("cat-file", grown)
        said = self._new_stderr()
        self.close()
        unfetchable = _UNFETCHABLE.search(said)
        if unfetchable:  # the source lacks the object (a partial mirror): the clone is sound
            return ObjectUnavailable(unfetchable.group(1))
        lines = [line.strip() for line in said.splitlines() if line.strip()]
        detail = damage_in(said) or (re.sub(r"^(fatal|error): ", "", lines[-1]) if lines else "no message")
        if self._untrusted or damage_in(said):
            return RepositoryDamaged(self._path, f"git cat-file {what}: {detail}")
        return GitError(f"git cat-file {what} in {self._path}: {mask_url(detail)}", "check the repository")

    def _new_stderr(self) -> str:
        if self._stderr is None:
            return ""
        try:
            self._stderr.seek(self._stderr_seen)
            said = self._stderr.read()
            self._stderr_seen += len(said)
            return said.decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""

    def _start(self) -> subprocess.Popen[bytes]:
        if self._process is None or self._process.poll() is not None:
            if self._stderr is None:
                self._stderr = tempfile.TemporaryFile()
            self._process = children.popen(
                ["git", "cat-file", "--batch"],
                cwd=self._path,
                env=self._env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
            )
        return self._process

    def close(self) -> None:
        if self._process is not None:
            stdin, stdout = _pipes(self._process)
            try:
                stdin.close()
                self._process.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                children.end_tree(self._process)  # with the fetch of a missing blob it may have started
            finally:
                children.forget(self._process)
            stdout.close()
            self._process = None
        if self._stderr is not None:
            self._stderr.close()
            self._stderr, self._stderr_seen = None, 0


def _pipes(process: subprocess.Popen[bytes]) -> tuple[IO[bytes], IO[bytes]]:
    """The stdin and stdout of ``_start``'s process, which it always starts with both as pipes."""
    if process.stdin is None or process.stdout is None:
        raise ValueError("git cat-file was started without its pipes")
    return process.stdin, process.stdout


def _parse_tree(data: bytes, hash_size: int) -> _Tree:
    """A raw tree object (``<mode> <name>\\0<hash>`` entries) as name -> (mode, object id)."""
    entries = {}
    pos, end = 0, len(data)
    while pos < end:
        space = data.index(b" ", pos)
        nul = data.index(b"\0", space)
        entries[data[space + 1 : nul]] = (data[pos:space].decode("ascii"), data[nul + 1 : nul + 1 + hash_size].hex())
        pos = nul + 1 + hash_size
    return entries
