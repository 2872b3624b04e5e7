"""Split a monolithic patch into pieces: one per file (default), one per hunk, or as a mapping file says.

A piece is a set of hunks (of one or several files). Its diff is made by git from the files before and
after it, on top of the pieces before it, so every piece has real, full blob ids on its index lines
(whatever the monolithic patch had) and applies exactly on top of the ones before it. The pieces
together make exactly the monolithic patch's change (``prove`` checks it with git).

The mapping file is TOML, one key per topic, in series order::

    # topic = the files (every hunk) or hunks (path#N, path#N,M, 1-based) it takes
    thd-bool-attention-mask = ["src/megatron/bridge/training/utils/packed_seq_utils.py"]
    nvtx-ranges = ["src/megatron/bridge/models/qwen_vl/model.py#1,3"]

What the mapping leaves out gets a piece per file, after the topics, and a note says so.

A file the patch changes in several diffs (``repeated``): ``path`` takes every diff of it, and hunks are
numbered across its diffs in the patch's order (``path#3`` is the first hunk of the second diff when the
first has two). Split per file, each diff is a piece of its own (``fused-rope``, ``fused-rope-diff-2``),
made from the composed result of the diffs before it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path, PurePosixPath

from patchmgr.engine.results import TreeReader
from patchmgr.maintain.importing.repeated import (
    Take,
    compose,
    groups,
    hunk_total,
    label,
    locate,
    parts,
    running,
    sections_of,
    take,
)
from patchmgr.model.errors import UsageError
from patchmgr.model.input_files import read_toml
from patchmgr.model.manifest import PATCH_ID
from patchmgr.model.patchfile import PatchFile


class SplitMode(StrEnum):
    """How a monolithic patch is cut: one piece per file, or per hunk."""

    FILE = "file"
    HUNK = "hunk"


MODES = tuple(SplitMode)


@dataclass(frozen=True)
class PieceSpec:
    id: str
    parts: tuple[tuple[int, tuple[int, ...]], ...]  # (index of the file section, its hunk indexes, 0-based)
    label: str  # what it takes, for people: "src/a.py", "src/a.py hunks #1, #3 of 4", "src/a.py (diff 2 of 2)"
    takes: tuple[Take, ...] = ()  # the same, as values: which diff of each path, which hunks


def read_mapping(path: Path) -> dict[str, list[str]]:
    hint = 'give the TOML mapping file: topic = ["path", "path#2"]'
    _, raw = read_toml(path, f"--map {path}", hint, encoding="utf-8-sig")  # a byte-order mark is not TOML
    mapping: dict[str, list[str]] = {}
    for topic, entries in raw.items():
        if not PATCH_ID.fullmatch(topic):  # a trailing line break would name the file
            raise UsageError(
                f"--map {path}: topic {topic!r} cannot name a patch (letters, digits, '.', '_', '+', '-')",
                "rename the topic",
            )
        if not isinstance(entries, list) or not entries or not all(isinstance(e, str) for e in entries):
            raise UsageError(
                f"--map {path}: topic {topic} must be a list of files or hunks",
                f'write {topic} = ["src/a.py", "src/b.py#2"]',
            )
        mapping[topic] = entries
    return mapping


def plan_pieces(
    patch: PatchFile, mode: SplitMode, mapping: Mapping[str, list[str]] | None, where: str
) -> tuple[list[PieceSpec], list[str], set[str]]:
    """The pieces, notes, and the mapping entries this patch used (others may belong to another upstream)."""
    notes: list[str] = []
    used: set[str] = set()
    specs: list[PieceSpec] = []
    taken: dict[int, set[int]] = {}
    if mapping:
        for topic, entries in mapping.items():
            chosen: dict[int, set[int]] = {}
            for entry in entries:
                found = _entry(patch, entry, where)
                if found is None:
                    continue
                used.add(entry)
                for index, hunks in found:
                    clash = hunks & taken.get(index, set())
                    if clash:
                        raise UsageError(
                            f"--map: {entry} takes hunk #{running(patch, index, min(clash))} of "
                            f"{patch.files[index].path} that an earlier topic takes",
                            "give each hunk to one topic",
                        )
                    taken.setdefault(index, set()).update(hunks)
                    chosen.setdefault(index, set()).update(hunks)
            if chosen:
                specs.append(_spec(patch, topic, chosen))
        rest = [i for i, d in enumerate(patch.files) if len(taken.get(i, ())) < parts(d)]
        if rest:
            notes.append(
                f"{where}: the mapping leaves out {', '.join(dict.fromkeys(patch.files[i].path for i in rest))}: "
                "one piece per file (per diff of a file the patch changes more than once)"
            )
        for index in rest:
            left = set(range(parts(patch.files[index]))) - taken.get(index, set())
            specs.append(_spec(patch, None, {index: left}))
    elif mode is SplitMode.HUNK:
        for index, diff in enumerate(patch.files):
            if diff.kind != "modify" or len(diff.hunks) < 2:
                specs.append(_spec(patch, None, {index: set(range(parts(diff)))}, by_hunk=diff.kind == "modify"))
            else:
                specs += [_spec(patch, None, {index: {h}}) for h in range(len(diff.hunks))]
    else:
        specs = [_spec(patch, None, {i: set(range(parts(d)))}) for i, d in enumerate(patch.files)]
    return _unique(specs), notes, used


def _entry(patch: PatchFile, entry: str, where: str) -> list[tuple[int, set[int]]] | None:
    """The diffs and hunks (0-based) a mapping entry names: ``path`` every diff of it, ``path#N,M`` hunks
    numbered from 1 across its diffs; None when the patch does not change ``path``."""
    path, _, numbers = entry.partition("#")
    own = sections_of(patch, path)
    if not own:
        return None
    if not numbers:
        return [(index, set(range(parts(patch.files[index])))) for index in own]
    total = hunk_total(patch, path)
    chosen: dict[int, set[int]] = {}
    for number in numbers.split(","):
        wanted = int(number) if re.fullmatch(r"\d+", number.strip()) else 0
        found = locate(patch, path, wanted) if wanted >= 1 else None
        if found is None:
            across = f" (numbered across its {len(own)} diffs)" if len(own) > 1 else ""
            raise UsageError(
                f"--map: {entry}: {path} has hunks #1 to #{total}{across} in {where}",
                "number hunks from 1, as they come in the patch",
            )
        chosen.setdefault(found[0], set()).add(found[1])
    for index, hunks in chosen.items():
        diff = patch.files[index]
        if diff.kind != "modify" and (len(own) == 1 or len(hunks) < parts(diff)):
            raise UsageError(
                f"--map: {entry}: {path} is {diff.kind}ed whole, its hunks cannot be split",
                f'name the file alone: "{path}"',
            )
    return sorted(chosen.items())


def _spec(patch: PatchFile, topic: str | None, chosen: dict[int, set[int]], by_hunk: bool = False) -> PieceSpec:
    """``by_hunk``: a one-hunk diff of a file changed in several diffs is named by its hunk, as the others are."""
    takes = tuple(take(patch, index, sorted(hunks)) for index, hunks in sorted(chosen.items()))
    if topic is None:
        first = takes[0]
        topic = _slug(first.path)
        if not first.whole or (by_hunk and first.diffs > 1):
            topic += "-hunk-" + "-".join(str(n) for n in first.hunks)
        elif first.diff > 1:
            topic += f"-diff-{first.diff}"
    return PieceSpec(topic, tuple((i, tuple(sorted(h))) for i, h in sorted(chosen.items())), label(takes), takes)


def _slug(path: str) -> str:
    name = PurePosixPath(path)
    stem = name.stem if name.suffix else name.name
    slug = re.sub(r"[^a-z0-9]+", "-", stem.lower()).strip("-") or "file"
    parent = re.sub(r"[^a-z0-9]+", "-", name.parent.name.lower()).strip("-")
    return f"{parent}-{slug}" if parent and slug in ("init", "main", "utils", "model", "file") else slug


def _unique(specs: list[PieceSpec]) -> list[PieceSpec]:
    seen: dict[str, int] = {}
    out = []
    for spec in specs:
        pid = spec.id
        if pid in seen:
            seen[pid] += 1
            pid = f"{pid}-{seen[spec.id]}"
        seen.setdefault(pid, 1)
        out.append(PieceSpec(pid, spec.parts, spec.label, spec.takes))
    return out


@dataclass(frozen=True)
class PieceChange:
    """The files a piece changes, before and after it (on top of the pieces before it)."""

    spec: PieceSpec
    before: dict[str, bytes | None]
    after: dict[str, bytes | None]


def piece_changes(patch: PatchFile, specs: list[PieceSpec], reader: TreeReader) -> list[PieceChange]:
    """Each piece's change at ``reader`` (the base): the hunks taken so far composed in the patch's order
    (``repeated.compose``, as git apply composes the diffs of a path), from the result of the pieces before."""
    state: dict[str, bytes | None] = {}
    applied: dict[int, set[int]] = {}
    together = groups(patch)
    changes = []
    for spec in specs:
        for index, hunks in spec.parts:
            applied.setdefault(index, set()).update(hunks)
        indexes = {member for index, _ in spec.parts for member in together[index]}
        staged = compose(patch, sorted(indexes), applied, reader)
        own = {path for index, _ in spec.parts for path in (patch.files[index].old_path, patch.files[index].new_path)}
        before = {path: state[path] if path in state else reader.read(path) for path in staged}
        after = {path: data for path, data in staged.items() if path in own or data != before[path]}
        state.update(after)
        changes.append(PieceChange(spec, {path: before[path] for path in after}, after))
    return changes
