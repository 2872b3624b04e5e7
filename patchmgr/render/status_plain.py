"""status for a log: the same table and lines as on a terminal, as plain text, without rich.

When its output is not a terminal (a pipe, a file, a CI or Docker log) ``status`` writes this: columns as wide
as what they hold (no padding to the console's width), a cell's further lines under its column, nothing cut,
no trailing spaces, no colour. Every text from outside is shown as ``for_terminal`` shows it on a terminal.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple, TextIO

from patchmgr.engine.results import CheckResult, State
from patchmgr.render.outside import for_terminal

if TYPE_CHECKING:  # only for annotations
    from patchmgr.check.status import TargetStatus, UpstreamStatus

HEADER = ("upstream", "patch", "state", "detail")
GAP = "  "  # between two columns

STATE_STYLE = {
    State.CLEAN: "green",
    State.OFFSET: "green",
    State.FUZZ: "yellow",
    State.THREE_WAY: "yellow",
    State.CONFLICT: "red",
    State.UPSTREAM: "cyan",
    State.MISSING: "red",
    State.NOTHING_TO_DELETE: "magenta",
}
"""Each state's colour on a terminal (``render/console`` and every table use it; a log has no colour)."""


class Row(NamedTuple):
    """A row of the status table; the styles are what a terminal shows the state and the detail in ("": none)."""

    upstream: str
    patch: str
    state: str
    detail: str
    state_style: str = ""
    detail_style: str = ""


class Line(NamedTuple):
    """A line said under the table, and its style on a terminal ("": none)."""

    text: str
    style: str = ""


def guard_lines(result: CheckResult) -> list[str]:
    """For each broken guard: the guard, then each offending ``file:line: text`` (or why it could not be read)."""
    lines = []
    for guard in result.guards:
        if guard.holds:
            continue
        lines.append(f"guard broken: {guard.guard}")
        lines += [f"  {offense}" for offense in guard.offense_lines]
        if guard.error:
            lines.append(f"  {guard.error}")
    return lines


def state_cell(result: CheckResult) -> tuple[str, str]:
    """The state cell and its style: ``clean``, or ``clean, guard broken`` when a guard of the patch does not
    hold."""
    if result.guards_hold:
        return result.label, STATE_STYLE[result.state]
    return f"{result.label}, guard broken", "red"


def status_rows(status: UpstreamStatus) -> list[Row]:
    """The table's rows of one upstream, a detail of several lines in one cell."""
    name = status.upstream.name
    if not status.available:
        return [Row(name, "-", "unavailable", "no source could provide it (see below)", "red")]
    rows = [] if status.results else [Row(name, "-", "no patches", "")]
    for result in status.results:
        state, style = state_cell(result)
        rows.append(Row(name, result.patch.id, state, result.detail, style))
        broken = guard_lines(result)
        if broken:
            rows.append(Row("", "", "", "\n".join(broken), detail_style="red"))
        # a knock-on failure's lines are the earlier patch's to show: upstream is not to blame
        if result.conflict and result.conflict.upstream_lines and result.state is State.CONFLICT and not result.needs:
            lines = "\n".join(f"  {line}" for line in result.conflict.upstream_lines)
            context = f"upstream at line {result.conflict.expected_line}:\n{lines}"
            rows.append(Row("", "", "", context, detail_style="dim"))
        marks = status.backports.get(result.patch.id)
        if marks:
            from patchmgr.render.backports import backport_lines
            from patchmgr.render.reports.rows import checked_at

            rows.append(Row("", "", "", "\n".join(backport_lines(marks, checked_at(status))), detail_style="dim"))
    return rows


def upstream_lines(status: UpstreamStatus) -> list[Line]:
    """What is said of an upstream under the table: where its files came from and its notes, or why it is
    unavailable."""
    name = status.upstream.name
    if not status.available:
        lines = [Line(f"  {name}: unavailable, no source could provide it:", "red")]
        lines += [Line(f"    {reason}") for reason in (status.error or "").split("; ")]
        if status.hint:
            lines.append(Line(f"    hint: {status.hint}"))
        return lines
    commit = f"{status.commit[:12]} " if status.commit else ""
    return [Line(f"  {name}: {commit}from {status.source}"), *(Line(f"    note: {n}", "yellow") for n in status.notes)]


def table(rows: list[Row]) -> list[str]:
    """``rows`` under ``HEADER``: the first three columns as wide as their widest line, the detail last."""
    cells = [[for_terminal(cell).split("\n") for cell in row[:4]] for row in [Row(*HEADER), *rows]]
    widths = [max(len(line) for row in cells for line in row[column]) for column in range(3)]
    lines = []
    for row in cells:
        for index in range(max(len(cell) for cell in row)):
            parts = [cell[index] if index < len(cell) else "" for cell in row]
            lead = GAP.join(part.ljust(width) for part, width in zip(parts, widths, strict=False))
            lines.append(f"{lead}{GAP}{parts[3]}".rstrip())
    return lines


def for_log(stream: TextIO) -> bool:
    """Whether output to ``stream`` is for a log, not a terminal: as rich decides it (``TTY_COMPATIBLE``, then
    ``FORCE_COLOR``, then ``isatty``), so that what rich would show on a terminal is shown there by rich."""
    tty_compatible = os.environ.get("TTY_COMPATIBLE", "")
    if tty_compatible in ("0", "1"):
        return tty_compatible == "0"
    force_color = os.environ.get("FORCE_COLOR")
    if force_color is not None:
        return force_color == ""
    isatty = getattr(stream, "isatty", None)
    try:
        return not (isatty is not None and isatty())
    except ValueError:  # a closed stream: rich calls it no terminal
        return True


def write_status(out: TextIO, statuses: Iterable[TargetStatus]) -> None:
    for status in statuses:
        lines = [f"target {for_terminal(status.target.name)}"]
        lines += table([row for upstream in status.upstreams for row in status_rows(upstream)])
        lines += [for_terminal(line.text) for upstream in status.upstreams for line in upstream_lines(upstream)]
        lines += [for_terminal(f"warning: {warning}") for warning in status.warnings]
        out.write("".join(f"{line}\n" for line in lines))
