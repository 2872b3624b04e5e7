"""The change ``patchmgr add`` turns into a patch: from commits of a clone or an ``edit`` checkout, or a diff file.

Each is read into one ``Change``: the diff (``git diff --full-index`` of the commits, or the file's diff) and the
message part the patch starts from (the commits' subject, body and author as DEP-3 fields; a diff file's own
message, if it has one). Nothing is written here; a clone is read as an untrusted repository (its hooks and
configuration run nothing).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from patchmgr.io.git import GitRepo
from patchmgr.maintain.edit_record import EditRecord, read_record
from patchmgr.model.errors import PatchmgrError, StateError, UsageError
from patchmgr.model.input_files import MAX_PATCH_BYTES, read_input
from patchmgr.model.mail import message_part
from patchmgr.model.manifest import Target
from patchmgr.model.patchfile import DEP3_KEYS, diff_line_index, parse_patch
from patchmgr.model.text import bare_lines, split_lines


class ChangeKind(StrEnum):
    COMMIT = "commit"  # --commit SHA: one commit's change against its parent
    RANGE = "range"  # --commit A..B: the commits of the range, as one change
    DIFF = "diff"  # --diff FILE: a diff file or patch mail
    EDIT = "edit"  # --from-edit DIR: the commits on top of the series an edit checkout holds


@dataclass(frozen=True)
class Change:
    kind: ChangeKind
    message: str  # the patch's message part (DEP-3 fields, or a mail's headers and body), ending in a line break
    diff: str
    origin: str | None  # the Origin field it gets when the message has none
    commits: tuple[str, ...] = ()
    record: EditRecord | None = field(default=None, repr=False)  # of an edit checkout
    checkout: Path | None = None  # the edit checkout
    skipped: tuple[str, ...] = ()  # the empty commits of the commits given, left out (``empty_commits_note``)

    @property
    def is_empty(self) -> bool:
        """Whether every commit given was empty: there is nothing to add."""
        return bool(self.skipped) and not self.commits


def empty_commits_note(commits: tuple[str, ...]) -> str:
    """What add says of the empty commits it left out: git format-patch leaves them out too."""
    named = ", ".join(commit[:12] for commit in commits)
    return (
        f"skipped the empty commit {named}: it changes no file"
        if len(commits) == 1
        else f"skipped the empty commits {named}: they change no file"
    )


_FIELD = re.compile(r"^(" + "|".join(re.escape(k) for k in DEP3_KEYS) + r"):[ \t]*(.*)$")


def from_commits(folder: Path, revision: str, kind: ChangeKind = ChangeKind.COMMIT) -> Change:
    """Commit ``revision`` (its change against its parent) or the commits of range ``A..B`` of the clone in
    ``folder``, as one change."""
    if revision.startswith("-") or not revision.strip() or "\n" in revision:
        raise UsageError(f"--commit {revision!r} is not a commit or a range", "give a commit, or A..B")
    repo = _open(folder, untrusted=True)
    with repo:
        if ".." in revision:
            start, _, end = revision.partition("..")
            base, tip = _commit(repo, folder, start or "HEAD"), _commit(repo, folder, end or "HEAD")
            kind = ChangeKind.RANGE
        else:
            tip = _commit(repo, folder, revision)
            parents = repo.commit_info(tip).parents
            if len(parents) != 1:
                raise UsageError(
                    f"commit {tip[:12]} has {len(parents) or 'no'} parents: it is no single change",
                    "give a commit with one parent, or a range A..B",
                )
            base = parents[0]
        return _change(repo, folder, base, tip, kind)


def from_edit(folder: Path, target: Target, upstream: str) -> Change:
    """The commits made in the ``edit`` checkout ``folder`` on top of its series, as one change."""
    record = read_record(folder)
    if (record.target, record.upstream) != (target.name, upstream):
        raise StateError(
            f"{folder} was made for {record.made_for()}, not {target.name}/{upstream}",
            "add to the target and upstream it was made for",
        )
    if record.onto is not None:
        raise StateError(
            f"{folder} is moving the series onto {record.onto.ref}",
            "finish the move and export it first (patchmgr export), then add",
        )
    pin = target.upstream(upstream).commit
    if record.pin != pin:
        raise StateError(
            f"{upstream}: the pin moved from {record.pin[:12]} to {pin[:12]} since edit",
            "run patchmgr edit again on the new pin and redo the change there",
        )
    repo = _open(folder, untrusted=False)
    with repo:
        if repo.run("status", "--porcelain", "--untracked-files=no"):
            raise StateError(f"{folder} has uncommitted changes", "commit them, then add")
        tip = record.tip()
        if not repo.run_ok("merge-base", "--is-ancestor", tip, "HEAD"):
            raise StateError(
                f"HEAD of {folder} does not sit on the series edit made (ending at {tip[:12]})",
                "export the changed patches first (patchmgr export), or rebase the new commits onto the series",
            )
        change = _change(repo, folder, tip, _commit(repo, folder, "HEAD"), ChangeKind.EDIT)
    return Change(
        change.kind, change.message, change.diff, change.origin, change.commits, record, folder, change.skipped
    )


def from_diff(path: Path) -> Change:
    """The diff file at ``path`` (a git diff, ``diff -u`` output or a patch mail), with its message if it has one."""
    data = read_input(path, f"--diff {path}", "give a diff file", limit=MAX_PATCH_BYTES)
    patch = parse_patch(data, path)  # refuses what git would refuse, naming the line
    lines = split_lines(patch.text.removeprefix("\ufeff"))
    at = diff_line_index(lines) or 0
    message = "".join(message_part(lines)[0]).strip("\n")
    return Change(ChangeKind.DIFF, message + "\n" if message else "", "".join(lines[at:]), None)


def _open(folder: Path, untrusted: bool) -> GitRepo:
    try:
        return GitRepo(folder, untrusted=untrusted)
    except PatchmgrError as exc:
        raise UsageError(f"{folder}: {exc.message}", "give the folder of a git clone of the upstream") from None


def _commit(repo: GitRepo, folder: Path, revision: str) -> str:
    commit = repo.resolve(revision)
    if commit is None:
        raise UsageError(f"{folder} has no commit {revision!r}", f"see its commits with git -C {folder} log")
    return commit


def _change(repo: GitRepo, folder: Path, base: str, tip: str, kind: ChangeKind) -> Change:
    commits = repo.run("rev-list", "--reverse", "--topo-order", f"{base}..{tip}").split()
    if not commits:
        raise UsageError(f"{folder}: no commit in {base[:12]}..{tip[:12]}", "commit the change, then add it")
    if repo.run("rev-list", "--min-parents=2", f"{base}..{tip}"):
        raise UsageError(f"{folder}: {base[:12]}..{tip[:12]} holds a merge", "give a straight line of commits")
    # limited to the whole tree, git lists only the commits that change it: the others are empty
    changing = set(repo.run("rev-list", f"{base}..{tip}", "--", ".").split())
    skipped = tuple(commit for commit in commits if commit not in changing)
    if len(skipped) == len(commits):
        return Change(kind, "", "", None, (), skipped=skipped)
    commits = [commit for commit in commits if commit in changing]
    diff = repo.full_diff(base, tip)
    if not diff.strip():
        raise UsageError(f"{folder}: {base[:12]}..{tip[:12]} changes nothing", "give the commits of the change")
    origin = f"commit {tip}" if len(commits) == 1 and not skipped else f"commits {base}..{tip}"
    return Change(kind, _message(repo, commits), diff, origin, tuple(commits), skipped=skipped)


def _message(repo: GitRepo, commits: list[str]) -> str:
    """DEP-3 fields of the commits: the first one's subject as Description, every message's body below it (the
    later commits' subjects leading their part), fields found in the messages kept as fields, the author."""
    described: list[str] = []
    fields: list[str] = []
    author = ""
    for number, commit in enumerate(commits):
        name_address, _, text = repo.run("show", "-s", "--format=%an <%ae>%x00%B", commit, strip=False).partition("\0")
        author = author or name_address.strip()
        message = bare_lines(text.strip("\n"))
        subject, body = (message[0] if message else commit[:12]), message[1:]
        described += [subject] if number == 0 else ["", subject]
        for line in body:
            (fields if _FIELD.match(line) else described).append(line)
    while len(described) > 1 and not described[1].strip():
        del described[1]
    head = "Description: " + described[0].strip() + "\n"
    head += "".join(f" {line.rstrip()}\n" if line.strip() else " .\n" for line in _trimmed(described[1:]))
    if author and not any(re.match(r"(Author|From):", line) for line in fields):
        fields.insert(0, f"Author: {author}")
    return head + "".join(line + "\n" for line in fields)


def _trimmed(lines: list[str]) -> list[str]:
    while lines and not lines[-1].strip():
        lines.pop()
    return lines
