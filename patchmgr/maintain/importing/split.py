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
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path, PurePosixPath

from patchmgr.engine.classify import apply_file
from patchmgr.engine.place import apply_hunks, decode, encode, split_lines
from patchmgr.engine.results import TreeReader
from patchmgr.model.diff import FileDiff, Hunk
from patchmgr.model.errors import UsageError
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
    label: str  # what it takes, for people: "src/a.py", "src/a.py hunks #1, #3 of 4"


def read_mapping(path: Path) -> dict[str, list[str]]:
    if path.exists() and not path.is_file():  # a FIFO or a device would block the read
        raise UsageError(f"--map {path}: not a regular file", "give the TOML mapping file")
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8-sig"))  # a byte-order mark is not TOML
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(
            f"--map {path}: cannot be read ({getattr(exc, 'strerror', None) or exc})",
            'give the TOML mapping file: topic = ["path", "path#2"]',
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"--map {path}: invalid TOML: {exc}", "fix the syntax at that line") from None
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
            parts: dict[int, set[int]] = {}
            for entry in entries:
                found = _entry(patch, entry, where)
                if found is None:
                    continue
                used.add(entry)
                index, hunks = found
                clash = hunks & taken.get(index, set())
                if clash:
                    raise UsageError(
                        f"--map: {entry} takes hunk #{min(clash) + 1} of {patch.files[index].path} "
                        "that an earlier topic takes",
                        "give each hunk to one topic",
                    )
                taken.setdefault(index, set()).update(hunks)
                parts.setdefault(index, set()).update(hunks)
            if parts:
                specs.append(_spec(patch, topic, parts))
        rest = [i for i, d in enumerate(patch.files) if len(taken.get(i, ())) < len(_hunks(d))]
        if rest:
            notes.append(
                f"{where}: the mapping leaves out {', '.join(patch.files[i].path for i in rest)}: one piece per file"
            )
        for index in rest:
            left = set(range(len(_hunks(patch.files[index])))) - taken.get(index, set())
            specs.append(_spec(patch, None, {index: left}))
    elif mode is SplitMode.HUNK:
        for index, diff in enumerate(patch.files):
            if diff.kind != "modify" or len(diff.hunks) < 2:
                specs.append(_spec(patch, None, {index: set(range(len(_hunks(diff))))}))
            else:
                specs += [_spec(patch, None, {index: {h}}) for h in range(len(diff.hunks))]
    else:
        specs = [_spec(patch, None, {i: set(range(len(_hunks(d))))}) for i, d in enumerate(patch.files)]
    return _unique(specs), notes, used


def _hunks(diff: FileDiff) -> tuple[Hunk | None, ...]:
    return diff.hunks if diff.hunks else (None,)  # a section without hunks (an empty new file) is one part


def _entry(patch: PatchFile, entry: str, where: str) -> tuple[int, set[int]] | None:
    path, _, numbers = entry.partition("#")
    index = next((i for i, d in enumerate(patch.files) if path in (d.old_path, d.new_path)), None)
    if index is None:
        return None
    count = len(_hunks(patch.files[index]))
    if not numbers:
        return index, set(range(count))
    if patch.files[index].kind != "modify":
        raise UsageError(
            f"--map: {entry}: {path} is {patch.files[index].kind}ed whole, its hunks cannot be split",
            f'name the file alone: "{path}"',
        )
    hunks = set()
    for number in numbers.split(","):
        if not re.fullmatch(r"\d+", number.strip()) or not 1 <= int(number) <= count:
            raise UsageError(
                f"--map: {entry}: {path} has hunks #1 to #{count} in {where}",
                "number hunks from 1, as they come in the patch",
            )
        hunks.add(int(number) - 1)
    return index, hunks


def _spec(patch: PatchFile, topic: str | None, parts: dict[int, set[int]]) -> PieceSpec:
    labels = []
    for index, hunks in sorted(parts.items()):
        diff = patch.files[index]
        total = len(_hunks(diff))
        if len(hunks) == total:
            labels.append(diff.path)
        else:
            labels.append(
                f"{diff.path} hunk{'s' if len(hunks) > 1 else ''} "
                f"{', '.join(f'#{h + 1}' for h in sorted(hunks))} of {total}"
            )
    if topic is None:
        index, hunks = min(parts.items())
        topic = _slug(patch.files[index].path)
        if len(hunks) < len(_hunks(patch.files[index])):
            topic += "-hunk-" + "-".join(str(h + 1) for h in sorted(hunks))
    return PieceSpec(topic, tuple((i, tuple(sorted(h))) for i, h in sorted(parts.items())), "; ".join(labels))


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
        out.append(PieceSpec(pid, spec.parts, spec.label))
    return out


@dataclass(frozen=True)
class PieceChange:
    """The files a piece changes, before and after it (on top of the pieces before it)."""

    spec: PieceSpec
    before: dict[str, bytes | None]
    after: dict[str, bytes | None]


def piece_changes(patch: PatchFile, specs: list[PieceSpec], reader: TreeReader) -> list[PieceChange]:
    """Each piece's change at ``reader`` (the base), the hunks of each file applied cumulatively by the engine."""
    state: dict[str, bytes | None] = {}
    applied: dict[int, set[int]] = {}
    changes = []
    for spec in specs:
        staged: dict[str, bytes | None] = {}
        for index, hunks in spec.parts:
            diff = patch.files[index]
            applied.setdefault(index, set()).update(hunks)
            path = diff.old_path  # never None for a "modify"
            # a file absent at the base goes to apply_file, which refuses it as the engine does (PlacementFailure)
            if (
                diff.kind == "modify"
                and diff.hunks
                and path is not None
                and (original := reader.read(path)) is not None
            ):
                chosen = tuple(diff.hunks[h] for h in sorted(applied[index]))
                lines, _ = apply_hunks(path, split_lines(decode(original)), chosen)
                staged[path] = encode("".join(lines))
            else:
                apply_file(diff, reader, staged)
        before = {path: state[path] if path in state else reader.read(path) for path in staged}
        state.update(staged)
        changes.append(PieceChange(spec, before, dict(staged)))
    return changes
