"""Placing one hunk in a file's lines the way ``git apply`` does: exact, moved, or with reduced context."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator

from patchmgr.engine.results import Conflict, HunkPlacement
from patchmgr.model.diff import Hunk
from patchmgr.model.text import as_bytes, as_text, quoted, split_lines

MAX_FUZZ = 2
CONFLICT_EXCERPT = 6


class PlacementFailure(Exception):
    """A hunk (or a whole file change) that cannot be placed: the conflict it leaves, and whether the file was
    missing or the change unsafe (through a link)."""

    def __init__(self, conflict: Conflict, missing: bool = False, unsafe: bool = False) -> None:
        super().__init__(conflict.reason)
        self.conflict = conflict
        self.missing = missing
        # unsafe: the patch would write through a link; no fallback (fuzz, 3-way) may rescue it
        self.unsafe = unsafe


# -- text helpers -----------------------------------------------------------
decode = as_text
encode = as_bytes


# a file's lines by its bytes: a series checked at many commits (matrix columns, a walk, bisect) reads the same
# blob again and again, and splitting it was most of the engine's time (the 53 x 12 openssh matrix split 274,000
# files); the same bytes always give the same lines, so they are split once, within a budget
_LINES: OrderedDict[bytes, tuple[str, ...]] = OrderedDict()
_LINES_BUDGET = 16 << 20  # bytes of kept text, and 100 more per line it holds (a str and its place in the tuple)
_lines_cost = 0


def file_lines(data: bytes) -> list[str]:
    """``split_lines(decode(data))``, a new list each time (the caller may change it), split once per content."""
    global _lines_cost
    kept = _LINES.get(data)
    if kept is None:
        kept = tuple(split_lines(decode(data)))
        cost = len(data) + 100 * len(kept)
        if cost <= _LINES_BUDGET // 8:
            _LINES[data] = kept
            _lines_cost += cost
            while _lines_cost > _LINES_BUDGET:
                dropped, lines = _LINES.popitem(last=False)
                _lines_cost -= len(dropped) + 100 * len(lines)
    else:
        _LINES.move_to_end(data)
    return list(kept)


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
        return self.out + self.orig[self.tail :]

    def window(self, pos: int, count: int) -> list[str]:
        done = len(self.out)
        if pos >= done:
            start = self.tail + pos - done
            return self.orig[start : start + count]
        if pos + count <= done:
            return self.out[pos : pos + count]
        return self.out[pos:] + self.orig[self.tail : self.tail + pos + count - done]

    def touches_patched(self, pos: int, count: int) -> bool:
        return pos < len(self.out) and True in self.patched[pos : pos + count]

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
            self.out += self.orig[self.tail : self.tail + stop - done]
            self.patched += [False] * (stop - done)
            self.tail += stop - done
        self.out[start:stop] = lines  # at the end of ``out`` unless the hunk went back into it
        self.patched[start:stop] = [True] * len(lines)


def _rfind(lines: list[str], value: str, lo: int, hi: int) -> int | None:
    """The last index in [lo, hi] of ``lines`` that holds ``value``: list.index over reversed chunks."""
    size = 64
    while hi >= lo:
        start = max(lo, hi - size + 1)
        chunk = lines[start : hi + 1]
        chunk.reverse()
        try:
            return hi - chunk.index(value)
        except ValueError:
            hi = start - 1
            size = min(size * 4, 1 << 16)
    return None


def _candidates(image: _Image, preimage: tuple[str, ...], expected: int, at_start: bool, at_end: bool) -> Iterator[int]:
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
    preimage = hunk.old_lines[drop_lead : len(hunk.old_lines) - drop_trail]
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


def apply_hunks(
    path: str, image: list[str], hunks: tuple[Hunk, ...], max_fuzz: int = 0
) -> tuple[list[str], list[HunkPlacement]]:
    """Apply hunks in order to ``image`` (left as it is); raise ``PlacementFailure`` at the first that fails."""
    current = _Image(image)
    placements = []
    for number, hunk in enumerate(hunks, 1):
        placed = _place(current, hunk, max_fuzz)
        if placed is None:
            raise PlacementFailure(_conflict(path, number, hunk, current))
        pos, fuzz = placed
        _write(current, hunk, pos, fuzz)
        placements.append(HunkPlacement(path, number, pos - max(hunk.new_start - 1, 0), fuzz))
    return current.lines(), placements


def apply_placeable(image: list[str], hunks: tuple[Hunk, ...], max_fuzz: int = 0) -> tuple[list[str], list[int]]:
    """``image`` with each of ``hunks`` that places applied in order, those that do not skipped, and the numbers
    (1-based) of the skipped ones: what a patch that conflicts still changes, hunk by hunk (``engine.knock_on``)."""
    current = _Image(image)
    skipped = []
    for number, hunk in enumerate(hunks, 1):
        placed = _place(current, hunk, max_fuzz)
        if placed is None:
            skipped.append(number)
        else:
            _write(current, hunk, *placed)
    return current.lines(), skipped


def _place(current: _Image, hunk: Hunk, max_fuzz: int) -> tuple[int, int] | None:
    """Where ``hunk`` places with the least fuzz up to ``max_fuzz``, and that fuzz; None where it places nowhere."""
    for fuzz in range(0, max_fuzz + 1):
        pos = place_hunk(current, hunk, fuzz)
        if pos is not None:
            return pos, fuzz
    return None


def _write(current: _Image, hunk: Hunk, pos: int, fuzz: int) -> None:
    """``hunk``'s new lines in place of its old ones at ``pos``, without the context lines ``fuzz`` dropped."""
    drop_lead, drop_trail = min(fuzz, hunk.leading), min(fuzz, hunk.trailing)
    start = pos + drop_lead
    stop = start + len(hunk.old_lines) - drop_lead - drop_trail
    current.replace(start, stop, list(hunk.new_lines[drop_lead : len(hunk.new_lines) - drop_trail]))


def _conflict(path: str, number: int, hunk: Hunk, current: _Image) -> Conflict:
    """Why ``hunk`` places nowhere, said as it is (the lines absent, only where an earlier hunk wrote, or
    present but not where git anchors a hunk without leading or trailing context)."""
    overlaps = place_hunk(current, hunk, patched=False) is not None
    image = current.lines()
    expected = max(hunk.new_start - 1, 0)
    excerpt = tuple(line.rstrip("\n") for line in image[expected : expected + CONFLICT_EXCERPT])
    first_removed = next((line for line in hunk.old_lines[hunk.leading :]), None)
    reason = "the hunk's lines are not in the upstream file"
    anchored = hunk.old_start <= 1 or hunk.trailing == 0
    if overlaps:
        reason = "the hunk's lines are only where an earlier hunk of the patch wrote"
    elif first_removed is not None and first_removed not in image:
        reason = f"line {quoted(first_removed.rstrip())} is not in the upstream file"
    elif anchored and hunk.old_lines and _found_unanchored(image, hunk):
        if hunk.leading == 0 and hunk.trailing == 0:
            reason = (
                "the hunk has no context lines (a -U0 diff): git apply, without --unidiff-zero, anchors "
                "it at the " + ("beginning" if hunk.old_start <= 1 else "end") + " of the file, and its "
                "lines are elsewhere; regenerate the patch with context (git format-patch -U3)"
            )
        elif hunk.trailing == 0:
            reason = (
                "the hunk's lines are in the upstream file, but not at its end, where the patch (no "
                "context after the change) has them"
            )
        else:
            reason = "the hunk's lines are in the upstream file, but not at its beginning, where the patch has them"
    return Conflict(path, number, hunk.header, reason, expected + 1, excerpt)


def _found_unanchored(image: list[str], hunk: Hunk) -> bool:
    """Whether the hunk's old lines are somewhere in ``image`` (git's end anchors aside)."""
    wanted, need = list(hunk.old_lines), len(hunk.old_lines)
    first = wanted[0]
    return any(
        image[pos : pos + need] == wanted for pos, line in enumerate(image[: len(image) - need + 1]) if line == first
    )
