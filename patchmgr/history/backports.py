"""Whether the pull requests and commits a patch names (``model.references``) are in a ref, from its git history.

A pull request is there when a commit on the ref's first-parent line names it as its own in its subject
(``… (#6131)``, ``Merge pull request #37 from …``, GitCode's ``!3268``: ``walk.pr_number``); a commit is there
when the ref reaches it. One ``git log --first-parent --grep`` per ref finds every pull request asked for. A
reference to another repository is not looked up, and a release without history (a PyPI release standing in
for git) cannot say: both are ``unknown``, never a guess.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from patchmgr.history.walk import pr_number
from patchmgr.io.git import CommitInfo, GitRepo
from patchmgr.model.manifest import Upstream
from patchmgr.model.patchfile import PatchFile
from patchmgr.model.references import Reference, Role, patch_references, same_repository
from patchmgr.sources.upstream import GitSource

NO_HISTORY = "a release without git history cannot say"


class Presence(StrEnum):
    PRESENT = "present"  # the ref's history has it: the commit named, or one whose subject names the pull request
    ABSENT = "absent"  # that history was read and has neither
    UNKNOWN = "unknown"  # not looked up (another repository's, a release without history): ``reason`` says why


@dataclass(frozen=True)
class Landed:
    """One reference of a patch at one ref: there (and the commit that brought it), not there, or unknown."""

    reference: Reference
    presence: Presence
    commit: str | None = None  # the commit of the ref's history that carries it
    subject: str = ""
    reason: str = ""  # why it is unknown

    def text(self, at: str = "") -> str:
        """``PR #37 (commit 74093e34cea4) at main: there, 74093e34cea4 'Merge pull request #37 …'``."""
        title = self.reference.title + (f" at {at}" if at else "")
        if self.presence is Presence.PRESENT:
            return f"{title}: there, {(self.commit or '')[:12]} {self.subject!r}".rstrip()
        if self.presence is Presence.ABSENT:
            return f"{title}: not there"
        return f"{title}: unknown ({self.reason})"


Backports = Mapping[str, tuple[Landed, ...]]  # patch id -> its references at one ref (patches naming none left out)


def unknown_backports(patches: Sequence[PatchFile], reason: str = NO_HISTORY) -> dict[str, tuple[Landed, ...]]:
    """Every reference of ``patches`` as ``unknown`` for ``reason`` (a release without history)."""
    found = {p.id: patch_references(p) for p in patches}
    return {pid: tuple(Landed(r, Presence.UNKNOWN, reason=reason) for r in refs) for pid, refs in found.items() if refs}


def backports_at(upstream: Upstream, source: object, patches: Sequence[PatchFile]) -> dict[str, tuple[Landed, ...]]:
    """The references of ``patches`` at what ``source`` reads: a git commit's history, else (a release) unknown."""
    if isinstance(source, GitSource):
        return BackportCheck(source.repo, upstream, patches).at(source.commit)
    return unknown_backports(patches)


class BackportCheck:
    """The references of an upstream's patches, looked up at any commit of ``repo`` (each commit once)."""

    def __init__(self, repo: GitRepo, upstream: Upstream, patches: Sequence[PatchFile]) -> None:
        self.repo, self.upstream = repo, upstream
        self.references = {p.id: refs for p in patches if (refs := patch_references(p))}
        self._done: dict[str, dict[str, tuple[Landed, ...]]] = {}
        self._resolved: dict[str, str | None] = {}
        self._info: dict[str, CommitInfo] = {}

    def _ours(self, reference: Reference) -> bool:
        return same_repository(reference, self.upstream)

    def at(self, commit: str) -> dict[str, tuple[Landed, ...]]:
        """Patch id -> each of its references at ``commit``: a named commit the ref reaches settles its reference
        (no search); the pull requests left are found in one ``git log`` of its first-parent line."""
        if commit not in self._done:
            reached = {
                r.commit: self._reached(r.commit, commit)
                for refs in self.references.values()
                for r in refs
                if r.commit and self._ours(r)
            }
            wanted = sorted(
                {
                    r.number
                    for refs in self.references.values()
                    for r in refs
                    if r.number and self._ours(r) and not (r.commit and reached[r.commit])
                }
            )
            pulls = self._pulls(commit, wanted)
            self._done[commit] = {
                pid: tuple(self._landed(r, reached, pulls) for r in refs) for pid, refs in self.references.items()
            }
        return self._done[commit]

    def _reached(self, named: str, commit: str) -> CommitInfo | None:
        """The commit ``named`` (7 to 40 hex digits) when ``commit`` reaches it."""
        if named not in self._resolved:
            if len(named) == 40:  # no process: the object reader's
                self._resolved[named] = named if self.repo.has_commit(named) else None
            else:
                self._resolved[named] = self.repo.resolve(named)
        found = self._resolved[named]
        if found is None or not self.repo.reaches(commit, found):
            return None
        if found not in self._info:
            self._info[found] = self.repo.commit_info(found)
        return self._info[found]

    def _pulls(self, commit: str, numbers: list[int]) -> dict[int, CommitInfo]:
        """Each of ``numbers`` -> the oldest commit of ``commit``'s first-parent line whose subject names it."""
        if not numbers:
            return {}
        pattern = f"[#!]({'|'.join(str(n) for n in numbers)})([^0-9]|$)"
        found: dict[int, CommitInfo] = {}
        for info in self.repo.first_parent_grep(commit, pattern):  # newest first
            number = pr_number(info.subject)
            if number in numbers:
                found[number] = info
        return found

    def _landed(
        self, reference: Reference, reached: dict[str, CommitInfo | None], pulls: dict[int, CommitInfo]
    ) -> Landed:
        if not self._ours(reference):
            why = f"it names {reference.repository}, not {self.upstream.name}'s repository: not looked up"
            return Landed(reference, Presence.UNKNOWN, reason=why)
        info = reached.get(reference.commit) if reference.commit else None
        if info is None and reference.number is not None:
            info = pulls.get(reference.number)
        if info is None:
            return Landed(reference, Presence.ABSENT)
        return Landed(reference, Presence.PRESENT, info.sha, info.subject)


def named_by(references: Sequence[Reference], commit: str, subject: str) -> Reference | None:
    """The reference of a patch that ``commit`` (with ``subject``) is: its named commit, or the commit that
    lands its pull request."""
    number = pr_number(subject)
    for reference in references:
        if reference.commit and commit.startswith(reference.commit):
            return reference
        if reference.number is not None and reference.number == number:
            return reference
    return None


def named_text(reference: Reference) -> str:
    """What a commit that a patch names means for it: ``the backport's prerequisite PR #4888 landed``."""
    name = f"PR #{reference.number}" if reference.number is not None else reference.label
    if reference.role is Role.PREREQUISITE:
        return f"the backport's prerequisite {name} landed"
    return f"{name}, which this patch backports, landed"
