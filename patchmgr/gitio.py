"""The one boundary between patchmgr and git.

Every git command goes through ``GitRepo`` (GitPython underneath), so that
hardening applies everywhere: no hooks run in repositories we create or read,
the ``ext::`` transport is refused, and a failing command becomes a
``GitError`` carrying the command and git's own words.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import git as gitpython

from patchmgr.errors import GitError

FULL_SHA = re.compile(r"^[0-9a-f]{40}$")
# paths from patch files are file names, never pathspec magic such as ":(exclude)"
_LITERAL = {"GIT_LITERAL_PATHSPECS": "1"}

# Applied to every git process through GIT_CONFIG_* variables, so a hostile
# repository's config or an inherited setting cannot run code on our behalf.
_HARDENING = {
    "core.hooksPath": os.devnull,
    "protocol.ext.allow": "never",
    "core.fsmonitor": "false",
    "advice.detachedHead": "false",
    "init.defaultBranch": "main",
    "gc.auto": "0",
    # a stalled server fails the fetch instead of hanging an image build
    "http.lowSpeedLimit": "1000",
    "http.lowSpeedTime": "60",
}


def _config_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    items = {**_HARDENING, **(extra or {})}
    env = {"GIT_CONFIG_COUNT": str(len(items)), "GIT_TERMINAL_PROMPT": "0"}
    for index, (key, value) in enumerate(items.items()):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    return env


SYMLINK_MODE = "120000"


class LinkBlob(bytes):
    """The blob of a symbolic link: its bytes are the link's target, not file content.

    Readers of upstream trees return it for links (``is_symlink`` is what the
    engine looks for), because writing a patched link's path would write
    through the link, possibly outside the tree.
    """

    is_symlink = True


def tree_entry_mode(tree: bytes, name: bytes, hash_size: int) -> str | None:
    """The mode of entry ``name`` in a raw tree object (``<mode> <name>\\0<hash>`` entries), or None."""
    pos = 0
    while pos < len(tree):
        space = tree.index(b" ", pos)
        nul = tree.index(b"\0", space)
        if tree[space + 1: nul] == name:
            return tree[pos: space].decode("ascii")
        pos = nul + 1 + hash_size
    return None


@dataclass(frozen=True)
class TreeEntry:
    mode: str
    kind: str
    sha: str


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    subject: str
    parents: tuple[str, ...]


class GitRepo:
    """A git repository (bare or not) that patchmgr reads and writes."""

    def __init__(self, path: Path, extra_config: Mapping[str, str] | None = None) -> None:
        self.path = Path(path)
        try:
            self._repo = gitpython.Repo(self.path)
        except (gitpython.InvalidGitRepositoryError, gitpython.NoSuchPathError) as exc:
            raise GitError(f"{self.path} is not a git repository", "check the path") from exc
        self._repo.git.update_environment(**_config_env(extra_config))
        if not (self.path / ".git").exists():
            # A bare repository, possibly without a config file (a mirror snapshot):
            # name it outright, or git would search the parent folders.
            self._repo.git.update_environment(GIT_DIR=str(self.path.resolve()))

    @classmethod
    def init(cls, path: Path, bare: bool = False) -> GitRepo:
        path.mkdir(parents=True, exist_ok=True)
        args = ["init", "--quiet"] + (["--bare"] if bare else []) + [str(path)]
        _run_plain(args)
        return cls(path)

    # -- running commands -------------------------------------------------
    def run(self, *args: str, stdin: bytes | None = None, env: Mapping[str, str] | None = None,
            strip: bool = True) -> str:
        try:
            return self._repo.git.execute(
                ["git", *args], istream=None if stdin is None else _BytesStream(stdin),
                env=dict(env or {}), strip_newline_in_stdout=strip,
            )
        except gitpython.GitCommandError as exc:
            raise _as_git_error(exc) from exc

    def run_ok(self, *args: str) -> bool:
        try:
            self._repo.git.execute(["git", *args])
            return True
        except gitpython.GitCommandError:
            return False

    # -- objects ----------------------------------------------------------
    def has_commit(self, sha: str) -> bool:
        return self.run_ok("cat-file", "-e", f"{sha}^{{commit}}")

    def resolve(self, ref: str) -> str | None:
        """The commit id of ``ref`` in this repository, or None."""
        try:
            return self.run("rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
        except GitError:
            return None

    def read_path(self, commit: str, path: str) -> bytes | None:
        """The bytes of ``path`` at ``commit``, or None when the path is absent (or a folder).

        Uses git's persistent ``cat-file --batch`` process, so reading the few
        blobs a patch touches costs no process start each. A symbolic link is
        a blob too (its bytes are the link's target): it comes back as a
        ``LinkBlob``, so that the engine refuses to patch it or write through it.
        """
        if any(char in path for char in "\n\r\x00"):
            return None  # a line break would desynchronise the --batch process's protocol
        try:
            _sha, kind, _size, data = self._repo.git.get_object_data(f"{commit}:{path}")
        except ValueError:
            return None
        if kind != b"blob" and kind != "blob":
            return None
        return LinkBlob(data) if self._mode(commit, path) == SYMLINK_MODE else data

    def _mode(self, commit: str, path: str) -> str | None:
        """The mode of ``path`` in its folder's tree object, read through the same --batch process."""
        parent, _, name = path.rpartition("/")
        try:
            sha, _kind, _size, tree = self._repo.git.get_object_data(f"{commit}:{parent}")
        except ValueError:
            return None
        return tree_entry_mode(tree, name.encode("utf-8", "surrogateescape"), len(sha) // 2)

    def read_blob(self, sha: str) -> bytes | None:
        try:
            _sha, kind, _size, data = self._repo.git.get_object_data(sha)
        except ValueError:
            return None
        return data if kind in (b"blob", "blob") else None

    def tree_entry(self, commit: str, path: str) -> TreeEntry | None:
        out = self.run("ls-tree", "--full-tree", commit, "--", path)
        if not out:
            return None
        meta, _, _name = out.partition("\t")
        mode, kind, sha = meta.split()
        return TreeEntry(mode, kind, sha)

    def missing_blobs(self, commit: str) -> list[str]:
        """Paths at ``commit`` whose blobs this repository lacks (a mirror without its large files)."""
        listing = self.run("ls-tree", "-r", "--full-tree", commit)
        entries = [line.split("\t", 1) for line in listing.splitlines() if "\t" in line]
        blobs = [(meta.split()[2], path) for meta, path in entries if meta.split()[1] == "blob"]
        if not blobs:
            return []
        checked = self.run("cat-file", "--batch-check", stdin="".join(f"{sha}\n" for sha, _ in blobs).encode())
        return [path for (_sha, path), line in zip(blobs, checked.splitlines()) if line.endswith(" missing")]

    def unfetched_objects(self, commit: str) -> list[str]:
        """Objects reachable from ``commit`` that a partial clone has not fetched (no lazy fetch)."""
        out = self.run("rev-list", "--objects", "--missing=print", commit)
        return [line[1:] for line in out.splitlines() if line.startswith("?")]

    def hash_blob(self, data: bytes) -> str:
        return self.run("hash-object", "--stdin", stdin=data)

    def commit_info(self, sha: str) -> CommitInfo:
        out = self.run("show", "-s", "--format=%H%x00%P%x00%s", sha)
        full, parents, subject = out.split("\x00", 2)
        return CommitInfo(full, subject, tuple(parents.split()))

    def first_parent_path(self, base: str, tip: str) -> list[str]:
        """Commits from just after ``base`` up to ``tip`` along first parents, oldest first."""
        out = self.run("rev-list", "--first-parent", "--reverse", f"{base}..{tip}")
        return out.split() if out else []

    def merge_base(self, a: str, b: str) -> str | None:
        try:
            return self.run("merge-base", a, b) or None
        except GitError:
            return None

    # -- history, for bisect, refresh and patch-id evidence (issue 6) --------
    def commits_touching(self, base: str, tip: str, paths: Sequence[str]) -> list[CommitInfo]:
        """Commits after ``base`` up to ``tip`` on ``tip``'s first-parent line that change ``paths``.

        Oldest first. A merge on that line counts when its change against its
        first parent touches the paths (git includes it under --first-parent).
        """
        out = self.run("log", "--first-parent", "--reverse", "--format=%H%x00%P%x00%s",
                       f"{base}..{tip}", "--", *paths, env=_LITERAL)
        commits = []
        for line in out.splitlines():
            sha, parents, subject = line.split("\x00", 2)
            commits.append(CommitInfo(sha, subject, tuple(parents.split())))
        return commits

    def prefetch_blobs(self, base: str, tip: str, paths: Sequence[str]) -> int:
        """Fetch in one request the blobs of ``paths`` in base..tip that a partial clone lacks.

        Reading them one by one would start one lazy fetch per blob. Best effort:
        what cannot be fetched now is fetched (or found missing) when read.
        """
        out = self.run("rev-list", "--objects", "--missing=print", "--first-parent", tip, f"^{base}",
                       "--", *paths, env=_LITERAL)
        missing = [line[1:] for line in out.splitlines() if line.startswith("?")]
        if not missing:
            return 0
        listing = self.run("ls-tree", "--full-tree", base, "--", *paths, env=_LITERAL)
        missing += [line.split()[2] for line in listing.splitlines() if line.split()[1:2] == ["blob"]]
        try:
            self.run("-c", "fetch.negotiationAlgorithm=noop", "fetch", "--quiet", "--no-tags",
                     "--no-write-fetch-head", "--recurse-submodules=no", "--filter=blob:none", "--stdin", "origin",
                     stdin="".join(f"{sha}\n" for sha in dict.fromkeys(missing)).encode())
        except GitError:
            pass
        return len(missing)

    def path_patch_ids(self, base: str, tip: str, paths: Sequence[str], context: int = 3) -> list[tuple[str, str]]:
        """``(patch-id, commit)`` for each commit of ``commits_touching``, its diff limited to ``paths``.

        Stable patch-ids (``git patch-id --stable``) ignore line numbers and
        whitespace, so a commit carrying a patch's change has the patch's id.
        """
        log = self.run("log", "--first-parent", "--diff-merges=first-parent", "-p", f"-U{context}", "--no-color",
                       "--no-ext-diff", "--no-textconv", "--full-index", "--src-prefix=a/", "--dst-prefix=b/",
                       "--format=commit %H", f"{base}..{tip}", "--", *paths, env=_LITERAL, strip=False)
        if not log.strip():
            return []
        out = self.run("patch-id", "--stable", stdin=log.encode("utf-8", "surrogateescape"))
        return [(pid, commit) for pid, commit in (line.split() for line in out.splitlines())]

    def patch_id(self, diff: bytes) -> str | None:
        """The stable patch-id of a diff or a format-patch mail, or None when it changes nothing."""
        out = self.run("patch-id", "--stable", stdin=diff)
        return out.split()[0] if out else None

    def diff_texts(self, old: bytes, new: bytes, context: int) -> str:
        """The hunks (from the first ``@@``) that turn ``old`` into ``new``, as git writes them."""
        old_sha = self.run("hash-object", "-w", "--stdin", stdin=old)
        new_sha = self.run("hash-object", "-w", "--stdin", stdin=new)
        out = self.run("diff", f"-U{context}", "--no-color", "--no-ext-diff", "--no-textconv", old_sha, new_sha,
                       strip=False)
        start = out.find("\n@@ ")
        return out[start + 1:] if start >= 0 else ""

    def diffstat(self, before: Mapping[str, bytes | None], after: Mapping[str, bytes | None]) -> str:
        """The diffstat lines that ``git format-patch`` writes for a change from ``before`` to ``after``."""
        trees = []
        with tempfile.TemporaryDirectory(prefix="patchmgr-stat-") as tmp:
            env = {**_LITERAL, "GIT_INDEX_FILE": os.path.join(tmp, "index")}
            for files in (before, after):
                self.run("read-tree", "--empty", env=env)
                for path, data in files.items():
                    if data is not None:
                        sha = self.run("hash-object", "-w", "--stdin", stdin=data)
                        self.run("update-index", "--add", "--cacheinfo", f"100644,{sha},{path}", env=env)
                trees.append(self.run("write-tree", env=env))
        return self.run("diff", "--stat=72", "--no-color", "--no-renames", *trees, strip=False)

    def format_patch(self, commit: str) -> str:
        """``commit`` as one patch mail in patchmgr's format, whatever the user's git config says."""
        return self.run("format-patch", "-1", "--stdout", "--zero-commit", "--full-index", "--no-signature",
                        "--no-numbered", "--no-color", "--no-thread", "--no-attach", "--no-cover-letter",
                        "--no-to", "--no-cc", "--no-add-header", "--no-base", "--src-prefix=a/", "--dst-prefix=b/",
                        "--stat=72", commit, strip=False)

    def close(self) -> None:
        self._repo.close()

    def __enter__(self) -> GitRepo:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def merge_texts(base: bytes, ours: bytes, theirs: bytes) -> bytes | None:
    """A 3-way merge of three texts (``git merge-file``), or None when it leaves conflicts."""
    with tempfile.TemporaryDirectory(prefix="patchmgr-merge-") as tmp:
        names = []
        for label, data in (("ours", ours), ("base", base), ("theirs", theirs)):
            name = os.path.join(tmp, label)
            Path(name).write_bytes(data)
            names.append(name)
        git_cmd = gitpython.Git(tmp)
        git_cmd.update_environment(**_config_env())
        try:
            return git_cmd.execute(["git", "merge-file", "-p", *names],
                                   strip_newline_in_stdout=False, stdout_as_string=False)
        except gitpython.GitCommandError:
            return None


def _run_plain(args: Iterable[str], cwd: Path | None = None) -> str:
    git_cmd = gitpython.Git(str(cwd) if cwd else None)
    git_cmd.update_environment(**_config_env())
    try:
        return git_cmd.execute(["git", *args])
    except gitpython.GitCommandError as exc:
        raise _as_git_error(exc) from exc


def _as_git_error(exc: gitpython.GitCommandError) -> GitError:
    command = exc.command if isinstance(exc.command, list) else str(exc.command).split()
    stderr = re.sub(r"^\s*stderr: '|'\s*$", "", _text(exc.stderr).strip()).strip()
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    detail = lines[-1] if lines else f"exit code {exc.status}"
    detail = re.sub(r"^(fatal|error): ", "", detail)
    verb = " ".join(str(part) for part in command[1:2])
    return GitError(f"git {verb}: {detail}", "see git's message above")


def _text(value) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value or "")


class _BytesStream:
    """What GitPython's ``istream`` needs: a file-like object for a subprocess stdin."""

    def __init__(self, data: bytes) -> None:
        self._file = tempfile.TemporaryFile()
        self._file.write(data)
        self._file.seek(0)

    def fileno(self) -> int:
        return self._file.fileno()

    def read(self, *args):
        return self._file.read(*args)
