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

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol

from patchmgr.patchfile import FileDiff, Hunk, PatchFile

MAX_FUZZ = 2
CONFLICT_EXCERPT = 6


class State(str, Enum):
    CLEAN = "clean"
    OFFSET = "offset"
    FUZZ = "fuzz"
    THREE_WAY = "three-way"
    CONFLICT = "conflict"
    UPSTREAM = "upstream"
    MISSING = "missing"

    @property
    def applies(self) -> bool:
        """Whether ``apply`` may apply a patch in this state without being told to."""
        return self in (State.CLEAN, State.OFFSET)


class TreeReader(Protocol):
    """Files of an upstream tree. ``read`` returns None for an absent path and for a
    folder; for a symbolic link it returns the link's target as a bytes object whose
    ``is_symlink`` attribute is true (``gitio.LinkBlob``)."""

    def read(self, path: str) -> bytes | None: ...

    def read_blob(self, sha: str) -> bytes | None: ...


Merge3 = Callable[[bytes, bytes, bytes], "bytes | None"]


@dataclass(frozen=True)
class HunkPlacement:
    path: str
    number: int  # 1-based, as git -v counts hunks
    offset: int
    fuzz: int = 0


@dataclass(frozen=True)
class Conflict:
    path: str
    hunk: int  # 1-based; 0 when the whole file is the problem
    header: str
    reason: str
    expected_line: int
    upstream_lines: tuple[str, ...] = ()


@dataclass
class CheckResult:
    patch: PatchFile
    state: State
    placements: list[HunkPlacement] = field(default_factory=list)
    conflict: Conflict | None = None
    # path -> new bytes (None = deleted) when the patch can be applied in its state
    files: dict[str, bytes | None] = field(default_factory=dict)
    evidence: str | None = None

    @property
    def max_offset(self) -> int:
        return max((abs(p.offset) for p in self.placements), default=0)

    @property
    def detail(self) -> str:
        if self.state is State.OFFSET:
            return _per_file([p for p in self.placements if p.offset], lambda p: f"{p.offset:+d} lines")
        if self.state is State.FUZZ:
            return _per_file([p for p in self.placements if p.fuzz], lambda p: f"fuzz {p.fuzz}")
        if self.state in (State.CONFLICT, State.MISSING, State.THREE_WAY) and self.conflict:
            c = self.conflict
            where = f"{c.path} hunk #{c.hunk} {c.header}" if c.hunk else c.path
            return f"{where}: {c.reason}"
        if self.state is State.UPSTREAM:
            return self.evidence or "the reverse of the patch applies: upstream already has the change"
        return ""


def _per_file(placements: list[HunkPlacement], describe) -> str:
    """``path: hunk #1 +3 lines, #2 +3 lines; other: ...``: each path said once."""
    by_path: dict[str, list[str]] = {}
    for placement in placements:
        by_path.setdefault(placement.path, []).append(f"#{placement.number} {describe(placement)}")
    return "; ".join(f"{path}: hunk {', '.join(items)}" for path, items in by_path.items())


class _Failure(Exception):
    def __init__(self, conflict: Conflict, missing: bool = False, unsafe: bool = False) -> None:
        super().__init__(conflict.reason)
        self.conflict = conflict
        self.missing = missing
        # unsafe: the patch would write through a link; no fallback (fuzz, 3-way) may rescue it
        self.unsafe = unsafe


# -- text helpers -----------------------------------------------------------
def decode(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def split_lines(text: str) -> list[str]:
    """Lines with their endings, split on LF only (CR stays part of the line, as in git)."""
    if not text:
        return []
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


# -- hunk placement ---------------------------------------------------------
def _candidates(image: list[str], preimage: tuple[str, ...], expected: int,
                at_start: bool, at_end: bool) -> list[int]:
    size, need = len(image), len(preimage)
    if need > size:
        return []
    if at_start or at_end:
        spots = {0} if at_start else {size - need}
        if at_start and at_end:
            spots &= {size - need}
        return sorted(spots)
    if not need:
        return [min(expected, size)]
    first = preimage[0]
    positions = [i for i, line in enumerate(image[: size - need + 1]) if line == first]
    expected = min(expected, size)
    return sorted(positions, key=lambda p: (abs(p - expected), p < expected))


def place_hunk(image: list[str], hunk: Hunk, fuzz: int = 0, patched: list[bool] | None = None) -> int | None:
    """The line where ``hunk`` matches in ``image`` with ``fuzz`` context lines dropped, or None.

    ``patched`` marks the lines that earlier hunks of the same file wrote: like
    git (its LINE_PATCHED flag), a hunk never matches over them, so a hunk that
    has drifted cannot land on, and re-patch, what the hunk before it produced.
    """
    drop_lead = min(fuzz, hunk.leading)
    drop_trail = min(fuzz, hunk.trailing)
    if fuzz and not (drop_lead or drop_trail):
        return None
    preimage = hunk.old_lines[drop_lead: len(hunk.old_lines) - drop_trail]
    expected = max(hunk.new_start - 1, 0) + drop_lead
    # git anchors hunks at the file's ends only while the full context is used
    at_start = not fuzz and hunk.old_start <= 1
    at_end = not fuzz and hunk.trailing == 0
    for pos in _candidates(image, preimage, expected, at_start, at_end):
        if tuple(image[pos: pos + len(preimage)]) == preimage and not (
                patched and any(patched[pos: pos + len(preimage)])):
            return pos - drop_lead
    return None


def apply_hunks(path: str, image: list[str], hunks: tuple[Hunk, ...], max_fuzz: int = 0
                ) -> tuple[list[str], list[HunkPlacement]]:
    """Apply hunks in order to ``image`` (a copy); raise ``_Failure`` at the first that fails."""
    image = list(image)
    patched = [False] * len(image)
    placements = []
    for number, hunk in enumerate(hunks, 1):
        placed = None
        for fuzz in range(0, max_fuzz + 1):
            pos = place_hunk(image, hunk, fuzz, patched)
            if pos is not None:
                placed = (pos, fuzz)
                break
        if placed is None:
            raise _Failure(_conflict(path, number, hunk, image, place_hunk(image, hunk) is not None))
        pos, fuzz = placed
        drop_lead, drop_trail = min(fuzz, hunk.leading), min(fuzz, hunk.trailing)
        start = pos + drop_lead
        stop = start + len(hunk.old_lines) - drop_lead - drop_trail
        replacement = list(hunk.new_lines[drop_lead: len(hunk.new_lines) - drop_trail])
        image[start:stop] = replacement
        patched[start:stop] = [True] * len(replacement)
        placements.append(HunkPlacement(path, number, pos - max(hunk.new_start - 1, 0), fuzz))
    return image, placements


def _conflict(path: str, number: int, hunk: Hunk, image: list[str], overlaps: bool = False) -> Conflict:
    expected = max(hunk.new_start - 1, 0)
    excerpt = tuple(line.rstrip("\n") for line in image[expected: expected + CONFLICT_EXCERPT])
    first_removed = next((line for line in hunk.old_lines[hunk.leading:]), None)
    reason = "the hunk's lines are not in the upstream file"
    if overlaps:
        reason = "the hunk's lines are only where an earlier hunk of the patch wrote"
    elif first_removed is not None and first_removed not in image:
        reason = f"line {first_removed.rstrip()!r} is not in the upstream file"
    return Conflict(path, number, hunk.header, reason, expected + 1, excerpt)


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


def apply_file(diff: FileDiff, reader: TreeReader, staged: dict[str, bytes | None], max_fuzz: int = 0
               ) -> list[HunkPlacement]:
    """Apply one file's diff on top of ``staged`` (earlier files of the same patch)."""

    def current(path: str) -> bytes | None:
        return staged[path] if path in staged else reader.read(path)

    for path in (diff.old_path, diff.new_path):
        if path is not None:
            _refuse_links(path, current)
    if diff.kind == "add":
        existing = current(diff.new_path)
        if existing is not None:
            raise _Failure(Conflict(diff.new_path, 0, "", "the patch creates it, but it already exists", 1))
        lines, placements = apply_hunks(diff.new_path, [], diff.hunks, 0)
        staged[diff.new_path] = encode("".join(lines))
        return placements
    old = current(diff.old_path)
    if old is None:
        raise _Failure(Conflict(diff.old_path, 0, "", "the file is gone from the upstream", 1), missing=True)
    if diff.kind == "rename" and current(diff.new_path) is not None:
        raise _Failure(Conflict(diff.new_path, 0, "", "the rename's target already exists", 1))
    lines, placements = apply_hunks(diff.old_path, split_lines(decode(old)), diff.hunks, max_fuzz)
    if diff.kind == "delete":
        if lines:
            raise _Failure(Conflict(diff.old_path, 0, "", "the file to delete has other content upstream", 1))
        staged[diff.old_path] = None
        return placements
    if diff.kind == "rename":
        staged[diff.old_path] = None
    staged[diff.new_path] = encode("".join(lines))
    return placements


def _refuse_links(path: str, current: Callable[[str], "bytes | None"]) -> None:
    """Refuse a path that is a symbolic link upstream, or lies under a link or a file.

    git stores a link as a blob, so ``<link>/file`` simply reads as absent and a
    patch creating it would look clean; written out, it would land wherever the
    link points, possibly outside the tree. Refused outright, the patch can never
    be applied, whatever fallback is asked for.
    """
    parts = path.split("/")
    for depth in range(1, len(parts)):
        parent = "/".join(parts[:depth])
        data = current(parent)
        if data is not None:
            what = "a symbolic link" if getattr(data, "is_symlink", False) else "a file"
            raise _Failure(Conflict(path, 0, "", f"{parent} is {what} upstream, not a folder: "
                                    "patchmgr never writes through it", 1), unsafe=True)
    if getattr(current(path), "is_symlink", False):
        raise _Failure(Conflict(path, 0, "", "it is a symbolic link upstream: patchmgr patches only regular "
                                "files", 1), unsafe=True)


def _apply_all(diffs: Iterable[FileDiff], reader: TreeReader, max_fuzz: int
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
        except _Failure as failure:
            if failure.unsafe:
                return None
        if diff.kind != "modify" or not diff.old_blob:
            return None
        base = reader.read_blob(diff.old_blob)
        ours = staged.get(diff.old_path, reader.read(diff.old_path))
        if base is None or ours is None:
            return None
        try:
            theirs_lines, _ = apply_hunks(diff.old_path, split_lines(decode(base)), diff.hunks)
        except _Failure:
            return None
        merged = merge3(base, ours, encode("".join(theirs_lines)))
        if merged is None:
            return None
        staged[diff.old_path] = merged
    return staged


def check_patch(patch: PatchFile, reader: TreeReader, merge3: Merge3 | None = None) -> CheckResult:
    """Classify one patch against ``reader``: the first state that holds, from best to worst."""
    try:
        files, placements = _apply_all(patch.files, reader, 0)
        state = State.OFFSET if any(p.offset for p in placements) else State.CLEAN
        return CheckResult(patch, state, placements, files=files)
    except _Failure as failure:
        first_failure = failure
    if first_failure.unsafe:
        return CheckResult(patch, State.CONFLICT, conflict=first_failure.conflict)
    try:
        _apply_all(patch.reversed_files(), reader, 0)
        return CheckResult(patch, State.UPSTREAM)
    except _Failure:
        pass
    if first_failure.missing:
        return CheckResult(patch, State.MISSING, conflict=first_failure.conflict)
    try:
        files, placements = _apply_all(patch.files, reader, MAX_FUZZ)
        return CheckResult(patch, State.FUZZ, placements, files=files)
    except _Failure:
        pass
    if merge3 is not None:
        merged = _three_way(patch, reader, merge3)
        if merged is not None:
            return CheckResult(patch, State.THREE_WAY, conflict=first_failure.conflict, files=merged)
    return CheckResult(patch, State.CONFLICT, conflict=first_failure.conflict)


def check_series(patches: Iterable[PatchFile], reader: TreeReader, merge3: Merge3 | None = None
                 ) -> list[CheckResult]:
    """Check patches in series order, each on top of the ones before it that could apply."""
    overlay = Overlay(reader)
    results = []
    for patch in patches:
        result = check_patch(patch, overlay, merge3)
        overlay.update(result.files)
        results.append(result)
    return results
