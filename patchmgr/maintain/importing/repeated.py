"""Files a monolithic patch changes more than once, and diffs edited after git made them.

A monolithic patch may hold several diffs of one path: a second diff stacked on the first (its preimage is
the first one's result), or two diffs made against the same preimage. ``git apply`` takes both: it applies
the diffs of a path in the order they come, each to the result of those before (a diff made against the
same preimage lands there, with offsets, when its hunks leave the lines the one before changed alone).
Import composes them the same way: the file a piece makes is every hunk taken so far, applied in the
patch's order (``compose``), so the pieces together give what ``git apply`` of the monolith gives.

Hunks of a path are numbered from 1 across all its diffs, in the order they come in the patch (a running
number): with a first diff of 2 hunks and a second of 3, ``path#3`` is the first hunk of the second diff.
A piece says which diff of the path it holds (``Take``: "diff 2 of 2").

A diff's ``index`` line names the blob its result should be. When the patch, applied to the blob its
index line names as the preimage, gives another blob, the diff was edited after git made it (a space
added by hand): ``file_notes`` says so per file. The patch's bytes are what is imported.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from patchmgr.engine.file_change import apply_file
from patchmgr.engine.place import PlacementFailure, apply_hunks, decode, encode
from patchmgr.engine.results import TreeReader
from patchmgr.model.diff import FileDiff, blob_id
from patchmgr.model.patchfile import PatchFile
from patchmgr.model.text import split_lines


@dataclass(frozen=True)
class Take:
    """What a piece holds of one diff of a path."""

    path: str
    diff: int  # which diff of the path, 1-based in the patch's order
    diffs: int  # how many diffs of the path the patch holds
    hunks: tuple[int, ...]  # running hunk numbers (1-based, across the path's diffs)
    total: int  # the path's hunks across all its diffs
    whole: bool  # every hunk of this diff


def parts(diff: FileDiff) -> int:
    """A diff's hunks; a diff without hunks (an empty new file, a mode change) is one part."""
    return len(diff.hunks) or 1


def sections_of(patch: PatchFile, path: str) -> list[int]:
    """The indexes of the diffs that name ``path`` (either side), in the patch's order."""
    return [i for i, d in enumerate(patch.files) if path in (d.old_path, d.new_path)]


def running(patch: PatchFile, index: int, hunk: int) -> int:
    """The running number of hunk ``hunk`` (0-based) of diff ``index`` among its path's diffs."""
    before = [i for i in sections_of(patch, patch.files[index].path) if i < index]
    return sum(parts(patch.files[i]) for i in before) + hunk + 1


def locate(patch: PatchFile, path: str, number: int) -> tuple[int, int] | None:
    """The diff index and its 0-based hunk of ``path``'s running hunk ``number``; None past the last."""
    for index in sections_of(patch, path):
        count = parts(patch.files[index])
        if number <= count:
            return index, number - 1
        number -= count
    return None


def hunk_total(patch: PatchFile, path: str) -> int:
    return sum(parts(patch.files[i]) for i in sections_of(patch, path))


def take(patch: PatchFile, index: int, hunks: Sequence[int]) -> Take:
    diff = patch.files[index]
    own = sections_of(patch, diff.path)
    return Take(
        diff.path,
        own.index(index) + 1,
        len(own),
        tuple(running(patch, index, h) for h in sorted(hunks)),
        hunk_total(patch, diff.path),
        len(hunks) == parts(diff),
    )


def label(takes: Sequence[Take]) -> str:
    """For people: "src/a.py", "src/a.py hunks #1, #3 of 4"; of a file the patch changes in several diffs,
    which diffs and (unless all of the file's) which hunks, numbered across them: "src/a.py diff 2 of 2,
    hunk #3 of 3". The takes of one path are said together; paths are joined by "; "."""
    paths: dict[str, list[Take]] = {}
    for item in takes:
        paths.setdefault(item.path, []).append(item)
    said = []
    for path, group in paths.items():
        first = group[0]
        numbers = [n for item in group for n in item.hunks]
        hunks = f"hunk{'s' if len(numbers) > 1 else ''} {', '.join(f'#{n}' for n in numbers)} of {first.total}"
        if first.diffs == 1:
            said.append(path if first.whole else f"{path} {hunks}")
            continue
        which = ", ".join(str(item.diff) for item in group)
        text = f"{path} diff{'s' if len(group) > 1 else ''} {which} of {first.diffs}"
        said.append(text if len(numbers) == first.total else f"{text}, {hunks}")
    return "; ".join(said)


def groups(patch: PatchFile) -> list[list[int]]:
    """For each diff, the diffs it must be composed with (itself included): those sharing a path with it,
    and theirs in turn, in the patch's order."""
    owner = list(range(len(patch.files)))

    def root(i: int) -> int:
        while owner[i] != i:
            owner[i] = owner[owner[i]]
            i = owner[i]
        return i

    first: dict[str, int] = {}
    for index, diff in enumerate(patch.files):
        for path in (diff.old_path, diff.new_path):
            if path is None:
                continue
            if path in first:
                owner[root(index)] = root(first[path])
            else:
                first[path] = index
    members: dict[int, list[int]] = {}
    for index in range(len(patch.files)):
        members.setdefault(root(index), []).append(index)
    return [members[root(index)] for index in range(len(patch.files))]


def compose(
    patch: PatchFile, indexes: Sequence[int], applied: Mapping[int, set[int]], reader: TreeReader
) -> dict[str, bytes | None]:
    """The files the diffs ``indexes`` give at ``reader``, each limited to its ``applied`` hunks (0-based; a
    diff with none is skipped), applied in order, each to the result of those before, as ``git apply`` does.

    A hunk that does not place raises ``PlacementFailure`` whose conflict numbers the hunk as ``--map`` does
    (the running number across the path's diffs)."""
    staged: dict[str, bytes | None] = {}
    for index in sorted(indexes):
        hunks = sorted(applied.get(index, ()))
        if not hunks:
            continue
        diff = patch.files[index]
        path = diff.old_path
        current = (staged[path] if path in staged else reader.read(path)) if path is not None else None
        try:
            # a file absent goes to apply_file, which refuses it as the engine does
            if diff.kind == "modify" and diff.hunks and path is not None and current is not None:
                chosen = tuple(diff.hunks[h] for h in hunks)
                lines, _ = apply_hunks(path, split_lines(decode(current)), chosen)
                staged[path] = encode("".join(lines))
            else:
                apply_file(diff, reader, staged)
        except PlacementFailure as failure:
            conflict = failure.conflict
            if conflict.hunk:
                conflict = replace(conflict, hunk=running(patch, index, hunks[conflict.hunk - 1]))
            raise PlacementFailure(conflict, failure.missing, failure.unsafe) from None
    return staged


def first_preimages(patch: PatchFile) -> list[tuple[str, str]]:
    """(path, preimage blob id) of each file the upstream has, from the first diff of it only: a later diff's
    preimage is a result of the patch (stacked) or the same blob again. One entry per file."""
    seen: set[str] = set()
    found = []
    for diff in patch.files:
        path, blob = diff.old_path, diff.old_blob
        if diff.kind != "add" and path and path not in seen and blob and set(blob) != {"0"}:
            found.append((path, blob))
        seen.update(p for p in (diff.old_path, diff.new_path) if p)
    return found


def _matches(data: bytes | None, blob: str | None) -> bool:
    if not blob or set(blob) == {"0"}:
        return data is None
    return data is not None and blob_id(data, blob).startswith(blob)


def file_notes(patch: PatchFile, reader: TreeReader) -> list[str]:
    """Notes on the patch at ``reader`` (its base): how the diffs of each repeated file were made and are
    applied, and each diff whose result is not the blob its index line names though its preimage is."""
    notes = []
    for path in dict.fromkeys(d.path for d in patch.files):
        own = sections_of(patch, path)
        if len(own) < 2:
            continue
        made = []
        for k, index in enumerate(own[1:], 2):
            diff, previous = patch.files[index], patch.files[own[k - 2]]
            if diff.old_blob and previous.new_blob and _same_id(diff.old_blob, previous.new_blob):
                made.append(f"diff {k} is stacked on diff {k - 1} (its preimage is diff {k - 1}'s result)")
            elif diff.old_blob and any(_same_id(diff.old_blob, patch.files[i].old_blob) for i in own[: k - 1]):
                made.append(f"diff {k} was made against the same preimage as diff 1")
            else:
                made.append(f"diff {k}'s index line names neither diff {k - 1}'s result nor its preimage")
        notes.append(
            f"{path} has {len(own)} diffs in the patch, applied in order, each to the result of those before "
            f"(as git apply does): {'; '.join(made)}; each piece says which diff it holds"
        )
    staged: dict[str, bytes | None] = {}
    for index, diff in enumerate(patch.files):
        source = diff.old_path
        before = (staged[source] if source in staged else reader.read(source)) if source else None
        try:
            apply_file(diff, reader, staged)
        except PlacementFailure:
            break  # the patch does not apply here: the proof says so
        after = staged.get(diff.new_path) if diff.new_path else None
        if after is None or not diff.new_blob or not _matches(before, diff.old_blob) or _matches(after, diff.new_blob):
            continue
        own = sections_of(patch, diff.path)
        which = f" (diff {own.index(index) + 1} of {len(own)})" if len(own) > 1 else ""
        notes.append(
            f"{diff.path}{which}: its index line names the result {diff.new_blob}, but the patch gives "
            f"{blob_id(after, diff.new_blob)[: len(diff.new_blob)]} from the preimage {diff.old_blob}: the diff "
            "was edited after git made it (by hand?); the patch's bytes are what is imported"
        )
    return notes


def repeated_conflict(patch: PatchFile, reader: TreeReader) -> str:
    """Why the patch does not apply at ``reader`` when a later diff of a repeated file is what fails there
    (it does not apply to the result of the diffs before it: ``git apply`` refuses it too), else ""."""
    staged: dict[str, bytes | None] = {}
    for index, diff in enumerate(patch.files):
        try:
            apply_file(diff, reader, staged)
        except PlacementFailure as failure:
            own = sections_of(patch, diff.path)
            if own.index(index) == 0:
                return ""
            conflict = failure.conflict
            hunk = f" (hunk #{running(patch, index, conflict.hunk - 1)}: {conflict.reason})" if conflict.hunk else ""
            which = own.index(index) + 1
            return (
                f"; {diff.path}: its diff {which} of {len(own)} does not apply to the result of the "
                f"one{'s' if which > 2 else ''} before it{hunk}, and git apply refuses it too: make it against "
                "that result, or merge the diffs"
            )
    return ""


def _same_id(left: str | None, right: str | None) -> bool:
    """Two (abbreviated) blob ids naming the same blob: one a prefix of the other."""
    if not left or not right or set(left) == {"0"}:
        return False
    size = min(len(left), len(right))
    return left[:size] == right[:size]
