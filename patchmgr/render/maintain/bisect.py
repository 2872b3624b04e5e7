"""``bisect``: where on the upstream's first-parent path each patch stopped applying, as a table and as JSON."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

from patchmgr.render.backports import backport_lines, landed_json
from patchmgr.render.console import STATE_STYLE, row, say
from patchmgr.render.status import commit_json, or_none

if TYPE_CHECKING:
    from patchmgr.history.bisect import Bisection
    from patchmgr.history.walk import PatchHistory


def bisect_json(result: Bisection) -> dict:
    patches = []
    for history in result.patches:
        first = history.first_commit
        patches.append(
            {
                "id": history.patch.id,
                "state": history.state.value,
                "first_commit": first.commit if first else None,
                "subject": first.subject if first else None,
                "pr": first.pr if first else None,
                "guards_broken": list(first.guards_broken) if first else [],
                "state_at_to": history.state_at_to.value,
                "guards_broken_at_to": list(history.guards_broken_at_to),
                "monotonic": history.monotonic,
                "note": history.note or None,
                "carried_by": or_none(commit_json, history.carrier),
                "at_base": or_none(commit_json, history.at_base),
                "transitions": [commit_json(step) for step in history.transitions],
                "commits_checked": history.commits_checked,
                "named_by_patch": result.named.get(history.patch.id),
            }
        )
    return {
        "upstream": result.upstream.name,
        "ref": result.ref,
        "to": result.to,
        "pin": result.pin,
        "merge_base": result.base,
        "commits_on_path": result.commits_on_path,
        "patches": patches,
        "applying": result.applying,
        "notes": result.notes,
        "backports": {
            patch_id: {
                "pin": [landed_json(m) for m in result.backports_at_pin.get(patch_id, ())],
                "to": [landed_json(m) for m in marks],
            }
            for patch_id, marks in result.backports_at_to.items()
        },
    }


def found_line(history: PatchHistory, done: int, total: int) -> str:
    """One patch's answer as soon as bisect has it, with how far the run is: ``[3/20] fix-x: conflict from
    abc123def456 "subject"`` (the table at the end says it again, with the rest)."""
    first = history.first_commit or history.carrier
    where = f' from {first.commit[:12]} "{first.subject}"' if first else ""
    label = first.label if first is not None and first is history.first_commit else history.state.value
    note = f" ({history.note})" if not first and history.note else ""
    return f"[{done}/{total}] {history.patch.id}: {label}{where}{note}"


def render_bisect(console: Console, result: Bisection) -> None:
    name = result.upstream.name
    say(
        console,
        f"{name}: pin {result.pin[:12]} .. {result.ref} ({result.to[:12]}), merge base {result.base[:12]}, "
        f"{result.commits_on_path} first-parent commits",
    )
    for note in result.notes:
        say(console, f"  note: {note}", "yellow")
    for patch_id, marks in result.backports_at_to.items():
        at_pin = backport_lines(result.backports_at_pin.get(patch_id, ()), f"the pin {result.pin[:12]}")
        for line in at_pin + backport_lines(marks, result.ref):
            say(console, f"  {patch_id}: {line}", "dim")
    if not result.patches:
        say(console, f"every patch applies at {result.ref}: nothing to bisect", "green")
        return
    table = Table(title_justify="left")
    for column in ("patch", "state", "first commit", "PR", "subject", "checked"):
        table.add_column(column, overflow="fold")
    for history in result.patches:
        first = history.first_commit
        label, style = history.state.value, STATE_STYLE[history.state]
        if first is not None and first.guards_broken:
            label, style = first.label, "red"
        row(
            table,
            history.patch.id,
            Text(label, style=style),
            first.commit[:12] if first else "-",
            f"#{first.pr}" if first and first.pr else "",
            first.subject if first else "",
            str(history.commits_checked),
        )
    console.print(table)
    for history in result.patches:
        first = history.first_commit
        if first is not None and history.state_at_to is not history.state:
            say(console, f"  {history.patch.id}: {history.state_at_to.value} at {result.ref}")
        for broken in history.guards_broken_at_to:
            say(console, f"  {history.patch.id}: guard broken at {result.ref}: {broken}", "red")
        if history.note:
            say(console, f"  {history.patch.id}: {history.note}", "yellow")
        if history.patch.id in result.named:
            say(console, f"  {history.patch.id}: {result.named[history.patch.id]} there", "yellow")
    if result.applying:
        say(console, f"apply at {result.ref}: {', '.join(result.applying)}", "dim")
