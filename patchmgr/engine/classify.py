"""The patch engine: classify and apply patches against file contents, purely.

It never touches disk or git: it reads through a ``TreeReader`` (a cached
clone, a release, an installed environment, or an overlay of earlier patches)
and returns values. Hunks are placed the way ``git apply`` places them (the
expected line first, then outward, forward before backward; a hunk at line 1
must match at the beginning, one without trailing context at the end), so
``clean``/``offset`` agree with ``git apply --check``. Fuzz and 3-way merges
are only ever reported, never applied without being asked for.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from patchmgr.engine.file_change import apply_file, is_folder
from patchmgr.engine.knock_on import knock_on
from patchmgr.engine.place import MAX_FUZZ, PlacementFailure, apply_hunks, decode, encode, file_lines
from patchmgr.engine.results import CheckResult, GuardResult, HunkPlacement, Merge3, State, TreeReader
from patchmgr.model.diff import FileDiff, Hunk
from patchmgr.model.guards import GuardSyntaxError, evaluate, parse_guard
from patchmgr.model.patchfile import PatchFile
from patchmgr.model.text import split_lines


# -- file and patch level -----------------------------------------------------
class Overlay:
    """A ``TreeReader`` with the results of earlier patches in the series laid over it."""

    def __init__(self, base: TreeReader) -> None:
        self.base = base
        self.changes: dict[str, bytes | None] = {}

    def read(self, path: str) -> bytes | None:
        if path in self.changes:
            return self.changes[path]
        return self.base.read(path)

    def read_blob(self, sha: str) -> bytes | None:
        return self.base.read_blob(sha)

    def update(self, files: dict[str, bytes | None]) -> None:
        self.changes.update(files)

    def is_folder(self, path: str) -> bool:
        return is_folder(self.base, self.changes, path)

    def paths(self) -> list[str] | None:
        """Every file's path with the changes laid over, or None when the base cannot list its files."""
        listing = getattr(self.base, "paths", None)
        if listing is None:
            return None
        names = set(listing())
        for path, data in self.changes.items():
            if data is None:
                names.discard(path)
            else:
                names.add(path)
        return sorted(names)


def _apply_all(
    diffs: Iterable[FileDiff], reader: TreeReader, max_fuzz: int
) -> tuple[dict[str, bytes | None], list[HunkPlacement]]:
    staged: dict[str, bytes | None] = {}
    placements: list[HunkPlacement] = []
    for diff in diffs:
        placements += apply_file(diff, reader, staged, max_fuzz)
    return staged, placements


def _three_way(patch: PatchFile, reader: TreeReader, merge3: Merge3) -> dict[str, bytes | None] | None:
    """Merge each file that does not apply exactly with the patch's recorded preimage blob."""
    staged: dict[str, bytes | None] = {}
    for diff in patch.files:
        try:
            apply_file(diff, reader, staged)
            continue
        except PlacementFailure as failure:
            if failure.unsafe:
                return None
        if diff.kind != "modify" or not diff.old_blob or diff.binary is not None:
            return None
        base = reader.read_blob(diff.old_blob)
        ours = staged.get(diff.path, reader.read(diff.path))  # a change: diff.path is its one side
        if base is None or ours is None:
            return None
        try:
            theirs_lines, _ = apply_hunks(diff.path, file_lines(base), diff.hunks)
        except PlacementFailure:
            return None
        merged = merge3(base, ours, encode("".join(theirs_lines)))
        if merged is None:
            return None
        staged[diff.path] = merged
    return staged


# git am stops at an empty commit, git rebase drops one; patchmgr neither blocks the series nor loses the patch
EMPTY_COMMIT_NOTE = "an empty commit: it changes no file, so it is skipped (apply records it as an empty commit)"


def check_patch(patch: PatchFile, reader: TreeReader, merge3: Merge3 | None = None) -> CheckResult:
    """Classify one patch against ``reader``: the first state that holds, from best to worst.

    ``upstream`` from the engine alone needs the patch's reverse to apply at the
    patch's own place, in the same file: every reversed hunk placed exactly,
    with full context, and for each hunk that placed at an offset, no copy of
    its leading context, nor of its trailing context, nearer to the line the
    patch gives it (a context of blank lines only tells nothing and is not
    used). When upstream takes a change, the code around it moves, even by a
    hundred lines (Megatron-Bridge 0.5.0 moved this project's
    thd-bool-attention-mask hunks by 105 and 107 lines), and the change moves
    with its context. A block that reads like the patched lines elsewhere while
    the patch's context is still nearer its place (the change not made there)
    is another function that happens to read the same, not the change. A hunk
    without context lines (``-U0``, or blank lines only) has nothing to tell its
    place by: its reverse counts only exactly where the patch says (git anchors
    such a hunk at the file's end, so a deletion's reverse "applies" there even
    where the lines were never removed). A reverse that does not place at
    the patch's own place leaves the patch to the forward checks (missing,
    fuzz, three-way, conflict), with a note naming where the lines were seen.
    The forward search itself keeps git's unbounded offsets. A commit with the
    patch's own patch-id (``evidence.explain_upstream``) is the stronger
    evidence and overrides this; ``bump`` drops a patch only on it.
    """
    if patch.is_empty_commit:
        return CheckResult(patch, State.CLEAN, notes=[EMPTY_COMMIT_NOTE])
    try:
        files, placements = _apply_all(patch.files, reader, 0)
        state = State.OFFSET if any(p.offset for p in placements) else State.CLEAN
        return CheckResult(patch, state, placements, files=files)
    except PlacementFailure as failure:
        first_failure = failure
    if first_failure.unsafe:
        return CheckResult(patch, State.CONFLICT, conflict=first_failure.conflict)
    notes: list[str] = []
    try:
        _, back = _apply_all(patch.reversed_files(), reader, 0)
        notes = _elsewhere(patch, back, reader)
        if not notes:
            return CheckResult(patch, State.UPSTREAM)
    except PlacementFailure:
        pass
    if first_failure.missing:
        return CheckResult(patch, State.MISSING, conflict=first_failure.conflict, notes=notes)
    try:
        files, placements = _apply_all(patch.files, reader, MAX_FUZZ)
        return CheckResult(patch, State.FUZZ, placements, files=files, notes=notes)
    except PlacementFailure:
        pass
    if merge3 is not None:
        merged = _three_way(patch, reader, merge3)
        if merged is not None:
            return CheckResult(patch, State.THREE_WAY, conflict=first_failure.conflict, files=merged, notes=notes)
    return CheckResult(patch, State.CONFLICT, conflict=first_failure.conflict, notes=notes)


def _elsewhere(patch: PatchFile, placements: list[HunkPlacement], reader: TreeReader) -> list[str]:
    """Notes for the reversed hunks that placed away from the patch's own place (see ``check_patch``).

    A reversed hunk's offset counts from where the patch says the hunk's result
    is (its ``+`` line number): the result sits at ``old_start - 1 + offset`` of
    the upstream file as read, and its context around it.
    """
    hunks = {}
    for diff in patch.reversed_files():
        for number, hunk in enumerate(diff.hunks, 1):
            for path in (diff.old_path, diff.new_path):
                if path is not None:
                    hunks[(path, number)] = hunk
    images: dict[str, list[str]] = {}
    notes = []
    for placement in placements:
        if not placement.offset:
            continue
        path, hunk, distance = placement.path, hunks[(placement.path, placement.number)], abs(placement.offset)
        if path not in images:
            data = reader.read(path)
            images[path] = split_lines(decode(data)) if data is not None else []
        at = max(hunk.old_start - 1, 0)
        why = _not_own_place(images[path], hunk, at, distance)
        if why:
            notes.append(
                f"the lines hunk #{placement.number} produces appear at line {at + placement.offset + 1} "
                f"of {path}, {distance} lines from where the patch places them, {why}: "
                "not counted as upstream"
            )
    return notes


def _not_own_place(image: list[str], hunk: Hunk, at: int, distance: int) -> str | None:
    """Why the reversed ``hunk``, ``distance`` lines from line ``at`` (0-based), is not at the patch's place."""
    size = len(hunk.old_lines)
    blocks = [(hunk.old_lines[: hunk.leading], at), (hunk.old_lines[size - hunk.trailing :], at + size - hunk.trailing)]
    blocks = [(block, home) for block, home in blocks if block and any(line.strip() for line in block)]
    if not blocks:
        return "and the hunk has no context lines to tell its place by"
    for block, home in blocks:
        nearer = _nearest(image, block, home, distance)
        if nearer is not None:
            return f"while the hunk's context is nearer, at line {nearer + 1}"
    return None


def _nearest(image: list[str], block: tuple[str, ...], home: int, distance: int) -> int | None:
    """The start of a copy of ``block`` in ``image`` less than ``distance`` lines from ``home``, nearest first."""
    first, size = block[0], len(block)
    for step in range(distance):
        for pos in (home,) if not step else (home + step, home - step):
            if 0 <= pos < len(image) and image[pos] == first and tuple(image[pos : pos + size]) == block:
                return pos
    return None


def check_series(
    patches: Iterable[PatchFile], reader: TreeReader, merge3: Merge3 | None = None, blame: bool = True
) -> list[CheckResult]:
    """Check patches in series order, each on top of the ones before it that could apply; one that fails only
    for want of an earlier one that does not apply names it (``knock_on``: the blame is not upstream's). Without
    ``blame`` none is named: a caller that asks only which patches apply or read ``upstream`` (the blame turns
    one failure into another, never into either) skips that search, most of a check where many patches fail."""
    overlay = Overlay(reader)
    results: list[CheckResult] = []
    for patch in patches:
        result = check_patch(patch, overlay, merge3)
        needs = knock_on(result, results, overlay) if blame else ()
        if needs:
            # a file the earlier patch creates is not "gone from the upstream": it never was upstream's
            result = replace(result, state=State.CONFLICT, needs=needs)
        overlay.update(result.files)
        results.append(result)
    check_guards(results, overlay)
    return results


# States whose guards are evaluated: the patch's change is in the tree (applied, or upstream's own). A conflict or
# a missing file is already not OK and its change is not in the tree, so its guards say nothing and stay empty.
GUARDED_STATES = (State.CLEAN, State.OFFSET, State.FUZZ, State.THREE_WAY, State.UPSTREAM)


def check_guards(results: Iterable[CheckResult], tree: TreeReader) -> None:
    """Fill each result's ``guards``: its patch's ``Guard:`` headers evaluated on ``tree``, the series applied as
    far as it applies (a later patch must not break an earlier patch's guard). A glob is matched against
    ``tree.paths()`` when the tree can list, else against the paths the patch touches (see model/guards.py)."""
    listing: list[list[str] | None] = []  # the tree's file list, read once, on the first glob
    for result in results:
        result.guards = patch_guards(result.patch, tree, listing) if result.state in GUARDED_STATES else []


def patch_guards(
    patch: PatchFile, tree: TreeReader, listing: list[list[str] | None] | None = None
) -> list[GuardResult]:
    """``patch``'s ``Guard:`` headers evaluated on ``tree`` (``listing``: a one-item cache of ``tree.paths()``)."""
    listing = [] if listing is None else listing
    found = []
    for text in patch.field_values("Guard"):
        try:
            guard = parse_guard(text)
        except GuardSyntaxError as exc:  # parse_patch refuses these; a PatchFile built otherwise may hold one
            found.append(GuardResult(text, False, error=str(exc)))
            continue
        if guard.is_glob and not listing:
            probe = getattr(tree, "paths", None)
            listing.append(probe() if probe is not None else None)
        verdict = evaluate(guard, tree.read, listing[0] if listing else None, patch.touched_paths)
        found.append(GuardResult(guard.text, verdict.holds, verdict.offenses, verdict.error, verdict.count))
    return found
