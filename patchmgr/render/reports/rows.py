"""The report model every CI format lays out: one row per patch, its verdict, and where in its patch file it fails.

Each patch gets one verdict: ``pass`` (clean), ``warn`` (it applies, its hunks moved: offset), ``fail``
(any other state, or a ``Guard:`` header that breaks on the patched code) or ``error`` (its upstream
could not be checked: no result is not a red result). The format modules only lay these out.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from patchmgr.engine.results import CheckResult, State
from patchmgr.render.backports import backport_lines

if TYPE_CHECKING:
    from patchmgr.check.status import TargetStatus, UpstreamStatus
    from patchmgr.model.patchfile import PatchFile

PASS, WARN, FAIL, ERROR = "pass", "warn", "fail", "error"


@dataclass(frozen=True)
class Row:
    """One patch (or one upstream that could not be checked) in a report."""

    target: str
    status: UpstreamStatus
    patch_id: str
    result: CheckResult | None  # None: the upstream could not be checked

    @property
    def upstream(self) -> str:
        return self.status.upstream.name

    @property
    def verdict(self) -> str:
        if self.result is None:
            return ERROR
        if not self.result.guards_hold:
            return FAIL
        if self.result.state is State.CLEAN:
            return PASS
        return WARN if self.result.state is State.OFFSET else FAIL

    @property
    def state(self) -> str:
        return "unavailable" if self.result is None else self.result.label

    @property
    def kind(self) -> str:
        """What went wrong, in one word: the state, or ``guard`` for a patch that applies but breaks a guard."""
        if self.result is not None and self.result.state.applies and not self.result.guards_hold:
            return "guard"
        return "unavailable" if self.result is None else self.result.state.value

    @property
    def summary(self) -> str:
        """One line: the state and what is wrong (the upstream's reason when it could not be checked)."""
        if self.result is None:
            return unavailable_summary(self.status)
        parts = [self.result.detail] + [f"{named(g.guard)} does not hold" for g in broken_guards(self.result)]
        said = "; ".join(part for part in parts if part)
        return f"{self.state}: {said}" if said else self.state

    @property
    def backports(self) -> list[str]:
        """Each pull request or commit the patch names, and whether the ref checked has it (one line each)."""
        return backport_lines(self.status.backports.get(self.patch_id, ()), checked_at(self.status))

    @property
    def details(self) -> list[str]:
        """Every line a person needs to act: the summary, the upstream's lines at a conflict, the evidence that
        upstream carries the change, and each place a guard breaks."""
        if self.result is None:
            return [unavailable_summary(self.status)] + ([f"hint: {self.status.hint}"] if self.status.hint else [])
        result = self.result
        lines = [self.summary]
        conflict = result.conflict
        if conflict and conflict.upstream_lines and result.state is State.CONFLICT and not result.needs:
            lines.append(f"upstream at line {conflict.expected_line}:")
            lines += [f"  {line}" for line in conflict.upstream_lines]
        if result.state is State.UPSTREAM and result.carrier and result.carrier not in lines[0]:
            lines.append(f"carried by upstream commit {result.carrier}")  # said once: the evidence names it
        for guard in broken_guards(result):
            if guard.error:
                lines.append(f"{named(guard.guard)} could not be evaluated: {guard.error}")
            elif guard.offenses:
                lines.append(f"{named(guard.guard)} breaks at:")
            lines += [f"  {offense}" for offense in guard.offense_lines]
        return lines + self.backports


def named(guard: str) -> str:
    """A ``Guard:`` header as written, quoted once: its regex's backslashes stay single (``repr`` doubled them,
    and each format then escapes the text for its own reader)."""
    return f"guard '{guard}'"


def broken_guards(result: CheckResult) -> list:
    return [guard for guard in result.guards if not guard.holds]


def unavailable_summary(status: UpstreamStatus) -> str:
    return f"upstream {status.upstream.name} could not be checked at {short_ref(status.ref)}: {status.error}"


def checked_at(status: UpstreamStatus) -> str:
    """The ref checked, as a line about it says it: ``the pin``, a branch or tag, a short commit id."""
    return "the pin" if status.ref == status.upstream.commit else short_ref(status.ref)


def short_ref(ref: str) -> str:
    """A full commit id as its first 12 digits (how status shows commits); a branch or tag as it is."""
    return ref[:12] if len(ref) == 40 and all(c in "0123456789abcdef" for c in ref) else ref


def rows(statuses: Iterable[TargetStatus]) -> Iterator[Row]:
    """Every patch of every upstream, in the order status checked them; an upstream that could not be checked
    gives one ``error`` row per patch its manifest lists (one row named after the upstream when it lists none)."""
    for target_status in statuses:
        for status in target_status.upstreams:
            yield from upstream_rows(target_status.target.name, status)


def upstream_rows(target: str, status: UpstreamStatus) -> list[Row]:
    if not status.available:
        return [
            Row(target, status, patch_id, None) for patch_id in (status.upstream.patch_ids or (status.upstream.name,))
        ]
    return [Row(target, status, result.patch.id, result) for result in status.results]


def counts(items: Iterable[Row]) -> dict[str, int]:
    tally = {PASS: 0, WARN: 0, FAIL: 0, ERROR: 0}
    for row in items:
        tally[row.verdict] += 1
    return tally


def display_path(path: Path, base: Path) -> str:
    """``path`` relative to ``base`` (where CI runs: annotations point at files of the checked-out repository)."""
    try:
        return path.resolve().relative_to(base.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def patch_file(row: Row, base: Path) -> str:
    """The patch file of ``row``, as CI shows it (``patches/<upstream>/<id>.patch`` from the project root)."""
    if row.result is not None:
        return display_path(row.result.patch.path, base)
    return f"patches/{row.upstream}/{row.patch_id}.patch"


def patch_line(row: Row) -> int:
    """The line in the patch file of the hunk that fails (or, for an offset, of the first hunk that moved);
    1 when no hunk is to blame (the change is upstream, a guard breaks) or the hunk cannot be found."""
    result = row.result
    if result is None:
        return 1
    if result.conflict is not None:
        return hunk_line(result.patch, result.conflict.path, result.conflict.hunk)
    moved = [p for p in result.placements if p.offset or p.fuzz]
    if moved:
        return hunk_line(result.patch, moved[0].path, moved[0].number)
    return 1


def hunk_line(patch: PatchFile, path: str, hunk: int) -> int:
    """The line in the patch file of hunk ``hunk`` (1-based, per file, as git -v counts) of file ``path``, as the
    parser kept it; hunk 0 (the whole file is the problem) is the file's first hunk; 1 when there is no such hunk."""
    number = max(hunk, 1)
    for diff in patch.files:
        if path in (diff.old_path, diff.new_path) and number <= len(diff.hunks):
            return diff.hunks[number - 1].patch_line
    return 1
