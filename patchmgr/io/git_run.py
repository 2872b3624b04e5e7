"""Running git: the hardened configuration every git process gets, one subprocess wrapper, git's errors.

Applied to every git process through ``GIT_CONFIG_*`` variables, so a hostile repository's
config or an inherited setting cannot run code on our behalf.

A git process's tree is bounded (``io.children.TREE_LIMITS``): a lazy fetch from a source that lacks what it asks
for starts another fetch, which starts another (git reads the shallow-info of a shallow source with a lookup that
fetches), thousands within a minute; past the bound the tree is ended and the command fails with
``LazyFetchLoop``. patchmgr's own fetches ask for no lazy fetch (``GIT_NO_LAZY_FETCH``, git 2.44 and later), so
there such a source fails the fetch at once.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import BinaryIO

from patchmgr.io import children
from patchmgr.model.errors import GitError
from patchmgr.model.urls import mask_url

# Applied to every git process through GIT_CONFIG_* variables, so a hostile
# repository's config or an inherited setting cannot run code on our behalf.
_HARDENING = {
    "core.hooksPath": os.devnull,
    "protocol.ext.allow": "never",
    "core.fsmonitor": "false",
    "advice.detachedHead": "false",
    "init.defaultBranch": "main",
    "gc.auto": "0",
    # no `git maintenance run --auto` after each fetch, commit and lazy fetch: a process each that gc.auto=0
    # leaves with nothing to do (patchmgr's own repositories are short-lived checkouts and its cache)
    "maintenance.auto": "false",
    # a stalled server fails the fetch instead of hanging an image build
    "http.lowSpeedLimit": "1000",
    "http.lowSpeedTime": "60",
}


ConfigItems = Mapping[str, str] | Sequence[tuple[str, str]]


def config_env(extra: ConfigItems | None = None) -> dict[str, str]:
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
PROGRAM_DEFAULTS = {
    "core.sshcommand": None,  # git's default depends on GIT_SSH: computed in program_default
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


_PROGRAM_KEYS = re.compile(
    r"^(" + "|".join(re.escape(key) for key in PROGRAM_DEFAULTS) + r"|credential\..*\.?helper|core\.gitproxy)$"
)


_TRUSTED: dict[tuple, list[tuple[str, str]]] = {}
_TRUSTED_READ = threading.Lock()  # threads that open repositories together wait for one read


def program_default(key: str) -> str:
    default = PROGRAM_DEFAULTS.get(key)
    if default is not None:
        return default
    if key == "core.sshcommand":
        return shlex.quote(os.environ["GIT_SSH"]) if os.environ.get("GIT_SSH") else "ssh"
    if key == "core.askpass":
        return os.environ.get("SSH_ASKPASS", "")  # empty: no askpass program (git then fails, prompting nothing)
    return os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"  # the editors (never started here)


def trusted_config() -> list[tuple[str, str]]:
    """The program keys set in the system and global config (the user's own), in git's order.

    Read with one ``git config`` (again only when the variables naming those files
    change); entries from a repository's own config (scope ``local``/``worktree``)
    are dropped, whatever folder this runs in.
    """
    key = tuple(
        os.environ.get(name)
        for name in ("HOME", "XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM")
    )
    with _TRUSTED_READ:
        if key not in _TRUSTED:
            _TRUSTED[key] = _read_trusted()
        return _TRUSTED[key]


def _read_trusted() -> list[tuple[str, str]]:
    pairs = []
    try:
        done = children.run(
            ["git", "config", "-z", "--show-scope", "--includes", "--get-regexp", _PROGRAM_KEYS.pattern],
            env=plain_env(),
            capture_output=True,
            stdin=subprocess.DEVNULL,
            cwd=os.path.abspath(os.sep),
        )
        fields = done.stdout.decode("utf-8", "surrogateescape").split("\0")
        for scope, entry in zip(fields[0::2], fields[1::2], strict=False):
            name, _, value = entry.partition("\n")
            if scope in ("system", "global"):
                pairs.append((name, value))
    except OSError:
        pass
    return pairs


def last_value(pairs: Sequence[tuple[str, str]], key: str) -> str | None:
    values = [value for name, value in pairs if name == key]
    return values[-1] if values else None


def config_pairs(items: ConfigItems | None) -> list[tuple[str, str]]:
    return list(items.items()) if isinstance(items, Mapping) else list(items or ())


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
    cache refuses any config key it did not write (``cache_trust.check_cache_config``).
    """
    trusted = trusted_config()
    pairs = [(key, last_value(trusted, key) or program_default(key)) for key in PROGRAM_DEFAULTS]
    pairs.append(("credential.helper", ""))
    pairs += [(key, value) for key, value in trusted if key.startswith("credential.") and key.endswith("helper")]
    return pairs


def run_plain(args: Iterable[str], cwd: Path | None = None) -> str:
    return execute(tuple(args), cwd, plain_env(), None, True)


def plain_env() -> dict[str, str]:
    return {**os.environ, "LANGUAGE": "C", "LC_ALL": "C", **config_env()}


# a fetch patchmgr asks for never needs an object it lacks from elsewhere: git 2.44 and later then fetch nothing
# lazily, so a shallow source fails the fetch instead of starting fetch after fetch (older git ignores it)
NO_LAZY_FETCH = {"GIT_NO_LAZY_FETCH": "1"}


def execute(
    args: Sequence[str],
    cwd: Path | None,
    env: Mapping[str, str],
    stdin: bytes | BinaryIO | None,
    strip: bool,
    repository: Path | None = None,
) -> str:
    """Run ``git args``; its output as text (one final line break dropped when ``strip``), or a GitError. ``stdin``:
    bytes to write to it, or an open file it reads (a stream too large to hold twice in memory)."""
    if verb_of(args) == "fetch":
        env = {**env, **NO_LAZY_FETCH}
    written = stdin if isinstance(stdin, bytes) else None
    try:
        done = children.run(
            ["git", *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            input=written,
            stdin=subprocess.DEVNULL if stdin is None else None if written is not None else stdin,
        )
    except children.Overgrown as exc:
        raise LazyFetchLoop(verb_of(args), exc) from None
    except OSError as exc:
        raise GitError(f"cannot run git: {exc.strerror}", "install git, or put it on PATH") from exc
    if done.returncode != 0:
        raise _as_git_error(["git", *args], done.returncode, done.stderr, repository, done.stdout)
    out: str = done.stdout.decode("utf-8", "surrogateescape")
    return out[:-1] if strip and out.endswith("\n") else out


def _as_git_error(
    command: Sequence[str], status: int, stderr: bytes | str, repository: Path | None = None, stdout: bytes | str = b""
) -> GitError:
    lines = [mask_url(line.strip()) for line in as_text(stderr).strip().splitlines() if line.strip()]
    if not lines:
        # some commands say why on standard output (git am --continue: "No changes - did you forget to use
        # 'git add'?"), the reason first, then advice; its progress lines ("Applying: ...") are not the reason
        lines = [
            mask_url(line.strip())
            for line in as_text(stdout).strip().splitlines()
            if line.strip() and not line.startswith("Applying: ")
        ][:1]
    # git's first fatal line is the cause ("'/x' does not appear to be a git repository"); what follows
    # is advice ("Please make sure you have the correct access rights / and the repository exists.")
    fatal = [line for line in lines if line.startswith("fatal: ")]
    detail = fatal[0] if fatal else lines[-1] if lines else f"exit code {status}"
    detail = re.sub(r"^(fatal|error): ", "", detail)
    detail = re.sub(r"^unable to access '[^']*': ", "", detail)  # the URL is said by whoever reports it
    verb = " ".join(str(part) for part in command[1:2])
    if repository is not None:
        damage = damage_in(stderr)
        if damage:
            return RepositoryDamaged(repository, damage)
    return GitError(f"git {verb}: {detail}", "see git's message above")


# What git says when a repository's own files are broken (not when a remote fails).
_DAMAGE = re.compile(
    r"does not match index|is corrupt|corrupt (?:loose|packed) object|object file \S+ is empty|inflate: "
    r"|unable to unpack|bad config line|bad config variable|not a git repository|invalid object type"
    r"|packfile \S+ (?:cannot be accessed|is far too short|has unknown|is version)|index file \S+ is too small"
    r"|non-monotonic index|garbage at end of loose object|bad numeric config value|unknown repository extension"
    r"|invalid (?:gitfile|HEAD)|expected format version|loose object \S+ .*is corrupt"
)


def damage_in(stderr: bytes | str) -> str | None:
    """The line of git's error output that says the repository itself is damaged, or None."""
    for line in as_text(stderr).splitlines():
        if _DAMAGE.search(line):
            return re.sub(r"^(fatal|error|warning): ", "", line.strip())
    return None


class RepositoryDamaged(GitError):
    """A repository's own files are broken (a garbage HEAD or config, a truncated pack, a half-made folder)."""

    def __init__(self, path: Path, detail: str) -> None:
        super().__init__(
            f"the git repository {path} is damaged: {mask_url(detail)}", f"remove it (rm -rf {path}) and run again"
        )
        self.path = Path(path)
        self.detail = mask_url(detail)


def verb_of(args: Sequence[str]) -> str:
    """The git command that ``args`` run (``fetch`` of ``-c key=value fetch ...``)."""
    rest = list(args)
    while len(rest) > 1 and rest[0] == "-c":
        rest = rest[2:]
    return str(rest[0]) if rest else ""


class LazyFetchLoop(GitError):
    """A git command's tree passed its bound (``io.children.Overgrown``) and was ended: git fetched a missing object
    from a source that lacks it, again and again, the loop a shallow clone as a source starts."""

    HINT = "give a source with its whole history (in a shallow clone: git fetch --unshallow)"

    def __init__(self, verb: str, exc: children.Overgrown) -> None:
        super().__init__(
            f"git {verb} was stopped: it had started {exc.count} processes at once, more than the {exc.limit} "
            "patchmgr allows (git fetching missing objects again and again from a source that lacks them: "
            "a shallow clone)",
            self.HINT,
        )


def as_text(value: bytes | str | None) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value or "")


# paths from patch files are file names, never pathspec magic such as ":(exclude)"
LITERAL_PATHS = {"GIT_LITERAL_PATHSPECS": "1"}


class GitCommands(ABC):
    """A repository git commands run in (``GitRepo``): what its parts, history and patches, are built on."""

    @abstractmethod
    def run(
        self,
        *args: str,
        stdin: bytes | BinaryIO | None = None,
        env: Mapping[str, str] | None = None,
        strip: bool = True,
    ) -> str:
        """``git args`` in the repository: its output (one final line break dropped when ``strip``), or a GitError."""

    def tree_listing(self, commit: str, *paths: str) -> list[tuple[str, str, str]]:
        """``(type, object id, path)`` of every entry of ``git ls-tree -r -z`` (paths as they are, never quoted)."""
        return [(kind, sha, path) for _mode, kind, sha, path in self.tree_entries(commit, *paths)]

    def tree_entries(self, commit: str, *paths: str) -> list[tuple[str, str, str, str]]:
        """``(mode, type, object id, path)`` of every entry of ``git ls-tree -r -z`` (paths as they are)."""
        out = self.run(
            "ls-tree",
            "-r",
            "-z",
            "--full-tree",
            commit,
            *(("--", *paths) if paths else ()),
            env=LITERAL_PATHS,
            strip=False,
        )
        listed = []
        for entry in out.split("\0"):
            if "\t" in entry:
                meta, path = entry.split("\t", 1)
                mode, kind, sha = meta.split()
                listed.append((mode, kind, sha, path))
        return listed
