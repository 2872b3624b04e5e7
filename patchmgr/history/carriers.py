"""The upstream commits that carry a series' patches between the pin and a ref, found for all patches at once.

A commit after the pin, in the ref's history, carries a patch when its change to the patch's files has the
patch's own patch-id (``git patch-id --stable``), or when the patch's own fields name it (a commit URL of any
forge, or ``commit <id>``, in ``Origin``, ``Applied-Upstream``, ``Bug`` or ``Upstream-Status``:
``model.references``) and the ref reaches it while the pin does not. A named commit that the ref does not reach
(another branch, another repository, a typo) carries nothing: a patch whose change is not there is never
``upstream``.

The patch-ids cost what ``git cherry`` costs: one path-limited ``git log -p`` over the range for all the
patches' files, split per file (``GitRepo.file_patch_ids``), and one ``git patch-id`` for the patches
themselves; a stable patch-id is the sum of its files' ids, so each patch's own files are summed from that
one pass instead of a log per patch.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from patchmgr.io.git import GitRepo
from patchmgr.io.git_history import CommitChanges
from patchmgr.model.manifest import Upstream
from patchmgr.model.patchfile import PatchFile, diff_line_index
from patchmgr.model.references import Role, patch_references, same_repository
from patchmgr.model.text import split_lines

DEFAULT_CONTEXT = 3  # git diff's -U
FULL_ID = 40  # a full commit id names one commit in any repository: it is looked up whatever URL names it


@dataclass(frozen=True)
class Carrier:
    """The upstream commit that carries a patch's change, and how it was found."""

    sha: str
    subject: str
    named_in: str | None = None  # the patch's field that names it ("Origin"); None: it has the patch's patch-id

    @property
    def how(self) -> str:
        """``same patch-id``, or ``its Origin names it``."""
        return f"its {self.named_in} names it" if self.named_in else "same patch-id"


def find_carriers(
    repo: GitRepo, upstream: Upstream, base: str, to: str, patches: Sequence[PatchFile], indexes: Iterable[int]
) -> dict[int, Carrier]:
    """The patches (by index into ``patches``) that a commit after ``base`` up to ``to`` carries, with that
    commit: the newest one with the patch's patch-id, else the commit its fields name."""
    wanted = sorted(set(indexes))
    found = _by_patch_id(repo, base, to, patches, wanted)
    for index in wanted:
        if index not in found and (named := _named(repo, upstream, to, patches[index])) is not None:
            found[index] = named
    return found


def _by_patch_id(
    repo: GitRepo, base: str, to: str, patches: Sequence[PatchFile], indexes: list[int]
) -> dict[int, Carrier]:
    found = with_patch_ids(repo, base, [to], patches, indexes, first_only=True)
    return {index: commits[0] for index, commits in found.items() if commits}


def with_patch_ids(
    repo: GitRepo,
    base: str,
    tips: Sequence[str],
    patches: Sequence[PatchFile],
    indexes: Iterable[int],
    first_only: bool = False,
) -> dict[int, list[Carrier]]:
    """The commits after ``base`` on the first-parent lines of ``tips`` whose change to a patch's files has the
    patch's patch-id, newest first, for each patch of ``indexes`` that has one (with ``first_only``: the newest
    only). One ``git log -p`` and one ``git patch-id`` for all the patches and tips (one more per other context
    size), as ``git cherry`` reads its range once: status, bump, bisect and every matrix column share it."""
    indexes = sorted(set(indexes))
    ids = repo.patch_ids([diff_part(patches[i]) for i in indexes])
    wanted = {i: pid for i, pid in zip(indexes, ids, strict=True) if pid}
    if not wanted:
        return {}
    paths = sorted({p for i in wanted for p in patches[i].touched_paths})
    # in one request: `git log -p` in a blobless cache would fetch the blobs commit by commit
    for tip in tips:
        repo.prefetch_range(base, tip, paths)
        if not repo.history_indexed(tip):  # a path-limited log reads the commit-graph's Bloom filters
            repo.index_history(tip)
    # git's default context, and the patch's own where it differs: a hunk that spans a short file has fewer
    # context lines than it was made with, so its own count can fall short of git's
    by_context: dict[int, list[int]] = {DEFAULT_CONTEXT: list(wanted)}
    for index in wanted:
        if (own := context_size(patches[index])) != DEFAULT_CONTEXT:
            by_context.setdefault(own, []).append(index)
    revisions = [f"{base}..{tips[0]}"] if len(tips) == 1 else [*tips, f"^{base}"]
    found: dict[int, list[Carrier]] = {}
    for context, group in sorted(by_context.items(), key=lambda item: item[0] != DEFAULT_CONTEXT):
        group = [i for i in group if not (first_only and found.get(i))]
        if not group:
            continue
        group_paths = sorted({p for i in group for p in patches[i].touched_paths})
        commits = repo.file_patch_ids(revisions, group_paths, context)  # newest first
        touching: dict[str, list[int]] = {}  # path -> the commits (by position) that change it
        for position, commit in enumerate(commits):
            for change in commit.files:
                for path in change.paths:
                    touching.setdefault(path, []).append(position)
        for index in group:
            matches = _with_patch_id(commits, touching, patches[index], wanted[index], first_only)
            known = found.setdefault(index, [])
            known += [m for m in matches if m.sha not in {k.sha for k in known}]
    return found


def _with_patch_id(
    commits: list[CommitChanges], touching: dict[str, list[int]], patch: PatchFile, wanted: str, first_only: bool
) -> list[Carrier]:
    """The ``commits`` (newest first) whose change to ``patch``'s files has the patch-id ``wanted``."""
    own = set(patch.touched_paths)
    found = []
    for position in sorted({n for path in own for n in touching.get(path, ())}):
        commit = commits[position]
        if commit.patch_id(own) == wanted:
            found.append(Carrier(commit.sha, commit.subject))
            if first_only:
                break
    return found


def _named(repo: GitRepo, upstream: Upstream, to: str, patch: PatchFile) -> Carrier | None:
    """The commit that ``patch``'s fields name as the change it carries, when ``to`` reaches it and the pin does
    not. A short id is looked up only where the URL names the upstream's own repository (or none): in
    another repository's URL it could name an unrelated commit here."""
    for reference in patch_references(patch):
        named = reference.commit
        if named is None or reference.role is not Role.BACKPORT or reference.named_in == "Subject":
            continue
        if len(named) < FULL_ID and not same_repository(reference, upstream):
            continue
        sha = named if len(named) == FULL_ID and repo.has_commit(named) else repo.resolve(named)
        if sha is None or not repo.reaches(to, sha) or repo.reaches(upstream.commit, sha):
            continue
        return Carrier(sha, repo.commit_info(sha).subject, reference.named_in)
    return None


def diff_part(patch: PatchFile) -> bytes:
    """The patch's diff alone, without its message (a line there could read like the start of another patch)."""
    lines = split_lines(patch.data.decode("utf-8", "surrogateescape"))
    start = diff_line_index(lines)
    return "".join(lines[start:] if start is not None else []).encode("utf-8", "surrogateescape")


def context_size(patch: PatchFile) -> int:
    """The context size the patch was made with (3 unless it says otherwise)."""
    sizes = [max(h.leading, h.trailing) for d in patch.files for h in d.hunks if d.kind == "modify"]
    return max(sizes, default=3) or 3


def carrier_candidates(
    repo: GitRepo, bases: dict[str, str], patches: list[PatchFile], indexes: list[int]
) -> dict[tuple[str, int], set[str]]:
    """``(merge base, patch index)`` -> the commits with the patch's patch-id on the first-parent lines from the
    merge base to any of the columns that share it: a superset of what ``find_carriers`` searches per column,
    from one patch-id pass over every column's range at once (``with_patch_ids``)."""
    tips_of: dict[str, list[str]] = {}
    for tip, base in bases.items():
        tips_of.setdefault(base, []).append(tip)
    found: dict[tuple[str, int], set[str]] = {}
    for base, tips in tips_of.items():
        for index, commits in with_patch_ids(repo, base, tips, patches, indexes).items():
            found[(base, index)] = {commit.sha for commit in commits}
    return found
