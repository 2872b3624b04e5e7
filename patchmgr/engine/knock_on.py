"""Knock-on failures: a patch that fails at a tree only because an earlier patch of the series did not apply.

``check_series`` lays each patch over the ones before it that applied. When an earlier patch conflicts, a later
one that stands on its change (its hunks hold lines the earlier one adds, or it patches a file the earlier one
creates) fails as well, and on its own its conflict blames upstream for lines that upstream never had. So a
failure is laid at an earlier patch's door only when that patch's change, put over the same tree, accounts for
all of it:

1. the earlier patch is laid over the tree as far as it goes there: each of its hunks that places (with fuzz,
   as a person refreshing it would place them) is applied, a file it creates is created;
2. on that, each hunk of the later patch must place exactly, or, where it still does not, every line it needs
   that is nowhere in the file must be a line the earlier patch adds to it (one its own failing hunks would
   have written), and the lines it needs that are there must be there in its order, with room between them
   only for the missing lines and what the earlier patch would have removed (``_stands_on``). A hunk that
   needs a line which neither upstream nor the earlier patch has (upstream changed it) is upstream's conflict
   as well: the later patch then stays a plain conflict, blamed on upstream.

The later patch still does not apply (it is not OK); what changes is who is blamed: ``CheckResult.needs``.

Each answer depends only on the patches and on the bytes of their files as the tree holds them, so answers and
the hunk placements under them are kept by those bytes' digests (``_Memo``): a series checked at many refs
(matrix columns, a walk) lays an earlier patch once per content of its files, not once per later patch and ref.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

from patchmgr.engine.place import MAX_FUZZ, PlacementFailure, apply_hunks, apply_placeable, encode, file_lines
from patchmgr.engine.results import CheckResult, Needed, State, TreeReader
from patchmgr.model.diff import FileDiff, Hunk
from patchmgr.model.patchfile import PatchFile

# the states of an earlier patch that leave its change out of the tree, and of a later one that a missing
# change can explain (``upstream``'s change is in the tree; fuzz and 3-way results are laid over it)
KNOCKED = (State.CONFLICT, State.MISSING)


def knock_on(result: CheckResult, earlier: Sequence[CheckResult], reader: TreeReader) -> tuple[Needed, ...]:
    """The earlier patches (results before ``result`` in the series, checked over ``reader``) whose want
    explains why ``result``'s patch does not apply over ``reader``; empty when upstream is to blame.

    The nearest earlier patch that alone explains it is named; else those of the earlier patches that share its
    files which together explain it, each of them needed."""
    if not _may_be_knocked(result):
        return ()
    paths = set(result.patch.touched_paths)
    candidates = [r for r in earlier if r.state in KNOCKED and paths.intersection(r.patch.touched_paths)]
    for candidate in reversed(candidates):
        if _explains(result.patch, [candidate.patch], reader):
            return (Needed(candidate.patch.id, candidate.state),)
    if len(candidates) < 2 or not _explains(result.patch, [c.patch for c in candidates], reader):
        return ()
    chosen = list(candidates)
    for candidate in candidates:  # those it does without are not to blame
        rest = [c for c in chosen if c is not candidate]
        if _explains(result.patch, [c.patch for c in rest], reader):
            chosen = rest
    return tuple(Needed(c.patch.id, c.state) for c in chosen)


def _may_be_knocked(result: CheckResult) -> bool:
    """A hunk that does not place, or a file that is not there: what an earlier patch's change can account for
    (a refusal of the whole file, such as a link in the way, is not)."""
    if result.state is State.MISSING:
        return True
    return result.state is State.CONFLICT and result.conflict is not None and result.conflict.hunk > 0


class _Memo:
    """Answers by key, the least recently used dropped past ``budget`` (each answer's cost as its caller says)."""

    def __init__(self, budget: int) -> None:
        self.budget, self.cost = budget, 0
        self.kept: OrderedDict[tuple[object, ...], tuple[object, int]] = OrderedDict()

    def get(self, key: tuple[object, ...]) -> object | None:
        found = self.kept.get(key)
        if found is None:
            return None
        self.kept.move_to_end(key)
        return found[0]

    def put(self, key: tuple[object, ...], value: object, cost: int) -> None:
        if cost > self.budget // 8:
            return
        if key in self.kept:  # a value for another object that had the same id
            self.cost -= self.kept.pop(key)[1]
        self.kept[key] = (value, cost)
        self.cost += cost
        while self.cost > self.budget:
            _, (_, dropped) = self.kept.popitem(last=False)
            self.cost -= dropped


# hunk placements of a file diff over given bytes (the diff is the key's by identity: the value holds it, so its
# id is never reused while kept), and whole answers of ``_explains``, by the digests of the bytes they read
_PLACED = _Memo(32 << 20)
_EXPLAINED = _Memo(4 << 20)


def _digest(data: bytes | None) -> tuple[int, int] | None:
    """``data`` by its length and hash: a bytes object keeps its hash, and a tree hands out the same objects again,
    so a key costs nothing after the first (a collision of both is as likely as one of git's object names)."""
    return None if data is None else (len(data), hash(data))


def _placed(diff: FileDiff, data: bytes, max_fuzz: int) -> tuple[bytes, tuple[int, ...]]:
    """``apply_placeable`` of ``diff``'s hunks over ``data``: the bytes it leaves and the hunks it skipped."""
    key = (id(diff), max_fuzz, _digest(data))
    found = _PLACED.get(key)
    if isinstance(found, tuple) and found[0] is diff:
        return found[1], found[2]
    lines, skipped = apply_placeable(file_lines(data), diff.hunks, max_fuzz)
    result = encode("".join(lines))
    _PLACED.put(key, (diff, result, tuple(skipped)), len(result) + 200)
    return result, tuple(skipped)


_CHANGES: dict[int, tuple[PatchFile, tuple[tuple[frozenset[str], int], ...]]] = {}


def _changes(patch: PatchFile) -> tuple[tuple[frozenset[str], int], ...]:
    """Per file diff of ``patch``: the lines its hunks add (``_added``) and how many lines they remove."""
    found = _CHANGES.get(id(patch))
    if found is not None and found[0] is patch:
        return found[1]
    changes = tuple(
        (
            frozenset(line for h in diff.hunks for line in _added(h)),
            sum(len(h.old_lines) - len(h.new_lines) + len(_added(h)) for h in diff.hunks),
        )
        for diff in patch.files
    )
    if len(_CHANGES) > 4096:
        _CHANGES.clear()
    _CHANGES[id(patch)] = (patch, changes)
    return changes


class _Laid:
    """The tree with patches laid over it as far as they go, and the lines each laid patch adds, by path."""

    def __init__(self, reader: TreeReader) -> None:
        self.reader = reader
        self.files: dict[str, bytes | None] = {}
        self.added: dict[str, set[str]] = {}
        self.removed: dict[str, int] = {}  # how many lines the laid patches' hunks remove, by path

    def read(self, path: str) -> bytes | None:
        return self.files[path] if path in self.files else self.reader.read(path)

    def lines(self, path: str) -> list[str] | None:
        data = self.read(path)
        return None if data is None else file_lines(data)

    def lay(self, patch: PatchFile) -> None:
        """``patch`` over the tree, each hunk that places (with fuzz), each file it creates that is not there."""
        for diff, (adds, removed) in zip(patch.files, _changes(patch), strict=True):
            if diff.new_path is not None:
                self.added.setdefault(diff.new_path, set()).update(adds)
                self.removed[diff.new_path] = self.removed.get(diff.new_path, 0) + removed
            if diff.old_path is None:
                if self.read(diff.path) is None:
                    try:
                        self.files[diff.path] = encode("".join(apply_hunks(diff.path, [], diff.hunks)[0]))
                    except PlacementFailure:
                        pass
                continue
            old = self.read(diff.old_path)
            if old is None or diff.new_path is None:
                continue  # nothing there to change; a deletion laid in part deletes nothing
            laid, _ = _placed(diff, old, MAX_FUZZ)
            if diff.new_path != diff.old_path:
                self.files[diff.old_path] = None
            self.files[diff.new_path] = laid


def _added(hunk: Hunk) -> list[str]:
    """The lines ``hunk`` writes that it did not find (its ``+`` lines, interior context left out)."""
    old = set(hunk.old_lines)
    return [line for line in hunk.new_lines[hunk.leading : len(hunk.new_lines) - hunk.trailing] if line not in old]


def _stands_on(wanted: tuple[str, ...], image: list[str], added: set[str], slack: int) -> bool:
    """Whether a hunk that needs the lines ``wanted`` fails on ``image`` only for lines the earlier patches add.

    The lines of ``wanted`` that are nowhere in ``image`` must all be ``added`` ones, and at least one; the rest
    must be there as they are in the hunk: each run of them one block, in order, one block after the other with
    no more lines between than the missing ones and ``slack`` (the lines the earlier patches remove, which a
    conflicting hunk of theirs leaves in place, rewritten or not). A line of the hunk that upstream changed or
    removed, wherever else it also reads the same, breaks that order: upstream's conflict, not a knock-on.
    """
    present = set(image)
    missing = [line for line in wanted if line not in present]
    if not missing or not all(line in added for line in missing):
        return False
    runs: list[tuple[int, list[str]]] = []  # (missing lines before it, a block of lines that are there)
    gap, block = 0, []
    for line in wanted:
        if line in present:
            block.append(line)
            continue
        if block:
            runs.append((gap, block))
            gap, block = 0, []
        gap += 1
    if block:
        runs.append((gap, block))
    if not runs:
        return True
    first = runs[0][1]
    return any(_follows(image, start + len(first), runs[1:], slack) for start in _starts(image, first))


def _starts(image: list[str], block: list[str]) -> list[int]:
    """Every position of ``image`` where ``block`` starts, found by its first line."""
    starts, size, last = [], len(block), len(image) - len(block)
    at = 0
    while at <= last:
        try:
            at = image.index(block[0], at, last + 1)
        except ValueError:
            break
        if image[at : at + size] == block:
            starts.append(at)
        at += 1
    return starts


def _follows(image: list[str], at: int, runs: list[tuple[int, list[str]]], slack: int) -> bool:
    """Whether each of ``runs`` is in ``image`` after ``at``, each no further than its gap and ``slack`` away."""
    if not runs:
        return True
    (gap, block), rest = runs[0], runs[1:]
    for start in range(at, min(at + gap + slack, len(image) - len(block)) + 1):
        if image[start : start + len(block)] == block and _follows(image, start + len(block), rest, slack):
            return True
    return False


def _explains(patch: PatchFile, helpers: list[PatchFile], reader: TreeReader) -> bool:
    """Whether ``patch`` fails over ``reader`` only for want of ``helpers`` (see the module's rule)."""
    paths = sorted({p for each in (*helpers, patch) for p in each.touched_paths})
    key = (id(patch), *map(id, helpers), *(_digest(reader.read(path)) for path in paths))
    found = _EXPLAINED.get(key)
    if isinstance(found, tuple) and found[0] is patch and all(a is b for a, b in zip(found[1], helpers, strict=True)):
        return bool(found[2])
    answer = _explained(patch, helpers, reader)
    _EXPLAINED.put(key, (patch, tuple(helpers), answer), 100 + 20 * len(key))
    return answer


def _explained(patch: PatchFile, helpers: list[PatchFile], reader: TreeReader) -> bool:
    laid = _Laid(reader)
    for helper in helpers:
        laid.lay(helper)
    for diff in patch.files:
        if diff.old_path is None:
            if laid.read(diff.path) is not None:
                return False  # it creates a file that is there: the helpers' change does not explain that
            continue
        data = laid.read(diff.old_path)
        if data is None:
            return False
        result, skipped = _placed(diff, data, 0)
        if skipped:
            old = file_lines(data)
            added, slack = laid.added.get(diff.old_path, set()), laid.removed.get(diff.old_path, 0)
            if not all(_stands_on(diff.hunks[number - 1].old_lines, old, added, slack) for number in skipped):
                return False
        laid.files[diff.old_path if diff.new_path is None else diff.new_path] = (
            None if diff.new_path is None else result
        )
    return True
