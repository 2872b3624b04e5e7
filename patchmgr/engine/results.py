"""The engine's values: a patch's state at a tree, where its hunks went, and why it does not apply."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol

from patchmgr.model.diff import SYMLINK_MODE
from patchmgr.model.guards import more_offenses
from patchmgr.model.patchfile import PatchFile


class State(str, Enum):
    CLEAN = "clean"
    OFFSET = "offset"
    FUZZ = "fuzz"
    THREE_WAY = "three-way"
    CONFLICT = "conflict"
    UPSTREAM = "upstream"
    MISSING = "missing"
    # A patch that only deletes lines, where those lines are not there and history does not show upstream
    # removing them (``history.deletions``): its reverse applies, but that is no evidence of upstream's change.
    NOTHING_TO_DELETE = "nothing-to-delete"

    @property
    def applies(self) -> bool:
        """Whether ``apply`` may apply a patch in this state without being told to."""
        return self in (State.CLEAN, State.OFFSET)

    @property
    def refused(self) -> bool:
        """Whether ``refresh`` and ``bump`` refuse a patch in this state: it does not apply, not even with fuzz or a
        3-way merge, and no evidence says upstream has it (``nothing-to-delete`` is no ``upstream``: see
        ``history.deletions``)."""
        return self in (State.CONFLICT, State.MISSING, State.NOTHING_TO_DELETE)


class TreeReader(Protocol):
    """Files of an upstream tree. ``read`` returns None for an absent path and for a
    folder; for a symbolic link it returns the link's target as a bytes object whose
    ``is_symlink`` attribute is true (``io.git.LinkBlob``). A reader may also have
    ``is_folder(path) -> bool``: with it, a patch that creates a file where a folder
    is is a conflict, as in ``git apply --check``; without it the engine cannot tell."""

    def read(self, path: str) -> bytes | None: ...

    def read_blob(self, sha: str) -> bytes | None: ...


Merge3 = Callable[[bytes, bytes, bytes], "bytes | None"]


class ModedBytes(bytes):
    """A patched file's bytes with the mode the patch gives it (``100644``, ``100755``, ``120000``), as
    ``git apply`` sets it: what a checkout writes for the file, and how a link a patch made or changed reads as a
    link (``is_symlink``, see ``TreeReader``) to the patches after it. Plain bytes keep the mode the file has."""

    mode: str

    def __new__(cls, data: bytes, mode: str) -> ModedBytes:
        made = super().__new__(cls, data)
        made.mode = mode
        return made

    @property
    def is_symlink(self) -> bool:
        return self.mode == SYMLINK_MODE


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


@dataclass(frozen=True)
class GuardResult:
    """One ``Guard:`` header of a patch evaluated on the patched content (see model/guards.py)."""

    guard: str  # the header value as written
    holds: bool
    offenses: tuple[str, ...] = ()  # "path:line: text", the first places that break it (model/guards.MAX_OFFENSES)
    error: str | None = None  # the guard could not be evaluated (then it does not hold)
    offense_count: int = 0  # the places that break it, all of them: more than ``offenses`` when they were capped

    @property
    def offense_lines(self) -> tuple[str, ...]:
        """The offenses as every format shows them: those kept, then how many more there are."""
        more = more_offenses(len(self.offenses), max(self.offense_count, len(self.offenses)))
        return (*self.offenses, more) if more else self.offenses


@dataclass(frozen=True)
class Needed:
    """An earlier patch of the series that a patch needs and that does not apply itself (``engine.knock_on``)."""

    patch_id: str
    state: State  # the earlier patch's own state: why it is not there for this one

    @property
    def text(self) -> str:
        """``needs first, which conflicts``: the blame on the earlier patch, not on upstream."""
        which = {State.CONFLICT: "conflicts", State.MISSING: "misses a file it patches"}.get(
            self.state, f"is {self.state.value}"
        )
        return f"needs {self.patch_id}, which {which}"


@dataclass
class CheckResult:
    patch: PatchFile
    state: State
    placements: list[HunkPlacement] = field(default_factory=list)
    conflict: Conflict | None = None
    # path -> new bytes (None = deleted) when the patch can be applied in its state
    files: dict[str, bytes | None] = field(default_factory=dict)
    evidence: str | None = None  # why it is ``upstream`` (or ``nothing-to-delete``), for people
    # the upstream commit that carries the patch's change (full sha: its patch-id, or the commit the patch's
    # Origin names), in a result that history.evidence returns: the only evidence on which ``bump`` drops a patch
    carrier: str | None = None
    changed_since: bool = False  # ``upstream``, but the lines changed after it landed: its reverse does not apply
    notes: list[str] = field(default_factory=list)  # e.g. the patched lines found away from the patch's place
    guards: list[GuardResult] = field(default_factory=list)  # the patch's Guard: headers on the patched content
    # a knock-on failure: the earlier patches of the series whose change this one stands on and which do not
    # apply themselves; it fails only for want of them (``engine.knock_on``), so the blame is theirs, not upstream's
    needs: tuple[Needed, ...] = ()

    @property
    def label(self) -> str:
        """The state as every output names it (``state_label``)."""
        return state_label(self.state, self.carrier, self.changed_since)

    @property
    def guards_hold(self) -> bool:
        return all(g.holds for g in self.guards)

    @property
    def ok(self) -> bool:
        """What every command means by OK: the patch applies exactly and keeps its guards (a broken guard is not
        OK even when ``clean``).

        ``nothing-to-delete`` is not OK, though the tree already lacks the lines the patch deletes: OK promises
        that ``apply`` applies the series there, and neither ``apply`` nor ``git apply`` can apply a deletion of
        lines that are not there; and since no history shows upstream removing them, it is not ``upstream``'s
        either (which is not OK for the same reason, and which ``bump`` may drop). A knock-on failure (``needs``)
        is not OK: it does not apply, whoever is to blame."""
        return self.state.applies and self.guards_hold

    @property
    def detail(self) -> str:
        return "; ".join(part for part in (self._state_detail(), *self.notes) if part)

    def _state_detail(self) -> str:
        if self.needs:
            return "; ".join(needed.text for needed in self.needs)
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
        if self.state is State.NOTHING_TO_DELETE:
            return self.evidence or "the lines it deletes are not there: nothing to delete"
        return ""


def state_label(state: State, carrier: str | None = None, changed_since: bool = False) -> str:
    """``upstream (carried by 85323c5cc888, changed since)``: an ``upstream`` state with the commit that carries
    it and whether its lines changed after it (its reverse no longer applies); any other state by its name."""
    clause = carried_clause(state, carrier, changed_since)
    return f"{state.value} ({clause})" if clause else state.value


def carried_clause(state: State, carrier: str | None = None, changed_since: bool = False) -> str:
    """``carried by 85323c5cc888, changed since``: what the label says after an ``upstream`` state's name, apart
    (the matrix page sets it under the name, where it may wrap); empty for any other state."""
    if state is not State.UPSTREAM:
        return ""
    said = [f"carried by {carrier[:12]}"] if carrier else []
    return ", ".join([*said, *(["changed since"] if changed_since else [])])


def _per_file(placements: list[HunkPlacement], describe: Callable[[HunkPlacement], str]) -> str:
    """``path: hunk #1 +3 lines, #2 +3 lines; other: ...``: each path said once."""
    by_path: dict[str, list[str]] = {}
    for placement in placements:
        by_path.setdefault(placement.path, []).append(f"#{placement.number} {describe(placement)}")
    return "; ".join(f"{path}: hunk {', '.join(items)}" for path, items in by_path.items())
