"""The one boundary between patchmgr and git.

Every git command goes through ``GitRepo``, so that hardening applies
everywhere: no hooks run in repositories we create or read, the ``ext::``
transport is refused, and a failing command becomes a ``GitError`` carrying
the command and git's own words.

Commands run as plain subprocesses, and objects are read through one
long-lived ``git cat-file --batch`` per repository. Trees and blobs are
immutable, so they are kept (within a memory budget) by object id: reading
the same paths at the next commit costs one request for the commit and only
those that changed (GitPython was here before; importing it alone took a
third of a second of every CLI start).
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import subprocess
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from patchmgr.errors import GitError

FULL_SHA = re.compile(r"^[0-9a-f]{40}$")
_OBJECT_ID = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
_LINE_BREAK = re.compile("[\n\r\x00]")
_RECONFIGURES = {"config", "remote", "fetch"}
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


ConfigItems = Mapping[str, str] | Sequence[tuple[str, str]]


def _config_env(extra: ConfigItems | None = None) -> dict[str, str]:
    pairs = list(_HARDENING.items())
    pairs += list(extra.items()) if isinstance(extra, Mapping) else list(extra or ())
    env = {"GIT_CONFIG_COUNT": str(len(pairs)), "GIT_TERMINAL_PROMPT": "0"}
    for index, (key, value) in enumerate(pairs):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    return env


# -- a repository whose config patchmgr does not trust (the cache) ------------------
# Keys that make git run a program, with the value git uses when nobody sets them. In a
# repository of the cache each one is set on the command line (the last, winning scope) to
# the user's own value (system or global config) or else to that default, so whatever the
# repository's own config says is never run. Defaults are git's own: what runs is what
# would run with no repository config at all.
_PROGRAM_DEFAULTS = {
    "core.sshcommand": None,  # git's default depends on GIT_SSH: computed in _program_default
    "core.askpass": None,
    "core.pager": "cat",
    "core.editor": None,
    "sequence.editor": None,
    "core.alternaterefscommand": 'f() { git --git-dir="$1" for-each-ref --format="%(objectname)"; }; f',
    "gpg.program": "gpg",
    "gpg.openpgp.program": "gpg",
    "gpg.x509.program": "gpgsm",
    "gpg.ssh.program": "ssh-keygen",
    "remote.origin.receivepack": "git-receive-pack",
}
_PROGRAM_KEYS = re.compile(r"^(" + "|".join(re.escape(key) for key in _PROGRAM_DEFAULTS)
                           + r"|credential\..*\.?helper|core\.gitproxy)$")
_TRUSTED: dict[tuple, list[tuple[str, str]]] = {}


def _program_default(key: str) -> str:
    if _PROGRAM_DEFAULTS.get(key) is not None:
        return _PROGRAM_DEFAULTS[key]
    if key == "core.sshcommand":
        return shlex.quote(os.environ["GIT_SSH"]) if os.environ.get("GIT_SSH") else "ssh"
    if key == "core.askpass":
        return os.environ.get("SSH_ASKPASS", "")  # empty: no askpass program (git then fails, prompting nothing)
    return os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"  # the editors (never started here)


def _trusted_config() -> list[tuple[str, str]]:
    """The program keys set in the system and global config (the user's own), in git's order.

    Read with one ``git config`` (again only when the variables naming those files
    change); entries from a repository's own config (scope ``local``/``worktree``)
    are dropped, whatever folder this runs in.
    """
    key = tuple(os.environ.get(name) for name in ("HOME", "XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL",
                                                  "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM"))
    if key not in _TRUSTED:
        pairs = []
        try:
            done = subprocess.run(["git", "config", "-z", "--show-scope", "--includes", "--get-regexp",
                                   _PROGRAM_KEYS.pattern], env=_plain_env(), capture_output=True,
                                  stdin=subprocess.DEVNULL, cwd=os.path.abspath(os.sep))
            fields = done.stdout.decode("utf-8", "surrogateescape").split("\0")
            for scope, entry in zip(fields[0::2], fields[1::2]):
                name, _, value = entry.partition("\n")
                if scope in ("system", "global"):
                    pairs.append((name, value))
        except OSError:
            pass
        _TRUSTED[key] = pairs
    return _TRUSTED[key]


def untrusted_repo_config() -> list[tuple[str, str]]:
    """Command-line config for git in a repository whose own config may not be trusted.

    Every key that runs a program is overridden: single-valued keys take the user's
    own value or git's default; the credential helper list is emptied and then given
    the user's own helpers again; ``core.gitProxy`` (where the first match wins, so a
    later setting cannot override it) is neutralised through GIT_PROXY_COMMAND in
    ``GitRepo``. Keys that only run a program through attributes or options patchmgr
    never uses (``diff.external``, ``diff.<driver>.*``, ``filter.<driver>.*``,
    ``merge.<driver>.*``) cannot be overridden this way; patchmgr passes
    ``--no-ext-diff --no-textconv``, never checks out or merges in the cache, and the
    cache refuses any config key it did not write (``store.check_cache_config``).
    """
    trusted = _trusted_config()
    pairs = [(key, _last(trusted, key) or _program_default(key)) for key in _PROGRAM_DEFAULTS]
    pairs.append(("credential.helper", ""))
    pairs += [(key, value) for key, value in trusted if key.startswith("credential.") and key.endswith("helper")]
    return pairs


def _last(pairs: Sequence[tuple[str, str]], key: str) -> str | None:
    values = [value for name, value in pairs if name == key]
    return values[-1] if values else None


# -- credentials never reach the output ---------------------------------------------
_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^/@\s:'\"]*):([^/\s'\"]*)@")  # to the authority's last @


def mask_url(text: str) -> str:
    """``text`` with the password of every URL in it masked: https://user:***@host/x."""
    return _CREDENTIALS.sub(r"\1:***@", text) if text and "@" in text else text


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

    def __init__(self, path: Path, extra_config: ConfigItems | None = None, untrusted: bool = False) -> None:
        self.path = Path(path)
        self.untrusted = untrusted
        if untrusted:
            extra_config = untrusted_repo_config() + _pairs(extra_config)
        self._env = {**os.environ, "LANGUAGE": "C", "LC_ALL": "C", **_config_env(extra_config)}
        if untrusted and not any(name == "core.gitproxy" for name, _value in _trusted_config()):
            # core.gitProxy: the first matching entry wins, so no later setting overrides the
            # repository's; the variable is read first (empty: no proxy) unless the user set one
            self._env.setdefault("GIT_PROXY_COMMAND", "")
        if not (self.path / ".git").exists():
            if not ((self.path / "HEAD").is_file() and (self.path / "objects").is_dir()):
                raise GitError(f"{self.path} is not a git repository", "check the path")
            # A bare repository, possibly without a config file (a mirror snapshot):
            # name it outright, or git would search the parent folders.
            self._env["GIT_DIR"] = str(self.path.resolve())
        self._objects: _ObjectReader | None = None

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
    def init(cls, path: Path, bare: bool = False) -> GitRepo:
        path.mkdir(parents=True, exist_ok=True)
        args = ["init", "--quiet"] + (["--bare"] if bare else []) + [str(path)]
        _run_plain(args)
        return cls(path)

    # -- running commands -------------------------------------------------
    def run(self, *args: str, stdin: bytes | None = None, env: Mapping[str, str] | None = None,
            strip: bool = True) -> str:
        if self._objects is not None and _RECONFIGURES.intersection(args[:3]):
            # the cat-file process read the config when it started: a new remote or promisor
            # setting (lazy fetches of missing blobs) takes a fresh one; what it read stays kept
            self._objects.close()
        return _execute(args, self.path, {**self._env, **(env or {})}, stdin, strip,
                        self.path if self.untrusted else None)

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
            self.run("commit-graph", "write", "--no-progress", "--stdin-commits", "--append", "--changed-paths",
                     stdin=f"{commit}\n".encode())
            with open(self._indexed_record(), "a") as record:
                record.write(f"{commit}\n")
        except (GitError, OSError):
            pass

    def history_indexed(self, commit: str) -> bool:
        """Whether ``index_history`` indexed ``commit`` (a commit can also arrive by a lazy fetch, unindexed)."""
        try:
            return commit in self._indexed_record().read_text().split()
        except OSError:
            return False

    def _indexed_record(self) -> Path:
        return Path(self._env.get("GIT_DIR") or self.path / ".git") / "objects" / "info" / "patchmgr-indexed"

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
        data = self.read_blob(entry[1])
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

    def _objects_reader(self) -> _ObjectReader:
        if self._objects is None:
            self._objects = _ObjectReader(self.path, self._env, self.untrusted)
        return self._objects

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
        if self._objects is not None:
            self._objects.close()
            self._objects = None

    def __enter__(self) -> GitRepo:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_MERGES: OrderedDict[bytes, bytes | None] = OrderedDict()
_MERGES_KEPT = 256


def merge_texts(base: bytes, ours: bytes, theirs: bytes) -> bytes | None:
    """A 3-way merge of three texts (``git merge-file``), or None when it leaves conflicts.

    The outcome is kept for the same three texts: a patch that does not apply
    is tried again at every commit of a sweep or a bisect walk, mostly against
    the same file, and each merge is a process.
    """
    key = hashlib.sha256(b"%d %d %d\0" % (len(base), len(ours), len(theirs)) + base + ours + theirs).digest()
    if key in _MERGES:
        _MERGES.move_to_end(key)
        return _MERGES[key]
    tmp = _merge_folder()
    names = []
    for label, data in (("ours", ours), ("base", base), ("theirs", theirs)):
        name = os.path.join(tmp, f"{label}-{threading.get_ident()}")
        Path(name).write_bytes(data)
        names.append(name)
    done = subprocess.run(["git", "merge-file", "-p", *names], cwd=tmp, env=_plain_env(),
                          stdin=subprocess.DEVNULL, capture_output=True)
    merged = done.stdout if done.returncode == 0 else None
    _MERGES[key] = merged
    if len(_MERGES) > _MERGES_KEPT:
        _MERGES.popitem(last=False)
    return merged


_MERGE_FOLDER: dict[int, tempfile.TemporaryDirectory] = {}


def _merge_folder() -> str:
    """One private folder per process for merge-file's three inputs (making and removing a folder per
    merge cost about as much as the merge); removed when the process ends."""
    pid = os.getpid()
    if pid not in _MERGE_FOLDER:
        _MERGE_FOLDER[pid] = tempfile.TemporaryDirectory(prefix="patchmgr-merge-")
    return _MERGE_FOLDER[pid].name


def _pairs(items: ConfigItems | None) -> list[tuple[str, str]]:
    return list(items.items()) if isinstance(items, Mapping) else list(items or ())


def _run_plain(args: Iterable[str], cwd: Path | None = None) -> str:
    return _execute(tuple(args), cwd, _plain_env(), None, True)


def _plain_env() -> dict[str, str]:
    return {**os.environ, "LANGUAGE": "C", "LC_ALL": "C", **_config_env()}


def _execute(args: Sequence[str], cwd: Path | None, env: Mapping[str, str], stdin: bytes | None,
             strip: bool, repository: Path | None = None) -> str:
    """Run ``git args``; its output as text (one final line break dropped when ``strip``), or a GitError."""
    try:
        done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True,
                              input=stdin, stdin=subprocess.DEVNULL if stdin is None else None)
    except OSError as exc:
        raise GitError(f"cannot run git: {exc.strerror}", "install git, or put it on PATH") from exc
    if done.returncode != 0:
        raise _as_git_error(["git", *args], done.returncode, done.stderr, repository)
    out = done.stdout.decode("utf-8", "surrogateescape")
    return out[:-1] if strip and out.endswith("\n") else out


def _as_git_error(command: Sequence[str], status: int, stderr: bytes | str,
                  repository: Path | None = None) -> GitError:
    lines = [mask_url(line.strip()) for line in _text(stderr).strip().splitlines() if line.strip()]
    # git's first fatal line is the cause ("'/x' does not appear to be a git repository"); what follows
    # is advice ("Please make sure you have the correct access rights / and the repository exists.")
    fatal = [line for line in lines if line.startswith("fatal: ")]
    detail = fatal[0] if fatal else lines[-1] if lines else f"exit code {status}"
    detail = re.sub(r"^(fatal|error): ", "", detail)
    detail = re.sub(r"^unable to access '[^']*': ", "", detail)  # the URL is said by whoever reports it
    verb = " ".join(str(part) for part in command[1:2])
    damage = damage_in(stderr) if repository is not None else None
    if damage:
        return RepositoryDamaged(repository, damage)
    return GitError(f"git {verb}: {detail}", "see git's message above")


# What git says when a repository's own files are broken (not when a remote fails).
_DAMAGE = re.compile(
    r"does not match index|is corrupt|corrupt (?:loose|packed) object|object file \S+ is empty|inflate: "
    r"|unable to unpack|bad config line|bad config variable|not a git repository|invalid object type"
    r"|packfile \S+ (?:cannot be accessed|is far too short|has unknown|is version)|index file \S+ is too small"
    r"|non-monotonic index|garbage at end of loose object|bad numeric config value|unknown repository extension"
    r"|invalid (?:gitfile|HEAD)|expected format version|loose object \S+ .*is corrupt")


def damage_in(stderr: bytes | str) -> str | None:
    """The line of git's error output that says the repository itself is damaged, or None."""
    for line in _text(stderr).splitlines():
        if _DAMAGE.search(line):
            return re.sub(r"^(fatal|error|warning): ", "", line.strip())
    return None


class RepositoryDamaged(GitError):
    """A repository's own files are broken (a garbage HEAD or config, a truncated pack, a half-made folder)."""

    def __init__(self, path: Path, detail: str) -> None:
        super().__init__(f"the git repository {path} is damaged: {mask_url(detail)}",
                         f"remove it (rm -rf {path}) and run again")
        self.path = Path(path)
        self.detail = mask_url(detail)


def _text(value) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value or "")


class _ObjectReader:
    """Objects through one ``git cat-file --batch`` process, trees and blobs kept by id within a budget."""

    BUDGET = 64 << 20  # bytes of kept objects: a sweep's working set, far below the memory goal
    TREE_COST = 8  # a parsed tree takes ~6.5 times its raw size in memory (measured on a 3 KB tree)

    def __init__(self, path: Path, env: Mapping[str, str], untrusted: bool = False) -> None:
        self._path, self._env, self._untrusted = path, env, untrusted
        self._process: subprocess.Popen | None = None
        self._stderr = None  # git's error output, in a file (a pipe nobody reads could fill and stall it)
        self._stderr_seen = 0
        self._kept: OrderedDict[str, tuple[str, object, int]] = OrderedDict()
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
        return data if kind == "blob" else None

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

    def _tree(self, sha: str) -> dict[bytes, tuple[str, str]] | None:
        kind, data = self._object(sha)
        return data if kind == "tree" else None

    def _object(self, sha: str) -> tuple[str | None, object]:
        if sha in self._kept:
            self._kept.move_to_end(sha)
            kind, value, _size = self._kept[sha]
            return kind, value
        kind, data = self._read(sha)
        if kind is None:
            return None, None
        value = _parse_tree(data, len(self._last_sha) // 2) if kind == "tree" else data
        if kind in ("tree", "blob"):
            self._keep(self._last_sha, kind, value, len(data) * (self.TREE_COST if kind == "tree" else 1))
        return kind, value

    def _keep(self, sha: str, kind: str, value: object, size: int) -> None:
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
        process = self._start()
        try:
            process.stdin.write(name.encode("utf-8", "surrogateescape") + b"\n")
            process.stdin.flush()
            header = process.stdout.readline()
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
        data = process.stdout.read(size + 1)[:size]  # the content, then one line feed
        if len(data) < size:
            raise self._stopped(f"stopped in the middle of {name}")
        return parts[1].decode("ascii"), data

    def _stopped(self, what: str) -> GitError:
        try:
            self._process.wait(timeout=5)  # its last words reach the file before it exits
        except (subprocess.TimeoutExpired, AttributeError):
            pass
        said = self._new_stderr()
        self.close()
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

    def _start(self) -> subprocess.Popen:
        if self._process is None or self._process.poll() is not None:
            if self._stderr is None:
                self._stderr = tempfile.TemporaryFile()
            self._process = subprocess.Popen(["git", "cat-file", "--batch"], cwd=self._path, env=self._env,
                                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                             stderr=self._stderr)
        return self._process

    def close(self) -> None:
        if self._process is not None:
            try:
                self._process.stdin.close()
                self._process.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self._process.kill()
                self._process.wait()
            self._process.stdout.close()
            self._process = None
        if self._stderr is not None:
            self._stderr.close()
            self._stderr, self._stderr_seen = None, 0


def _parse_tree(data: bytes, hash_size: int) -> dict[bytes, tuple[str, str]]:
    """A raw tree object (``<mode> <name>\\0<hash>`` entries) as name -> (mode, object id)."""
    entries = {}
    pos, end = 0, len(data)
    while pos < end:
        space = data.index(b" ", pos)
        nul = data.index(b"\0", space)
        entries[data[space + 1: nul]] = (data[pos: space].decode("ascii"),
                                         data[nul + 1: nul + 1 + hash_size].hex())
        pos = nul + 1 + hash_size
    return entries
