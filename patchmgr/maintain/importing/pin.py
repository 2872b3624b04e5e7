"""Find the upstream commit a monolithic patch was made against (its base), and say how it was found.

In this order:

1. the pin the user or the Dockerfile gives, when the patch applies there (clean or offset);
2. the preimage blob ids of the patch's ``index`` lines: the commit at which every file holds exactly the
   blob its index line names. Searched first along the first-parent line of the search tip (the newest such
   stretch, and in it a tagged commit when there is one), then at the upstream's tags (release tags first:
   a patch is often made at a release, whose tag may sit on a release branch), then over every branch and
   tag (one ``git log`` of all of them finds the commits that bring in a preimage blob; of those where all
   match, the best-ranked branch holding one is named, and the newest matching stretch of its first-parent
   line taken: a patch made on MindSpeed's ``dev`` is pinned on ``dev``, never where it applies with offsets).
   A base where only some files match is taken only when no commit matches all, and says so (``partial``).
   Blob ids found nowhere in the files' histories searched (a patch made with ``git diff`` in a dirty
   tree, or written by hand) are left out and named, never called absent;
3. otherwise the commit nearest the given pin (or the newest) at which the patch applies cleanly, found
   with the history walk: only commits that change the patch's files can change whether it applies, and
   each distinct state of those files is classified once.

The base names the branch or tag where it was found (``ref``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

from patchmgr.engine.classify import check_patch
from patchmgr.engine.results import State
from patchmgr.history.walk import Walk
from patchmgr.io.git import GitRepo
from patchmgr.maintain.importing.repeated import first_preimages, repeated_conflict
from patchmgr.maintain.importing.tags import Ref, RefKind, cached_refs
from patchmgr.model.errors import UsageError
from patchmgr.model.patchfile import PatchFile
from patchmgr.sources.upstream import GitSource


class FoundBy(StrEnum):
    """How the base was found: the pin given, the preimage blobs of the index lines, or where the patch applies."""

    GIVEN = "given"
    INDEX = "index"
    APPLIES = "applies"


@dataclass
class Base:
    commit: str
    how: FoundBy
    detail: str
    notes: list[str] = field(default_factory=list)
    matched: int | None = None  # "index": of the files whose index lines name a preimage blob, how many match
    of: int | None = None
    tag: str | None = None  # the tag naming the base commit, when one does
    ref: str | None = None  # the branch or tag where the base was found
    ref_kind: RefKind | None = None

    def found_on(self, ref: str | None, kind: RefKind) -> Base:
        self.ref, self.ref_kind = ref, kind
        return self

    @property
    def partial(self) -> bool:
        """Found by blob ids that only some files match (no commit matches them all)."""
        return self.how is FoundBy.INDEX and self.matched is not None and self.matched != self.of


class TagList(Protocol):
    def held(self) -> list[tuple[str, str]]: ...

    def all(self) -> list[tuple[str, str]]: ...

    def every(self) -> list[Ref]: ...

    def head_branch(self) -> str | None: ...


def find_base(
    repo: GitRepo,
    location: str,
    patch: PatchFile,
    given: str | None,
    search: Callable[[], str],
    tags: TagList | None = None,
    line_name: str = "HEAD",
) -> Base:
    """``search`` gives the tip of the line to search (fetched only when the given pin does not fit), named
    ``line_name``; ``tags`` the upstream's tags: ``held`` every one listed, ``all`` every one,
    ``every`` every branch and tag too (fetched on need)."""
    notes: list[str] = []
    if given is not None:
        reader = GitSource(repo, given, location)
        state = check_patch(patch, reader).state
        if state.applies:
            return Base(given, FoundBy.GIVEN, f"the patch applies at the given pin ({state.value})")
        notes.append(
            f"the monolithic patch does not apply at the given pin {given[:12]} ({state.value}): searched for its "
            f"base{repeated_conflict(patch, reader)}"
        )
    tip = search()
    branch = (tags.head_branch() if tags is not None and line_name == "HEAD" else None) or line_name
    line = _line(repo, tip, patch.touched_paths)
    by_blobs = _by_blobs(repo, patch, line, tip, notes, tags, branch)
    if by_blobs is not None:
        state = check_patch(patch, GitSource(repo, by_blobs.commit, location)).state
        if state.applies:
            if by_blobs.ref_kind is RefKind.BRANCH and by_blobs.ref != branch:
                notes.append(
                    f"the base is on branch {by_blobs.ref}, not on {branch}'s line: the patch was made there (to pin "
                    f"a commit of {branch} instead, where it may apply only with offsets, pass --pin)"
                )
            by_blobs.notes = notes + by_blobs.notes
            return by_blobs
        notes.append(
            f"the index lines point at {by_blobs.commit[:12]}, but the patch is {state.value} there"
            + repeated_conflict(patch, GitSource(repo, by_blobs.commit, location))
        )
    found = _by_applying(repo, location, patch, line, tip, given)
    if found is None:
        raise UsageError(
            f"{patch.path}: found no upstream commit on the line of {tip[:12]} where the patch applies "
            "(" + "; ".join(notes or ["no index line names an upstream blob"]) + ")",
            "pass --pin NAME=REF naming the commit it was made against, or --source a clone that has it",
        )
    found.notes = notes + found.notes
    return found.found_on(branch, RefKind.BRANCH)


def _line(repo: GitRepo, tip: str, paths: list[str]) -> list[tuple[str, str | None]]:
    """Commits on ``tip``'s first-parent line that change ``paths``, newest first, with their first parents."""
    out = repo.run("log", "--first-parent", "--format=%H %P", tip, "--", *paths, env={"GIT_LITERAL_PATHSPECS": "1"})
    line = []
    for text in filter(None, out.split("\n")):
        parts = text.split()
        line.append((parts[0], parts[1] if len(parts) > 1 else None))
    return line


def _segments(line: list[tuple[str, str | None]], tip: str) -> list[tuple[str, str]]:
    """(oldest, newest) commit of each stretch of the line where the files stay the same, newest stretch first."""
    segments = []
    newer_parent = tip
    for commit, parent in line:
        segments.append((commit, newer_parent))
        newer_parent = parent or commit
    return segments


def _by_blobs(
    repo: GitRepo,
    patch: PatchFile,
    line: list[tuple[str, str | None]],
    tip: str,
    notes: list[str],
    tags: TagList | None,
    branch: str,
) -> Base | None:
    wanted = first_preimages(patch)  # one per file: a later diff of a file starts from the patch's own result
    if not wanted:
        return None
    paths = [path for path, _ in wanted]
    count = len(wanted)
    seen: set[int] = set()  # the files whose preimage blob was met anywhere searched
    best: tuple[int, str, str, str | None] | None = None  # (files matched, commit, where, tag): the first best

    def matching(commit: str) -> set[int]:
        found = repo.path_entries(commit, paths)
        hit = {
            i
            for i, ((_, blob), entry) in enumerate(zip(wanted, found, strict=False))
            if entry is not None and entry[1].startswith(blob)
        }
        seen.update(hit)
        return hit

    def consider(hit: set[int], commit: str, where: str, tag: str | None = None) -> None:
        nonlocal best
        # more files first; among equals a release tag, which a team is likelier to have built on than a commit
        if hit and (best is None or len(hit) > best[0] or (len(hit) == best[0] and tag and not best[3])):
            best = (len(hit), commit, where, tag)

    for oldest, newest in _segments(line, tip):
        hit = matching(oldest)
        if len(hit) == count:
            return _in_stretch(repo, oldest, newest, count, tags).found_on(branch, RefKind.BRANCH)
        consider(hit, newest, f"{oldest[:12]}..{newest[:12]} (the newest of them)" if oldest != newest else oldest[:12])
    searched = f"the first-parent line of {tip[:12]}"
    listed = tags.all() if tags is not None else []
    off_line = f"; not found together on {searched}"
    for name, commit in listed:
        hit = matching(commit)
        if len(hit) == count:
            return Base(
                commit,
                FoundBy.INDEX,
                f"the preimage blobs of {count} of {count} files (index lines) match tag {name}{off_line}",
                matched=count,
                of=count,
                tag=name,
            ).found_on(name, RefKind.TAG)
        consider(hit, commit, f"tag {name}", name)
    every = tags.every() if tags is not None else []
    if every:
        searched += f", {len(listed)} tag(s) and every branch and tag's history ({len(every)} refs)"
        found = _on_every_ref(repo, wanted, every, matching, consider, tags)
        if found is not None:
            found.detail += off_line
            return found
    fake = [wanted[i] for i in range(count) if i not in seen]
    if fake:
        notes.append(
            f"index lines name blobs not found in those files' history (searched {searched}; a patch "
            "made in a dirty tree, or a blob of a branch not searched), left out: "
            + ", ".join(f"{path} ({blob[:12]})" for path, blob in fake)
        )
    if best is None:
        return None
    matched, commit, where, tag = best
    if len(seen) > matched:
        notes.append(f"the preimage blobs of {len(seen)} files are upstream's, but never all at one commit")
    return Base(
        commit,
        FoundBy.INDEX,
        f"PARTIAL: the preimage blobs of only {matched} of {count} files (index lines) "
        f"match, at {where}; no commit searched ({searched}) matches all {count}",
        matched=matched,
        of=count,
        tag=tag,
    )


def _in_stretch(repo: GitRepo, oldest: str, newest: str, count: int, tags: TagList | None) -> Base:
    """In a stretch of the line where every preimage blob matches: a tagged commit (release first), else the newest."""
    span = f"{oldest[:12]}..{newest[:12]}" if oldest != newest else oldest[:12]
    detail = f"the preimage blobs of {count} of {count} files (index lines) are upstream's at {span}"
    held = tags.held() if tags is not None else []
    if held:
        stretch = {oldest, *repo.first_parent_path(oldest, newest)}
        for name, commit in held:
            if commit in stretch:
                return Base(
                    commit, FoundBy.INDEX, f"{detail}; tag {name} among them", matched=count, of=count, tag=name
                )
    return Base(newest, FoundBy.INDEX, f"{detail}; the newest of them", matched=count, of=count)


def _on_every_ref(
    repo: GitRepo,
    wanted: list[tuple[str, str]],
    every: list[Ref],
    matching: Callable[[str], set[int]],
    consider: Callable[[set[int], str, str], None],
    tags: TagList | None,
) -> Base | None:
    """The commits (on any branch or tag) that bring in one of the preimage blobs, from one ``git log`` of them
    all; of those where every blob matches, the best-ranked ref holding one (``Ref.rank``), and on that ref's
    first-parent line the newest stretch where they all match (else the commit itself)."""
    paths = list(dict.fromkeys(path for path, _ in wanted))
    count = len(wanted)
    introduced = repo.blobs_introduced(list(dict.fromkeys(ref.commit for ref in every)), paths)
    full: list[str] = []
    for commit, path, blob in introduced:
        if commit in full or not any(path == p and blob.startswith(b) for p, b in wanted):
            continue
        hit = matching(commit)
        if len(hit) < count:
            consider(hit, commit, f"commit {commit[:12]}")
        elif len(full) < 20:  # enough to choose a ref from: they are newest first
            full.append(commit)
    best: tuple[Ref, str] | None = None
    for commit in full:
        refs = cached_refs(repo, commit)
        if refs and (best is None or refs[0].rank < best[0].rank):
            best = (refs[0], commit)
    if best is None:
        return None
    ref, commit = best
    where = f"{ref.kind} {ref.name}"
    for oldest, newest in _segments(_line(repo, ref.commit, paths), ref.commit):
        if len(matching(oldest)) == count:
            found = _in_stretch(repo, oldest, newest, count, tags)
            found.detail += f", on the first-parent line of {where}"
            return found.found_on(ref.name, ref.kind)
    return Base(
        commit,
        FoundBy.INDEX,
        f"the preimage blobs of {count} of {count} files (index lines) match commit {commit[:12]}, in the "
        f"history of {where}",
        matched=count,
        of=count,
    ).found_on(ref.name, ref.kind)


def _by_applying(
    repo: GitRepo, location: str, patch: PatchFile, line: list[tuple[str, str | None]], tip: str, given: str | None
) -> Base | None:
    segments = _segments(line, tip)
    if not segments:
        return None
    walk = Walk(repo, segments[-1][0], tip, location, [patch])
    order = [newest for _oldest, newest in segments]
    if given is not None and given in [c for s in segments for c in s]:
        at = next(i for i, s in enumerate(segments) if given in s)
        order = [commit for _, commit in sorted(enumerate(order), key=lambda pair: abs(pair[0] - at))]
    # the nearest clean commit ends the search; an offset one is kept in case none is clean
    offset: str | None = None
    for checked, commit in enumerate(order, 1):
        state = walk.state_at(0, commit)
        if state is State.CLEAN:
            return _applying(commit, state, given, checked, tip)
        if state is State.OFFSET and offset is None:
            offset = commit
    return _applying(offset, State.OFFSET, given, len(order), tip) if offset else None


def _applying(commit: str, state: State, given: str | None, checked: int, tip: str) -> Base:
    near = "nearest the given pin" if given is not None else "newest"
    return Base(
        commit,
        FoundBy.APPLIES,
        f"the {near} commit where the patch applies ({state.value}); "
        f"{checked} states of its files checked along {tip[:12]}",
    )
