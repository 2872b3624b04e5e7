"""A repository's history, for bisect, refresh, the matrix and patch-id evidence: commits, their order,
the commits that touch some paths and their patch-ids. One part of ``GitRepo`` (``git``)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from patchmgr.io.git_objects import COMMIT_RECORD, CommitInfo, commit_records
from patchmgr.io.git_run import LITERAL_PATHS, GitCommands
from patchmgr.model.diff.names import unquote
from patchmgr.model.errors import GitError, PatchFormatError

PATCH_ID_BITS = 160  # a stable patch-id is a sum of SHA-1s, byte by byte with carry: a 160-bit little-endian number


def add_patch_ids(ids: Sequence[str]) -> str:
    """The stable patch-id of a change made of the file changes whose ids are ``ids``: ``git patch-id --stable``
    hashes each file's diff alone and adds the hashes (patch-id.c, ``flush_one_hunk``), so a commit's id over
    some of its files is the sum of theirs."""
    total = sum(int.from_bytes(bytes.fromhex(pid), "little") for pid in ids) % (1 << PATCH_ID_BITS)
    return total.to_bytes(PATCH_ID_BITS // 8, "little").hex()


@dataclass(frozen=True)
class FileChange:
    """One file's part of a commit's diff: the paths it names (both of a rename) and its stable patch-id."""

    paths: frozenset[str]
    patch_id: str


@dataclass(frozen=True)
class CommitChanges:
    """A commit (id and subject) and the patch-id of its change to each file of those asked for."""

    sha: str
    subject: str
    files: tuple[FileChange, ...]

    def patch_id(self, paths: frozenset[str] | set[str]) -> str | None:
        """The stable patch-id of this commit's change to ``paths`` (as ``git log -p -- paths`` shows it); None when
        it changes none of them."""
        ids = [f.patch_id for f in self.files if f.paths & paths]
        return add_patch_ids(ids) if ids else None


class HistoryQueries(GitCommands):
    """Walks of a repository's commits (``git log``, ``rev-list``, ``merge-base``)."""

    def commit_info(self, sha: str) -> CommitInfo:
        out = self.run("show", "-s", "--format=%H%x00%P%x00%s", sha)
        full, parents, subject = out.split("\x00", 2)
        return CommitInfo(full, subject, tuple(parents.split()))

    def commit_time(self, sha: str) -> int:
        """The committer time of ``sha``, in seconds since the epoch."""
        return int(self.run("show", "-s", "--format=%ct", sha))

    def first_parent_path(self, base: str, tip: str) -> list[str]:
        """Commits from just after ``base`` up to ``tip`` along first parents, oldest first."""
        out = self.run("rev-list", "--first-parent", "--reverse", f"{base}..{tip}")
        return out.split() if out else []

    def merge_base(self, a: str, b: str) -> str | None:
        try:
            return self.run("merge-base", a, b) or None
        except GitError:
            return None

    def commits_touching(self, base: str, tip: str, paths: Sequence[str]) -> list[CommitInfo]:
        """Commits after ``base`` up to ``tip`` on ``tip``'s first-parent line that change ``paths``.

        Oldest first. A merge on that line counts when its change against its
        first parent touches the paths (git includes it under --first-parent).
        """
        return self.log_commits("--first-parent", "--reverse", f"{base}..{tip}", "--", *paths)

    def log_commits(self, *args: str) -> list[CommitInfo]:
        """``git log args`` as commits (id, parents, subject), parsed on git's own separators (NUL, LF), never
        on a CR or a form feed that a subject holds; paths after ``--`` are file names, never pathspec magic."""
        return commit_records(self.run("log", "-z", f"--format={COMMIT_RECORD}", *args, env=LITERAL_PATHS, strip=False))

    def blobs_introduced(self, revisions: Sequence[str], paths: Sequence[str]) -> list[tuple[str, str, str]]:
        """``(commit, path, blob)``, newest first, for each commit reachable from ``revisions`` whose change against
        one of its parents leaves ``path`` holding ``blob``: one ``git log`` over every line (merges against each
        parent), so a commit where some set of blobs first stands together is among them."""
        out = self.run(
            "log",
            "--full-history",
            "--diff-merges=separate",
            "--raw",
            "-z",
            "--no-renames",
            "--no-abbrev",
            "--format=%x01%H",
            *revisions,
            "--",
            *paths,
            env=LITERAL_PATHS,
            strip=False,
        )
        found: list[tuple[str, str, str]] = []
        commit, meta = "", ""
        for token in out.split("\0"):
            token = token.lstrip("\n")
            if token.startswith("\x01"):
                commit = token[1:]
            elif token.startswith(":"):
                meta = token
            elif meta:
                fields = meta.split()
                if len(fields) >= 4 and set(fields[3]) != {"0"}:
                    found.append((commit, token, fields[3]))
                meta = ""
        return found

    def paths_changed(self, base: str, tip: str) -> set[str]:
        """Every path some commit after ``base`` up to ``tip`` on its first-parent line changes (a merge against
        its first parent, as ``commits_touching`` counts it; both sides of a rename): empty when none does."""
        out = self.run(
            "log",
            "--first-parent",
            "--diff-merges=first-parent",
            "--no-renames",
            "--name-only",
            "-z",
            "--format=",
            f"{base}..{tip}",
            strip=False,
        )
        return {path.lstrip("\n") for path in out.split("\0") if path.lstrip("\n")}

    def prefetch_at(self, commit: str, paths: Sequence[str]) -> int:
        """Fetch in one request the blobs of ``paths`` at ``commit`` that a partial clone lacks: read one by one,
        each would start a lazy fetch of its own (a cold check of a 300-patch series started hundreds). Asked
        without a lazy fetch (one tree walk, ``--missing=print``); the trees are there, so one ``ls-tree`` names
        the blobs. Best effort: what cannot be fetched now is fetched (or found missing) when read. Returns how
        many blobs were asked for."""
        out = self.run("rev-list", "--objects", "--no-object-names", "--missing=print", "--no-walk", commit)
        lacking = {line[1:] for line in out.split("\n") if line.startswith("?")}
        if not lacking:
            return 0
        listed = self.tree_listing(commit, *sorted(set(paths)))
        wanted = sorted({sha for kind, sha, _path in listed if kind == "blob" and sha in lacking})
        if wanted:
            self.fetch_objects(wanted)
        return len(wanted)

    def prefetch_blobs(self, base: str, tip: str, paths: Sequence[str]) -> int:
        """Fetch in one request the blobs of ``paths`` in base..tip that a partial clone lacks.

        Reading them one by one would start one lazy fetch per blob. Best effort:
        what cannot be fetched now is fetched (or found missing) when read.
        """
        out = self.run(
            "rev-list",
            "--objects",
            "--no-object-names",
            "--missing=print",
            "--first-parent",
            tip,
            f"^{base}",
            "--",
            *paths,
            env=LITERAL_PATHS,
        )
        missing = [line[1:] for line in out.split("\n") if line.startswith("?")]
        if not missing:
            return 0
        missing += [sha for kind, sha, _path in self.tree_listing(base, *paths) if kind == "blob"]
        self.fetch_objects(missing)
        return len(missing)

    def fetch_objects(self, shas: Sequence[str]) -> None:
        """Fetch ``shas`` from origin in one request, as a partial clone's lazy fetch would one by one (best
        effort: what cannot be fetched now is fetched, or found missing, when read)."""
        try:
            self.run(
                "-c",
                "fetch.negotiationAlgorithm=noop",
                "fetch",
                "--quiet",
                "--no-tags",
                "--no-write-fetch-head",
                "--recurse-submodules=no",
                "--filter=blob:none",
                "--stdin",
                "origin",
                stdin="".join(f"{sha}\n" for sha in dict.fromkeys(shas)).encode(),
            )
        except GitError:
            pass

    def patch_ids(self, diffs: Sequence[bytes]) -> list[str | None]:
        """The stable patch-id of each diff (None: it changes nothing), in one ``git patch-id`` process.

        Each diff goes in after a ``commit <number>`` line of its own, which is how git patch-id tells one
        patch of its input from the next; a diff must hold no such line itself (a diff's lines do not: they
        start with ``diff``, a header word, ``@@``, a space, ``+``, ``-`` or ``\\``)."""
        if not diffs:
            return []
        feed = b"".join(b"commit %040x\n" % number + diff for number, diff in enumerate(diffs))
        out = self.run("patch-id", "--stable", stdin=feed)
        found: list[str | None] = [None] * len(diffs)
        for line in out.split("\n"):
            if line:
                pid, number = line.split()
                found[int(number, 16)] = pid
        return found

    def file_patch_ids(self, revisions: Sequence[str], paths: Sequence[str], context: int = 3) -> list[CommitChanges]:
        """Each commit on the first-parent lines ``revisions`` name that changes ``paths``, newest first, with the
        patch-id of its change to each of those files: one ``git log -p`` and one ``git patch-id --stable`` for
        them all (the log split per file), so the id of a commit's change to any subset of
        ``paths`` is known without another pass (``CommitChanges.patch_id``), as ``git cherry`` reads each side of
        its range once."""
        log = self.run(
            "log",
            "--first-parent",
            "--diff-merges=first-parent",
            "-p",
            f"-U{context}",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--full-index",
            "--src-prefix=a/",
            "--dst-prefix=b/",
            "--format=%x01%H %s",  # a line of a diff never starts with \x01: the commits are told apart by it
            *revisions,
            "--",
            *paths,
            env=LITERAL_PATHS,
            strip=False,
        )
        commits: list[tuple[str, str, list[list[str]]]] = []
        hunks = True  # whether the file part read last has a hunk: git patch-id ends a file's hash only after one
        for line in log.splitlines(keepends=True):
            if line.startswith("\x01"):
                sha, _, subject = line[1:].rstrip("\n").partition(" ")
                commits.append((sha, subject, []))
                hunks = True
            elif line.startswith("diff ") and commits:
                if hunks:
                    commits[-1][2].append([line])
                else:  # a rename, mode change or binary file without a hunk: hashed with the next file, as git does
                    commits[-1][2][-1].append(line)
                hunks = False
            elif commits and commits[-1][2]:
                commits[-1][2][-1].append(line)
                hunks = hunks or line.startswith("@@ ")
        sections = [section for _sha, _subject, files in commits for section in files]
        ids = self.patch_ids(["".join(section).encode("utf-8", "surrogateescape") for section in sections])
        found, position = [], 0
        for sha, subject, files in commits:
            changes = []
            for section in files:
                pid = ids[position]
                position += 1
                if pid is not None:
                    changes.append(FileChange(section_paths(section), pid))
            found.append(CommitChanges(sha, subject, tuple(changes)))
        return found


def section_paths(section: Sequence[str]) -> frozenset[str]:
    """The paths a part of a ``git diff`` names (``a/``, ``b/`` prefixes): both names of a rename or copy, one of a
    change, C-quoted names unquoted; a part is one file's change, or a hunkless one's and the next file's."""
    names: set[str] = set()
    header = False  # a file's header: from its "diff" line to its first hunk (a hunk's "--- x" removes "-- x")
    for line in section:
        if line.startswith("diff "):
            names |= _header_names(line)
            header = True
        elif line.startswith("@@"):
            header = False
        if not header:
            continue
        for head, prefix in (
            ("--- ", "a/"),
            ("+++ ", "b/"),
            ("rename from ", ""),
            ("rename to ", ""),
            ("copy from ", ""),
            ("copy to ", ""),
        ):
            if line.startswith(head):
                name = _unquoted(line[len(head) :].rstrip("\n"))
                if name != "/dev/null":
                    names.add(name.removeprefix(prefix))
    return frozenset(names)


def _header_names(line: str) -> set[str]:
    """The names of a ``diff --git a/X b/Y`` line where X is Y, or both are C-quoted (a mode change or a binary file
    names its file only there); other lines' names come from their ``---``/``+++`` or rename lines."""
    rest = line.rstrip("\n").removeprefix("diff --git ")
    half = (len(rest) - 1) // 2
    if rest.startswith("a/") and rest[half + 1 :].startswith("b/") and rest[2:half] == rest[half + 3 :]:
        return {rest[2:half]}
    if rest.startswith('"'):
        return {_unquoted(part).split("/", 1)[-1] for part in re.findall(r'"(?:[^"\\]|\\.)*"', rest)}
    return set()


def _unquoted(name: str) -> str:
    try:
        return unquote(name, Path("git log"))
    except PatchFormatError:
        return name
