"""Local work in a checkout that patchmgr is about to rebuild: find it, and save it first.

``apply --into`` and ``edit`` rebuild a checkout from scratch and discard the old
folder, so anything a person did there would go with it: commits beyond the one
patchmgr recorded, changed or untracked files, other branches, tags and stashes.
``find_local_work`` compares a checkout with the commit its ledger (or edit
record) recorded; the callers refuse when it finds anything, unless forced.
Forced, ``save_local_work`` carries that work into the new checkout before the
swap, as branches ``patchmgr-saved/<UTC time>...``, without writing a byte in
the old checkout: the commit of the uncommitted state is written straight into
the new repository's object store (the old one serving as an alternate), and
the old commits it needs are packed into the new one from there.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from patchmgr.io.git import NO_OPTIONAL_LOCKS, GitRepo, identity_env
from patchmgr.model.errors import GitError

SAVED_PREFIX = "patchmgr-saved/"  # not patchmgr/saved/: the checkout has a branch named patchmgr
# Untracked files that running the code makes are not work: bytecode and pytest's cache, also where the
# upstream's .gitignore does not list them (smoke and plain imports make them). Files ignored by
# .gitignore or .git/info/exclude are not work either (build outputs, by the upstream's own rules). Every
# other untracked file is someone's work, and counts.
_GENERATED = ("__pycache__", "*.py[cod]", ".pytest_cache")
_SHOWN = 3  # paths or commits named per kind in a message


@dataclass
class LocalWork:
    """What rebuilding ``folder`` would lose, relative to the commit patchmgr recorded there."""

    name: str
    folder: Path
    recorded: str | None = None
    head: str | None = None
    commits: list[tuple[str, str]] = field(default_factory=list)  # (short sha, subject), newest first
    diverged: bool = False  # HEAD does not descend from the recorded commit
    modified: list[str] = field(default_factory=list)  # tracked files changed, staged, added or deleted
    untracked: list[str] = field(default_factory=list)
    refs: list[tuple[str, str]] = field(default_factory=list)  # (ref name, object) not in the recorded commit
    stashes: list[str] = field(default_factory=list)
    not_a_checkout: bool = False

    def __bool__(self) -> bool:
        return bool(
            self.not_a_checkout
            or self.commits
            or self.diverged
            or self.modified
            or self.untracked
            or self.refs
            or self.stashes
        )

    def counts(self) -> str:
        """``2 local commits, 1 modified file, 1 untracked file``."""
        if self.not_a_checkout:
            return "not a git checkout any more"
        parts = [_count(len(self.commits), "local commit")]
        if self.diverged:
            parts.append("HEAD no longer on the recorded commit")
        parts += [
            _count(len(self.modified), "modified file"),
            _count(len(self.untracked), "untracked file"),
            _count(len(self.refs), "other branch or tag", "other branches or tags"),
            _count(len(self.stashes), "stash", "stashes"),
        ]
        return ", ".join(part for part in parts if part)

    def describe(self) -> str:
        """``lib: 1 local commit (1a2b3c4 Fix x), 1 modified file (src/mod.py), ...``, the first few named."""
        if self.not_a_checkout:
            return f"{self.name}: {self.folder} is not a git checkout any more; every file in it would be lost"
        parts = []
        if self.commits:
            parts.append(
                _count(len(self.commits), "local commit")
                + _named([f"{sha} {subject}" for sha, subject in self.commits])
            )
        if self.diverged:
            parts.append(f"HEAD {str(self.head)[:7]} does not descend from the recorded {str(self.recorded)[:7]}")
        if self.modified:
            parts.append(_count(len(self.modified), "modified file") + _named(self.modified))
        if self.untracked:
            parts.append(_count(len(self.untracked), "untracked file") + _named(self.untracked))
        if self.refs:
            parts.append(
                _count(len(self.refs), "other branch or tag", "other branches or tags")
                + _named([_short_ref(ref) for ref, _ in self.refs])
            )
        if self.stashes:
            parts.append(_count(len(self.stashes), "stash", "stashes"))
        return f"{self.name}: " + ", ".join(parts)


def _count(number: int, one: str, many: str | None = None) -> str:
    if not number:
        return ""
    return f"1 {one}" if number == 1 else f"{number} {many or one + 's'}"


def _named(items: list[str]) -> str:
    more = f", {len(items) - _SHOWN} more" if len(items) > _SHOWN else ""
    return f" ({'; '.join(items[:_SHOWN])}{more})"


def _short_ref(ref: str) -> str:
    return ref.removeprefix("refs/heads/").removeprefix("refs/")


def _sha_and_subject(record: str) -> tuple[str, str]:
    """One commit of ``git log --format=%h%n%s``: its short sha, and its subject."""
    sha, _, subject = record.partition("\n")
    return sha, subject


def find_local_work(name: str, folder: Path, recorded: str | None) -> LocalWork:
    """What in ``folder`` is not in ``recorded`` (the commit patchmgr left there); reads only."""
    work = LocalWork(name, folder, recorded)
    if not (folder / ".git").is_dir():
        work.not_a_checkout = any(folder.iterdir()) if folder.is_dir() else os.path.lexists(folder)
        return work
    with GitRepo(folder) as repo:
        work.head = repo.resolve("HEAD")
        # the recorded commit when this repository has it (None: everything here counts as local work)
        known = recorded if recorded is not None and repo.resolve(recorded) is not None else None
        if work.head and work.head != recorded:
            listing = repo.run(
                "log",
                "-z",
                "--format=%h%n%s",
                work.head,
                *([f"^{known}"] if known else ["-1"]),
                env=NO_OPTIONAL_LOCKS,
                strip=False,
            )
            work.commits = [_sha_and_subject(record) for record in listing.split("\x00") if "\n" in record]
            # HEAD moved back into what patchmgr made (a reset) loses nothing; commits off to one side do
            work.diverged = bool(work.commits) and not (
                known and repo.run_ok("merge-base", "--is-ancestor", known, work.head)
            )
        work.modified = _modified(repo)
        work.untracked = [
            path
            for path in repo.run(
                "ls-files",
                "-z",
                "--others",
                "--exclude-standard",
                *[f"--exclude={p}" for p in _GENERATED],
                env=NO_OPTIONAL_LOCKS,
            ).split("\x00")
            if path
        ]
        current = repo.run("symbolic-ref", "-q", "HEAD") if repo.run_ok("symbolic-ref", "-q", "HEAD") else ""
        listing = repo.run(
            "for-each-ref", "--format=%(refname)%00%(objectname)%00%(*objectname)", "refs/heads", "refs/tags"
        )
        for line in filter(None, listing.split("\n")):
            ref, obj, peeled = line.split("\x00")
            if ref == current:
                continue  # its commits are HEAD's, counted above
            if known and repo.run_ok("merge-base", "--is-ancestor", peeled or obj, known):
                continue  # it points into what patchmgr made: nothing of its own would be lost
            work.refs.append((ref, obj))
        if repo.resolve("refs/stash"):
            work.stashes = repo.run("log", "-g", "--format=%H", "refs/stash", env=NO_OPTIONAL_LOCKS).split()
    return work


def _modified(repo: GitRepo) -> list[str]:
    """Tracked paths whose work-tree or staged state differs from HEAD (a stat refresh in memory only)."""
    out = repo.run(
        "status", "--porcelain=v1", "-z", "--untracked-files=no", "--no-renames", env=NO_OPTIONAL_LOCKS, strip=False
    )
    return [entry[3:] for entry in out.split("\x00") if len(entry) > 3]


def utc_stamp() -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())


def save_local_work(work: LocalWork, new_folder: Path, stamp: str) -> list[str]:
    """Carry ``work`` into the checkout being built in ``new_folder``, as branches; their names.

    HEAD with its uncommitted state (tracked changes and the untracked files
    counted as work, committed on top of HEAD) becomes ``patchmgr-saved/STAMP``;
    another branch B ``patchmgr-saved/STAMP-B`` (one saved before keeps its
    name), a stash ``patchmgr-saved/STAMP-stash-N``, a tag the same tag. Nothing
    is written in the old checkout.
    """
    if work.not_a_checkout:
        raise GitError(
            f"{work.folder} is not a git checkout, so its files cannot be saved on a branch",
            f"move {work.folder} out of the way yourself, then run again",
        )
    old_objects = str(work.folder / ".git" / "objects")
    new_objects = str(new_folder / ".git" / "objects")
    wanted: dict[str, str] = {}  # ref in the new checkout -> object
    main = _unique(f"{SAVED_PREFIX}{stamp}", work)
    tip = work.head
    if work.modified or work.untracked:
        tip = _commit_work_tree(work, new_folder, new_objects, old_objects)
    if tip and (work.commits or work.modified or work.untracked):
        wanted[f"refs/heads/{main}"] = tip
    for ref, obj in work.refs:
        short = _short_ref(ref)
        if ref.startswith("refs/tags/") or short.startswith(SAVED_PREFIX):
            wanted[ref] = obj
        else:
            wanted[f"refs/heads/{main}-{short}"] = obj
    for number, stash in enumerate(work.stashes):
        wanted[f"refs/heads/{main}-stash-{number}"] = stash
    if not wanted:
        return []
    with GitRepo(new_folder) as repo:
        alternate = {"GIT_ALTERNATE_OBJECT_DIRECTORIES": old_objects}
        revs = "".join(f"{obj}\n" for obj in wanted.values()) + "".join(
            f"^{ref}\n" for ref in ("HEAD",) if repo.resolve(ref)
        )
        # only what the new checkout lacks; objects a partial clone never had stay with its promisor remote
        repo.run(
            "pack-objects",
            "--revs",
            "--missing=allow-any",
            "--quiet",
            str(Path(new_objects) / "pack" / "pack"),
            stdin=revs.encode(),
            env=alternate,
        )
        for ref, obj in wanted.items():
            repo.run("update-ref", "-m", f"patchmgr: local work saved from {work.folder}", ref, obj)
    return [_short_ref(ref) for ref in wanted]


def _unique(branch: str, work: LocalWork) -> str:
    taken = {_short_ref(ref) for ref, _ in work.refs}
    name, number = branch, 2
    while any(t == name or t.startswith(name + "-") or t.startswith(name + "/") for t in taken):
        name, number = f"{branch}-{number}", number + 1
    return name


def _commit_work_tree(work: LocalWork, new_folder: Path, new_objects: str, old_objects: str) -> str:
    """A commit of the old work tree (tracked changes and untracked work files) on top of its HEAD.

    Git reads the old checkout (its index copied to a temporary one) and writes
    every new object into the new checkout's store, so the old one is untouched.
    """
    index = new_folder.parent / f".{work.name}.saved-index"
    old_git = work.folder / ".git"
    try:
        if (old_git / "index").is_file():
            shutil.copyfile(old_git / "index", index)
        env = {
            "GIT_DIR": str(old_git),
            "GIT_WORK_TREE": str(work.folder),
            "GIT_INDEX_FILE": str(index),
            "GIT_OBJECT_DIRECTORY": new_objects,
            "GIT_ALTERNATE_OBJECT_DIRECTORIES": old_objects,
            "GIT_LITERAL_PATHSPECS": "1",
            **identity_env(),
        }
        with GitRepo(work.folder) as old:
            old.run("add", "--update", "--", ".", env=env)
            if work.untracked:
                old.run(
                    "update-index",
                    "--add",
                    "-z",
                    "--stdin",
                    stdin="".join(f"{path}\x00" for path in work.untracked).encode(),
                    env=env,
                )
            tree = old.run("write-tree", env=env)
            message = (
                f"patchmgr: uncommitted work saved from {work.folder}\n\n"
                f"{work.counts()}, before patchmgr rebuilt the checkout.\n"
            )
            parents = ["-p", work.head] if work.head else []
            return old.run("commit-tree", tree, *parents, "-F", "-", stdin=message.encode(), env=env)
    finally:
        index.unlink(missing_ok=True)
