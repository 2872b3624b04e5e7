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

from collections.abc import Callable, Iterable, Iterator
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
    ``is_symlink`` attribute is true (``gitio.LinkBlob``). A reader may also have
    ``is_folder(path) -> bool``: with it, a patch that creates a file where a folder
    is is a conflict, as in ``git apply --check``; without it the engine cannot tell."""

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
    evidence: str | None = None  # why it is ``upstream``, for people
    # the upstream commit with the patch's own patch-id (full sha), set by evidence.explain_upstream:
    # the only evidence on which ``bump`` drops a patch
    carrier: str | None = None
    notes: list[str] = field(default_factory=list)  # e.g. the patched lines found away from the patch's place

    @property
    def max_offset(self) -> int:
        return max((abs(p.offset) for p in self.placements), default=0)

    @property
    def detail(self) -> str:
        return "; ".join(part for part in (self._state_detail(), *self.notes) if part)

    def _state_detail(self) -> str:
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
class _Image:
    """A file as the hunks applied so far left it, built once, front to back.

    The image is ``out`` (every line up to the last one a hunk wrote, in the
    image's order) followed by ``orig[tail:]`` (the original lines no hunk has
    reached yet). Hunks come in file order, so a hunk's lines are nearly always
    past ``out``: placing it moves the lines before it from ``orig`` to ``out``
    and appends its new lines, which costs what the hunk touches, not the file's
    length (a list splice per hunk made a patch of n hunks cost n times the file).
    A hunk placed back inside ``out`` (git allows that) is spliced in there.
    ``patched`` runs beside ``out``: the lines hunks wrote, which a later hunk
    may not match over (git's LINE_PATCHED); lines of ``orig`` never are.
    """

    __slots__ = ("orig", "tail", "out", "patched")

    def __init__(self, lines: list[str]) -> None:
        self.orig = lines
        self.tail = 0
        self.out: list[str] = []
        self.patched: list[bool] = []

    def __len__(self) -> int:
        return len(self.out) + len(self.orig) - self.tail

    def lines(self) -> list[str]:
        return self.out + self.orig[self.tail:]

    def window(self, pos: int, count: int) -> list[str]:
        done = len(self.out)
        if pos >= done:
            start = self.tail + pos - done
            return self.orig[start: start + count]
        if pos + count <= done:
            return self.out[pos: pos + count]
        return self.out[pos:] + self.orig[self.tail: self.tail + pos + count - done]

    def touches_patched(self, pos: int, count: int) -> bool:
        return pos < len(self.out) and True in self.patched[pos: pos + count]

    def find_forward(self, value: str, lo: int, hi: int) -> int | None:
        """The first position in [lo, hi] that holds ``value``."""
        done = len(self.out)
        if lo < done:
            try:
                return self.out.index(value, lo, min(hi + 1, done))
            except ValueError:
                lo = done
        if lo > hi:
            return None
        try:
            return self.orig.index(value, self.tail + lo - done, self.tail + hi - done + 1) - self.tail + done
        except ValueError:
            return None

    def find_backward(self, value: str, hi: int, lo: int = 0) -> int | None:
        """The last position in [lo, hi] that holds ``value``."""
        done = len(self.out)
        if hi >= done:
            found = _rfind(self.orig, value, self.tail + max(lo - done, 0), self.tail + hi - done)
            if found is not None:
                return found - self.tail + done
            hi = done - 1
        return _rfind(self.out, value, lo, hi)

    def replace(self, start: int, stop: int, lines: list[str]) -> None:
        """Lines [start, stop) of the image become ``lines``, marked as patched."""
        done = len(self.out)
        if stop > done:
            self.out += self.orig[self.tail: self.tail + stop - done]
            self.patched += [False] * (stop - done)
            self.tail += stop - done
        self.out[start:stop] = lines  # at the end of ``out`` unless the hunk went back into it
        self.patched[start:stop] = [True] * len(lines)


def _rfind(lines: list[str], value: str, lo: int, hi: int) -> int | None:
    """The last index in [lo, hi] of ``lines`` that holds ``value``: list.index over reversed chunks."""
    size = 64
    while hi >= lo:
        start = max(lo, hi - size + 1)
        chunk = lines[start: hi + 1]
        chunk.reverse()
        try:
            return hi - chunk.index(value)
        except ValueError:
            hi = start - 1
            size = min(size * 4, 1 << 16)
    return None


def _candidates(image: _Image, preimage: tuple[str, ...], expected: int,
                at_start: bool, at_end: bool) -> Iterator[int]:
    """Where ``preimage`` may start, in git's order: the expected line, then outward, forward first.

    Only lines that hold the preimage's first line are offered, found with
    ``list.index`` as the search goes, so a hunk near its place costs what lies
    between, not the whole file.
    """
    size, need = len(image), len(preimage)
    if need > size:
        return
    if at_start or at_end:
        if not at_end or not at_start or size == need:
            yield 0 if at_start else size - need
        return
    if not need:
        yield min(expected, size)
        return
    first, last = preimage[0], size - need
    expected = min(expected, size)
    ahead = image.find_forward(first, expected, last) if expected <= last else None
    back = min(expected - 1, last)  # the highest line the backward search has not looked at yet
    while True:
        # a line behind comes first only when it is nearer than the one ahead (forward wins ties)
        lowest = 2 * expected - ahead + 1 if ahead is not None else 0
        behind = image.find_backward(first, back, max(lowest, 0)) if back >= max(lowest, 0) else None
        if behind is not None:
            yield behind
            back = behind - 1
        elif ahead is not None:
            back = min(back, lowest - 1)
            yield ahead
            ahead = image.find_forward(first, ahead + 1, last) if ahead < last else None
        else:
            return


def place_hunk(image: _Image | list[str], hunk: Hunk, fuzz: int = 0, patched: bool = True) -> int | None:
    """The line where ``hunk`` matches in ``image`` with ``fuzz`` context lines dropped, or None.

    Like git (its LINE_PATCHED flag), a hunk never matches over lines that
    earlier hunks of the same file wrote (``patched=False`` ignores that rule),
    so a hunk that has drifted cannot land on, and re-patch, what the hunk
    before it produced.
    """
    if isinstance(image, list):
        image = _Image(image)
    drop_lead = min(fuzz, hunk.leading)
    drop_trail = min(fuzz, hunk.trailing)
    if fuzz and not (drop_lead or drop_trail):
        return None
    preimage = hunk.old_lines[drop_lead: len(hunk.old_lines) - drop_trail]
    need = len(preimage)
    wanted = list(preimage)
    expected = max(hunk.new_start - 1, 0) + drop_lead
    # git anchors hunks at the file's ends only while the full context is used
    at_start = not fuzz and hunk.old_start <= 1
    at_end = not fuzz and hunk.trailing == 0
    for pos in _candidates(image, preimage, expected, at_start, at_end):
        if image.window(pos, need) == wanted and not (patched and image.touches_patched(pos, need)):
            return pos - drop_lead
    return None


def apply_hunks(path: str, image: list[str], hunks: tuple[Hunk, ...], max_fuzz: int = 0
                ) -> tuple[list[str], list[HunkPlacement]]:
    """Apply hunks in order to ``image`` (left as it is); raise ``_Failure`` at the first that fails."""
    current = _Image(image)
    placements = []
    for number, hunk in enumerate(hunks, 1):
        placed = None
        for fuzz in range(0, max_fuzz + 1):
            pos = place_hunk(current, hunk, fuzz)
            if pos is not None:
                placed = (pos, fuzz)
                break
        if placed is None:
            raise _Failure(_conflict(path, number, hunk, current))
        pos, fuzz = placed
        drop_lead, drop_trail = min(fuzz, hunk.leading), min(fuzz, hunk.trailing)
        start = pos + drop_lead
        stop = start + len(hunk.old_lines) - drop_lead - drop_trail
        current.replace(start, stop, list(hunk.new_lines[drop_lead: len(hunk.new_lines) - drop_trail]))
        placements.append(HunkPlacement(path, number, pos - max(hunk.new_start - 1, 0), fuzz))
    return current.lines(), placements


def _conflict(path: str, number: int, hunk: Hunk, current: _Image) -> Conflict:
    """Why ``hunk`` places nowhere, said as it is (the lines absent, only where an earlier hunk wrote, or
    present but not where git anchors a hunk without leading or trailing context)."""
    overlaps = place_hunk(current, hunk, patched=False) is not None
    image = current.lines()
    expected = max(hunk.new_start - 1, 0)
    excerpt = tuple(line.rstrip("\n") for line in image[expected: expected + CONFLICT_EXCERPT])
    first_removed = next((line for line in hunk.old_lines[hunk.leading:]), None)
    reason = "the hunk's lines are not in the upstream file"
    anchored = hunk.old_start <= 1 or hunk.trailing == 0
    if overlaps:
        reason = "the hunk's lines are only where an earlier hunk of the patch wrote"
    elif first_removed is not None and first_removed not in image:
        reason = f"line {first_removed.rstrip()!r} is not in the upstream file"
    elif anchored and hunk.old_lines and _found_unanchored(image, hunk):
        if hunk.leading == 0 and hunk.trailing == 0:
            reason = ("the hunk has no context lines (a -U0 diff): git apply, without --unidiff-zero, anchors "
                      "it at the " + ("beginning" if hunk.old_start <= 1 else "end") + " of the file, and its "
                      "lines are elsewhere; regenerate the patch with context (git format-patch -U3)")
        elif hunk.trailing == 0:
            reason = ("the hunk's lines are in the upstream file, but not at its end, where the patch (no "
                      "context after the change) has them")
        else:
            reason = "the hunk's lines are in the upstream file, but not at its beginning, where the patch has them"
    return Conflict(path, number, hunk.header, reason, expected + 1, excerpt)


def _found_unanchored(image: list[str], hunk: Hunk) -> bool:
    """Whether the hunk's old lines are somewhere in ``image`` (git's end anchors aside)."""
    wanted, need = list(hunk.old_lines), len(hunk.old_lines)
    first = wanted[0]
    return any(image[pos: pos + need] == wanted for pos, line in enumerate(image[: len(image) - need + 1])
               if line == first)


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
        return _is_folder(self.base, self.changes, path)


def _is_folder(reader: TreeReader, staged: dict[str, bytes | None], path: str) -> bool:
    """Whether ``path`` is a folder: a file staged under it, or the reader says so (see ``TreeReader``)."""
    prefix = path + "/"
    if any(name.startswith(prefix) and data is not None for name, data in staged.items()):
        return True
    probe = getattr(reader, "is_folder", None)
    return bool(probe(path)) if probe is not None else False


def apply_file(diff: FileDiff, reader: TreeReader, staged: dict[str, bytes | None], max_fuzz: int = 0
               ) -> list[HunkPlacement]:
    """Apply one file's diff on top of ``staged`` (earlier files of the same patch)."""

    def current(path: str) -> bytes | None:
        return staged[path] if path in staged else reader.read(path)

    for path in (diff.old_path, diff.new_path):
        if path is not None:
            _refuse_links(path, current)
    if diff.kind in ("add", "rename") and _is_folder(reader, staged, diff.new_path):
        raise _Failure(Conflict(diff.new_path, 0, "", "the patch creates it as a file, but it is a folder upstream", 1))
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
    """Refuse a path that is a symbolic link or a submodule upstream, or lies under one or under a file.

    git stores a link as a blob, so ``<link>/file`` simply reads as absent and a
    patch creating it would look clean; written out, it would land wherever the
    link points, possibly outside the tree. Refused outright, the patch can never
    be applied, whatever fallback is asked for.
    """
    parts = path.split("/")
    for depth in range(1, len(parts)):
        parent = "/".join(parts[:depth])
        data = current(parent)
        if getattr(data, "is_submodule", False):
            raise _Failure(Conflict(path, 0, "", f"{parent} is a submodule upstream: patchmgr does not patch "
                                    "inside submodules", 1), unsafe=True)
        if data is not None:
            what = "a symbolic link" if getattr(data, "is_symlink", False) else "a file"
            raise _Failure(Conflict(path, 0, "", f"{parent} is {what} upstream, not a folder: "
                                    "patchmgr never writes through it", 1), unsafe=True)
    data = current(path)
    if getattr(data, "is_submodule", False):
        raise _Failure(Conflict(path, 0, "", "it is a submodule upstream: patchmgr patches only regular "
                                "files", 1), unsafe=True)
    if getattr(data, "is_symlink", False):
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
    try:
        files, placements = _apply_all(patch.files, reader, 0)
        state = State.OFFSET if any(p.offset for p in placements) else State.CLEAN
        return CheckResult(patch, state, placements, files=files)
    except _Failure as failure:
        first_failure = failure
    if first_failure.unsafe:
        return CheckResult(patch, State.CONFLICT, conflict=first_failure.conflict)
    notes: list[str] = []
    try:
        _, back = _apply_all(patch.reversed_files(), reader, 0)
        notes = _elsewhere(patch, back, reader)
        if not notes:
            return CheckResult(patch, State.UPSTREAM)
    except _Failure:
        pass
    if first_failure.missing:
        return CheckResult(patch, State.MISSING, conflict=first_failure.conflict, notes=notes)
    try:
        files, placements = _apply_all(patch.files, reader, MAX_FUZZ)
        return CheckResult(patch, State.FUZZ, placements, files=files, notes=notes)
    except _Failure:
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
            notes.append(f"the lines hunk #{placement.number} produces appear at line {at + placement.offset + 1} "
                         f"of {path}, {distance} lines from where the patch places them, {why}: "
                         "not counted as upstream")
    return notes


def _not_own_place(image: list[str], hunk: Hunk, at: int, distance: int) -> str | None:
    """Why the reversed ``hunk``, ``distance`` lines from line ``at`` (0-based), is not at the patch's place."""
    size = len(hunk.old_lines)
    blocks = [(hunk.old_lines[:hunk.leading], at), (hunk.old_lines[size - hunk.trailing:], at + size - hunk.trailing)]
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
        for pos in ((home,) if not step else (home + step, home - step)):
            if 0 <= pos < len(image) and image[pos] == first and tuple(image[pos: pos + size]) == block:
                return pos
    return None


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
