"""matrix: the grid of patches by upstream releases, for people (a coloured table) and as a JSON document."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from rich.console import Console
from rich.table import Table
from rich.text import Text

from patchmgr.engine.results import CheckResult, State
from patchmgr.render.backports import landed_json
from patchmgr.render.console import STATE_STYLE, notes, say, shown
from patchmgr.render.fields import fields_json
from patchmgr.render.status import commit_json, guard_json, or_none

if TYPE_CHECKING:
    from patchmgr.history.backports import Landed
    from patchmgr.history.matrix import Change, Column, Matrix, Row


class StateKey(NamedTuple):
    """A state in the matrix's legend: what it means, and the colour of its swatch and cells on the HTML page
    (on a terminal its colour is ``console.STATE_STYLE``, as in every table)."""

    meaning: str
    colour: str


LEGEND = {
    State.CLEAN: StateKey("applies as is", "#1f8f3a"),
    State.OFFSET: StateKey("applies, hunks moved", "#5cb85c"),
    State.FUZZ: StateKey("applies only with fuzz", "#e0a800"),
    State.THREE_WAY: StateKey("needs a 3-way merge", "#f0ad4e"),
    State.CONFLICT: StateKey("does not apply", "#d9534f"),
    State.UPSTREAM: StateKey("upstream has it", "#2a9fd6"),
    State.MISSING: StateKey("a file it patches is gone", "#8b1a1a"),
    State.NOTHING_TO_DELETE: StateKey("the lines it deletes are not there, and were never removed", "#8e44ad"),
}
GUARD_BROKEN = "guard broken"


def cell_label(result: CheckResult) -> str:
    return result.label + needs_label(result) + ("" if result.guards_hold else f", {GUARD_BROKEN}")


def needs_label(result: CheckResult) -> str:
    """``, needs first`` in a knock-on failure's cell: the earlier patch it fails for want of is to blame."""
    return "".join(f", needs {needed.patch_id}" for needed in result.needs)


def cell_detail(result: CheckResult) -> str:
    """What a cell says on hover: the state's detail, then each guard that does not hold."""
    parts = [result.detail] if result.detail else []
    for guard in result.guards:
        if not guard.holds:
            why = guard.error or "; ".join(guard.offense_lines)
            parts.append(f"guard broken: {guard.guard}" + (f" ({why})" if why else ""))
    return "; ".join(parts)


def column_title(column: Column) -> str:
    if column.kind == "pin":
        return f"pin {column.name}"
    if column.kind == "tip":
        return f"{column.name} (tip)"
    return column.name


def change_text(change: Change | None) -> str:
    if change is None:
        return "unchanged"
    if change.commit is None:
        return f"{change.state.value} at {change.column}: {change.note}"
    pr = f" PR #{change.pr}" if change.pr and f"#{change.pr}" not in change.subject else ""
    guard = f", {GUARD_BROKEN}" if change.guards_broken else ""
    how = "carried by" if change.carrier else f"{change.state.value}{guard} since"
    if change.named:  # a commit the patch itself names: say what it is to the patch
        return f"{how} {change.commit[:12]}: {change.named} ({change.subject})"
    return f"{how} {change.commit[:12]}{pr} {change.subject}"


def backports_text(matrix: Matrix, row: Row) -> str:
    """Per pull request or commit the patch names, the columns that have it: ``PR #37 (commit 74093e34cea4): in
    main``, ``PR #6131: in no column``; ``unknown`` with the reason where no column can say."""
    lines = []
    for index, first in enumerate(row.backports[0] if row.backports else ()):
        marks = [cell[index] for cell in row.backports]
        there = [column_title(c) for c, m in zip(matrix.columns, marks, strict=False) if m.presence == "present"]
        if all(m.presence == "unknown" for m in marks):
            lines.append(f"{first.reference.title}: unknown ({first.reason})")
        else:
            lines.append(f"{first.reference.title}: in {', '.join(there) or 'no column'}")
    return "\n".join(lines)


def chosen_lines(matrix: Matrix) -> list[str]:
    """Each column but the pin with the rule that chose it; the deciding one says so, the pin too when it decides
    (followed by releases, none newer)."""
    verdict = matrix.verdict_column
    lines = [
        f"{column_title(c)}: {c.rule}" + (", decides the verdict" if i == verdict else "")
        for i, c in enumerate(matrix.columns)
        if c.kind != "pin"  # a StrEnum: its value, without importing the history code here
    ]
    if matrix.columns and matrix.columns[verdict].kind == "pin":
        track = matrix.upstream.track.value
        what = "release or release candidate" if track == "prereleases" else "release"
        pin = column_title(matrix.columns[verdict])
        lines.append(f"{pin} decides the verdict: no {what} is newer than the pin (track = {track})")
    return lines or ["only the pin"]


def matrix_json(matrices: list[Matrix], target: str, html: str | None) -> dict:
    return {
        "target": target,
        "html": html,
        "ok": all(m.ok for m in matrices),
        "upstreams": [_upstream_json(m) for m in matrices],
    }


def _upstream_json(matrix: Matrix) -> dict:
    return {
        "name": matrix.upstream.name,
        "source": matrix.source or None,
        "pin": matrix.upstream.commit,
        "ok": matrix.ok,
        "available": matrix.error is None,
        "error": matrix.error,
        "hint": matrix.hint,
        "verdict_column": matrix.columns[matrix.verdict_column].name if matrix.columns else None,
        "tracking": {
            "track": matrix.upstream.track.value,
            "branch": matrix.upstream.branch,
            "tag_pattern": matrix.upstream.tag_pattern,
        },
        "columns": [{"kind": c.kind, "name": c.name, "commit": c.commit, "chosen_by": c.rule} for c in matrix.columns],
        "patches": [
            {
                "id": row.patch.id,
                "cells": [
                    _cell_json(c, r, row.backports[i] if row.backports else ())
                    for i, (c, r) in enumerate(zip(matrix.columns, row.cells, strict=False))
                ],
                "changed": or_none(_change_json, row.change),
            }
            for row in matrix.rows
        ],
        "notes": matrix.notes,
    }


def _cell_json(column: Column, result: CheckResult, marks: Sequence[Landed]) -> dict:
    doc = {
        "column": column.name,
        "state": result.state.value,
        "detail": result.detail,
        "needs": [needed.patch_id for needed in result.needs],
        "guards_hold": result.guards_hold,
        "guards": [guard_json(g) for g in result.guards],
    }
    if result.carrier:
        doc["carrier"] = result.carrier
    if result.changed_since:
        doc["changed_since"] = True
    if marks:
        doc["backports"] = [landed_json(mark) for mark in marks]
    return doc


def _change_json(change: Change) -> dict:
    return {**fields_json(change, "named"), **commit_json(change), "named_by_patch": change.named or None}


def render_matrix(console: Console, matrices: list[Matrix], target: str, html: str | None) -> None:
    for matrix in matrices:
        if matrix.error is not None:
            say(console, f"target {target}, {matrix.upstream.name}: unavailable, no source could provide it:", "red")
            say(console, f"  {matrix.error}")
            if matrix.hint:
                say(console, f"  hint: {matrix.hint}")
            continue
        tip = next((c for c in matrix.columns if c.kind == "tip"), None)
        title = (
            f"target {target}, {matrix.upstream.name}: pin {matrix.upstream.commit[:12]}"
            + (f" .. {tip.name} {tip.commit[:12]}" if tip else "")
            + f", from {matrix.source}"
        )
        table = Table(title=title, title_justify="left", expand=False)
        table.add_column("patch")
        for column in matrix.columns:
            table.add_column(column_title(column), no_wrap=True)
        table.add_column("first change", overflow="fold")
        named = any(row.backports for row in matrix.rows)
        if named:
            table.add_column("pull requests and commits it names", overflow="fold")
        for row in matrix.rows:
            cells = [_styled(result) for result in row.cells]
            more = [shown(backports_text(matrix, row), style="dim")] if named else []
            table.add_row(shown(row.patch.id), *cells, shown(change_text(row.change), style="dim"), *more)
        console.print(table)
        say(console, "refs: " + "; ".join(chosen_lines(matrix)), "dim")
        notes(console, matrix.notes)
    legend = Text("legend: ")
    for state, key in LEGEND.items():
        legend.append(state.value, style=STATE_STYLE[state])
        legend.append(f" {key.meaning}  ")
    legend.append(GUARD_BROKEN, style="bold red")
    legend.append(" a Guard: header does not hold")
    console.print(legend)
    if html:
        say(console, f"wrote {html}")


def _styled(result: CheckResult) -> Text:
    text = Text(result.label + needs_label(result), style=STATE_STYLE[result.state])
    if not result.guards_hold:
        text.append(f", {GUARD_BROKEN}", style="bold red")
    return text
