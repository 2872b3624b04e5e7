"""The one boundary between patchmgr and git.

Every git command goes through ``GitRepo``, so that hardening applies
everywhere: no hooks run in repositories we create or read, the ``ext::``
transport is refused, and a failing command becomes a ``GitError`` carrying
the command and git's own words.

Commands run as plain subprocesses, and objects are read through one
long-lived ``git cat-file --batch`` per repository. Trees and blobs are
immutable, so they are kept (within a memory budget) by object id: reading
the same paths at the next commit costs one request for the commit and only
those that changed (``git_objects``). The hardened configuration and the one
subprocess wrapper are ``git_run``; a repository's history and the patches
made or applied with git are ``git_history`` and ``git_patches``, parts of
``GitRepo``. Only the ``io.git*`` modules run git.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from patchmgr.io.git_history import HistoryQueries
from patchmgr.io.git_objects import (
    SUBMODULE_MODE,
    SYMLINK_MODE,
    CommitInfo,
    LinkBlob,
    ObjectReader,
    ObjectUnavailable,
    SubmoduleEntry,
)
from patchmgr.io.git_patches import PatchOperations
from patchmgr.io.git_run import (
    LITERAL_PATHS,
    ConfigItems,
    RepositoryDamaged,
    config_env,
    config_pairs,
    execute,
    run_plain,
    trusted_config,
    untrusted_repo_config,
)
from patchmgr.model.errors import GitError
from patchmgr.model.mail import PATCHMGR_AUTHOR  # who patchmgr's own commits, notes and saves are by

_FULL_ID = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})\Z")


def identity_env(
    name: str = PATCHMGR_AUTHOR[0], address: str = PATCHMGR_AUTHOR[1], date: str | None = None
) -> dict[str, str]:
    """The author and committer of a git command that records something (a commit, a note, a stash)."""
    env = {
        "GIT_AUTHOR_NAME": name,
        "GIT_AUTHOR_EMAIL": address,
        "GIT_COMMITTER_NAME": name,
        "GIT_COMMITTER_EMAIL": address,
    }
    return env if date is None else {**env, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}


__all__ = ["LITERAL_PATHS", "CommitInfo", "GitRepo", "LinkBlob", "RepositoryDamaged", "SubmoduleEntry"]


_LINE_BREAK = re.compile("[\n\r\x00]")
_RECONFIGURES = {"config", "remote", "fetch"}


# git commands that only look must not write the repository (``git status`` would refresh .git/index):
# a refusal or a verify leaves a checkout byte for byte as it was
NO_OPTIONAL_LOCKS = {"GIT_OPTIONAL_LOCKS": "0"}


class GitRepo(HistoryQueries, PatchOperations):
    """A git repository (bare or not) that patchmgr reads and writes."""

    def __init__(self, path: Path, extra_config: ConfigItems | None = None, untrusted: bool = False) -> None:
        self.path = Path(path)
        self.untrusted = untrusted
        if untrusted:
            extra_config = untrusted_repo_config() + config_pairs(extra_config)
        self._env = {**os.environ, "LANGUAGE": "C", "LC_ALL": "C", **config_env(extra_config)}
        if untrusted and not any(name == "core.gitproxy" for name, _value in trusted_config()):
            # core.gitProxy: the first matching entry wins, so no later setting overrides the
            # repository's; the variable is read first (empty: no proxy) unless the user set one
            self._env.setdefault("GIT_PROXY_COMMAND", "")
        if not (self.path / ".git").exists():
            if not ((self.path / "HEAD").is_file() and (self.path / "objects").is_dir()):
                raise GitError(f"{self.path} is not a git repository", "check the path")
            # A bare repository, possibly without a config file (a mirror snapshot):
            # name it outright, or git would search the parent folders.
            self._env["GIT_DIR"] = str(self.path.resolve())
        self._objects: ObjectReader | None = None

    def local_config(self) -> list[tuple[str, str]]:
        """The repository's own config file as (key, value) pairs, includes not followed.

        Reading config runs nothing. A GitError when git cannot read the repository
        (a damaged HEAD or config, a half-made folder).
        """
        out = self.run("config", "--local", "--no-includes", "-z", "--list", strip=False)
        pairs = []
        for entry in out.split("\0"):
            if entry:
                key, _, value = entry.partition("\n")
                pairs.append((key, value))
        return pairs

    @classmethod
    def init(cls, path: Path, bare: bool = False, branch: str | None = None) -> GitRepo:
        """A new repository at ``path``, its HEAD on ``branch`` (not made yet) or on git's default one."""
        path.mkdir(parents=True, exist_ok=True)
        args = ["init", "--quiet"] + (["--bare"] if bare else []) + ([f"--initial-branch={branch}"] if branch else [])
        args.append(str(path))
        run_plain(args)
        return cls(path)

    # -- running commands -------------------------------------------------
    def run(
        self,
        *args: str,
        stdin: bytes | BinaryIO | None = None,
        env: Mapping[str, str] | None = None,
        strip: bool = True,
    ) -> str:
        if self._objects is not None and _RECONFIGURES.intersection(args[:3]):
            # the cat-file process read the config when it started: a new remote or promisor
            # setting (lazy fetches of missing blobs) takes a fresh one; what it read stays kept
            self._objects.close()
        return execute(
            args, self.path, {**self._env, **(env or {})}, stdin, strip, self.path if self.untrusted else None
        )

    def run_ok(self, *args: str) -> bool:
        try:
            self.run(*args)
            return True
        except GitError:
            return False

    # -- objects ----------------------------------------------------------
    def index_history(self, commit: str) -> None:
        """Add ``commit``'s history to the commit-graph, with changed-path Bloom filters (best effort).

        A path-limited walk (bisect, patch-id evidence, blob prefetch) over ten
        thousand commits then reads a few bits per commit instead of comparing
        trees: 0.26 s became 0.05 s for one file over 10,000 commits. A cache
        clone has no refs for ``--reachable`` to find, so the commit is named.
        """
        try:
            self.run(
                "commit-graph",
                "write",
                "--no-progress",
                "--stdin-commits",
                "--append",
                "--changed-paths",
                stdin=f"{commit}\n".encode(),
            )
            with open(self._indexed_record(), "a") as record:
                record.write(f"{commit}\n")
        except (GitError, OSError):
            pass

    def prefetch_range(self, base: str, tip: str, paths: Sequence[str]) -> None:
        """``prefetch_blobs`` once per range and paths (recorded): fetched blobs stay, and walking the range's
        objects again to find none missing costs as much as the log that reads them."""
        key = hashlib.sha1("\0".join(sorted(paths)).encode()).hexdigest()
        self._recorded(tip, f"prefetched {base} {key}", lambda: self.prefetch_blobs(base, tip, paths))

    def history_indexed(self, commit: str) -> bool:
        """Whether ``index_history`` indexed ``commit`` (a commit can also arrive by a lazy fetch, unindexed)."""
        try:
            return commit in self._indexed_record().read_text().split()
        except OSError:
            return False

    def _indexed_record(self) -> Path:
        return self._info_file("patchmgr-indexed")

    def _info_file(self, name: str) -> Path:
        return self._objects_dir() / "info" / name

    def _objects_dir(self) -> Path:
        return Path(self._env.get("GIT_DIR") or self.path / ".git") / "objects"

    def pack_count(self) -> int:
        """How many packs the object store holds: each fetch into a partial clone leaves one, and every git process
        then opens every pack's index (at 1,400 packs a lazy fetch took six times as long as at a few)."""
        try:
            return sum(1 for _ in (self._objects_dir() / "pack").glob("*.pack"))
        except OSError:
            return 0

    def repack(self) -> None:
        """Make the packs one (``git repack -a -d``; a partial clone's promisor objects go into a promisor pack of
        their own, so what may be fetched later stays known). A reader that has an old pack open keeps it until it
        closes it; a fetch that writes a pack meanwhile keeps its pack."""
        self.close()  # the cat-file process would keep the old packs open
        self.run("repack", "-a", "-d", "-q", "--no-write-bitmap-index")

    def first_parent_grep(self, commit: str, pattern: str) -> list[CommitInfo]:
        """The commits of ``commit``'s first-parent line whose message matches the extended regex ``pattern``,
        newest first (recorded: the walk reads every commit's message)."""

        def walk() -> list[list[object]]:
            found = self.log_commits("--first-parent", "-E", f"--grep={pattern}", commit)
            return [[c.sha, c.subject, list(c.parents)] for c in found]

        return [
            CommitInfo(sha, subject, tuple(parents))
            for sha, subject, parents in self._recorded(commit, f"grep {pattern}", walk)
        ]

    def reaches(self, commit: str, other: str) -> bool:
        """Whether ``other`` is ``commit`` or one of its ancestors (recorded)."""
        return bool(
            self._recorded(
                commit, f"reaches {other}", lambda: self.run_ok("merge-base", "--is-ancestor", other, commit)
            )
        )

    def _recorded(self, commit: str, question: str, answer: Callable[[], Any]) -> Any:
        """``answer()`` about the history of ``commit``, a full id: that history never changes, so each answer is
        kept in a record beside the commit-graph (best effort, JSON lines) and read from there the next time."""
        if not _FULL_ID.match(commit):  # a name that moves: nothing to keep
            return answer()
        key = json.dumps([commit, question])
        record = self._info_file("patchmgr-answers")
        try:
            for line in record.read_text(encoding="utf-8").split("\n"):
                if line.startswith(key[:-1] + ","):
                    return json.loads(line)[2]
        except (OSError, ValueError, IndexError):
            pass
        value = answer()
        try:
            with open(record, "a", encoding="utf-8") as out:
                out.write(json.dumps([commit, question, value]) + "\n")
        except OSError:
            pass
        return value

    def has_commit(self, sha: str) -> bool:
        # through the cat-file --batch process that reads the files next: no process of its own
        return not _LINE_BREAK.search(sha) and self._objects_reader().kind(f"{sha}^{{commit}}") == "commit"

    def resolve(self, ref: str) -> str | None:
        """The commit id of ``ref`` in this repository, or None."""
        try:
            return self.run("rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
        except GitError:
            return None

    def read_path(self, commit: str, path: str) -> bytes | None:
        """The bytes of ``path`` at ``commit``, or None when the path is absent (or a folder).

        Walks the commit's trees through the persistent ``cat-file --batch``
        process, so reading the few blobs a patch touches costs no process start
        each, and a tree or blob already read (at this commit or another) costs
        nothing. A symbolic link is a blob too (its bytes are the link's target):
        it comes back as a ``LinkBlob``, so that the engine refuses to patch it or
        write through it; a submodule as an empty ``SubmoduleEntry``.
        """
        if _LINE_BREAK.search(path):
            return None  # a line break would desynchronise the --batch process's protocol
        entry = self._objects_reader().entry(commit, path)
        if entry is not None and entry[0] == SUBMODULE_MODE:
            return SubmoduleEntry()
        if entry is None or not (entry[0].startswith("100") or entry[0] == SYMLINK_MODE):
            return None  # absent or a folder
        try:
            data = self.read_blob(entry[1])
        except ObjectUnavailable as exc:
            raise ObjectUnavailable(exc.sha, f"{path} at {commit[:12]}") from None
        if data is None:
            return None
        return LinkBlob(data) if entry[0] == SYMLINK_MODE else data

    def path_entries(self, commit: str, paths: Sequence[str]) -> tuple[tuple[str, str] | None, ...]:
        """``(mode, object id)`` of each of ``paths`` at ``commit``, None where absent: what reading them returns
        depends on nothing else, so equal entries at two commits mean equal check results there."""
        reader = self._objects_reader()
        return tuple(None if _LINE_BREAK.search(path) else reader.entry(commit, path) for path in paths)

    def read_blob(self, sha: str) -> bytes | None:
        if _LINE_BREAK.search(sha):
            return None
        return self._objects_reader().blob(sha)

    def commit_times(self, shas: Sequence[str]) -> dict[str, int]:
        """The committer time of each commit of ``shas`` (seconds since the epoch), read through the object reader
        the run already has open: no process per commit. A name that is no commit is left out."""
        reader = self._objects_reader()
        times = {}
        for sha in dict.fromkeys(shas):
            when = None if _LINE_BREAK.search(sha) else reader.commit_time(sha)
            if when is not None:
                times[sha] = when
        return times

    def _objects_reader(self) -> ObjectReader:
        if self._objects is None:
            self._objects = ObjectReader(self.path, self._env, self.untrusted)
        return self._objects

    def file_paths(self, commit: str) -> list[str]:
        """Every path at ``commit`` that is not a folder (files, links, submodules): what a glob is matched against."""
        out = self.run("ls-tree", "-r", "-z", "--name-only", "--full-tree", commit, strip=False)
        return [name for name in out.split("\0") if name]

    def is_shallow(self) -> bool:
        """Whether the repository is a shallow clone (``--depth``): its history stops at commits whose parents it
        lacks."""
        return self.run("rev-parse", "--is-shallow-repository") == "true"

    def missing_blobs(self, commit: str) -> list[str]:
        """Paths at ``commit`` whose blobs this repository lacks (a mirror without its large files)."""
        blobs = [(sha, path) for kind, sha, path in self.tree_listing(commit) if kind == "blob"]
        if not blobs:
            return []
        checked = self.run("cat-file", "--batch-check", stdin="".join(f"{sha}\n" for sha, _ in blobs).encode())
        answers = checked.split("\n")  # one line per blob asked, in order (and no line after the last LF)
        return [path for (_sha, path), line in zip(blobs, answers, strict=False) if line.endswith(" missing")]

    def unfetched_files(self, commit: str) -> list[str]:
        """Paths at ``commit`` whose blobs a partial clone has not fetched, asked without a lazy fetch (so a
        promisor remote out of reach costs nothing)."""
        out = self.run("rev-list", "--objects", "--no-object-names", "--missing=print", "--no-walk", commit)
        lacking = {line[1:] for line in out.split("\n") if line.startswith("?")}
        if not lacking:
            return []
        return [path for kind, sha, path in self.tree_listing(commit) if kind == "blob" and sha in lacking]

    def unfetched_objects(self, commit: str) -> list[str]:
        """Objects reachable from ``commit`` that a partial clone has not fetched (no lazy fetch)."""
        out = self.run("rev-list", "--objects", "--no-object-names", "--missing=print", commit)
        return [line[1:] for line in out.split("\n") if line.startswith("?")]

    def close(self) -> None:
        if self._objects is not None:
            self._objects.close()
            self._objects = None

    def __enter__(self) -> GitRepo:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
