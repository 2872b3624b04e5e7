"""bisect, refresh, bump, edit and export: tables and lines for people, JSON documents for machines."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

from patchmgr.render.console import STATE_STYLE, notes, patches, row

if TYPE_CHECKING:
    from patchmgr.history.bisect import Bisection
    from patchmgr.history.walk import Step
    from patchmgr.maintain.bump import BumpOutcome
    from patchmgr.maintain.refresh import RefreshPlan
    from patchmgr.maintain.roundtrip import EditOutcome, ExportOutcome


def _step_json(step: Step | None) -> dict | None:
    if step is None:
        return None
    return {"commit": step.commit, "state": step.state.value, "subject": step.subject, "pr": step.pr}


def bisect_json(result: Bisection) -> dict:
    patches = []
    for history in result.patches:
        first = history.first_commit
        patches.append({
            "id": history.patch.id,
            "state": history.state.value,
            "first_commit": first.commit if first else None,
            "subject": first.subject if first else None,
            "pr": first.pr if first else None,
            "state_at_to": history.state_at_to.value,
            "monotonic": history.monotonic,
            "note": history.note or None,
            "carried_by": _step_json(history.carrier),
            "at_base": _step_json(history.at_base),
            "transitions": [_step_json(step) for step in history.transitions],
            "commits_checked": history.commits_checked,
        })
    return {"upstream": result.upstream.name, "ref": result.ref, "to": result.to, "pin": result.pin,
                       "merge_base": result.base, "commits_on_path": result.commits_on_path,
                       "patches": patches, "applying": result.applying, "notes": result.notes}


def render_bisect(console: Console, result: Bisection) -> None:
    name = result.upstream.name
    console.print(f"{name}: pin {result.pin[:12]} .. {result.ref} ({result.to[:12]}), merge base {result.base[:12]}, "
                  f"{result.commits_on_path} first-parent commits", highlight=False)
    for note in result.notes:
        console.print(f"  note: {note}", style="yellow", highlight=False, markup=False)
    if not result.patches:
        console.print(f"every patch applies at {result.ref}: nothing to bisect", style="green", highlight=False)
        return
    table = Table(title_justify="left")
    for column in ("patch", "state", "first commit", "PR", "subject", "checked"):
        table.add_column(column, overflow="fold")
    for history in result.patches:
        first = history.first_commit
        row(table, history.patch.id, Text(history.state.value, style=STATE_STYLE[history.state]),
                      first.commit[:12] if first else "-", f"#{first.pr}" if first and first.pr else "",
                      first.subject if first else "", str(history.commits_checked))
    console.print(table)
    for history in result.patches:
        first = history.first_commit
        if first is not None and history.state_at_to is not history.state:
            console.print(f"  {history.patch.id}: {history.state_at_to.value} at {result.ref}", highlight=False)
        if history.note:
            console.print(f"  {history.patch.id}: {history.note}", style="yellow", highlight=False, markup=False)
    if result.applying:
        console.print(f"apply at {result.ref}: {', '.join(result.applying)}", style="dim", highlight=False)


def render_interdiffs(console: Console, plan: RefreshPlan) -> None:
    """Old and new patch of each fuzz or 3-way rewrite, shown before anything is written."""
    for refreshed in plan.patches:
        if refreshed.interdiff:
            console.print(f"{refreshed.patch.id}: old and new patch ({refreshed.state.value}):", highlight=False)
            for line in refreshed.interdiff:
                style = "green" if line.startswith("+") else "red" if line.startswith("-") else None
                console.print(line.rstrip("\n"), style=style, highlight=False, markup=False)


def render_refresh(console: Console, plan: RefreshPlan, dry_run: bool = False, summary: bool = True) -> None:
    if summary:  # render_bump prints them itself
        notes(console, plan.notes)
    table = Table(title=f"refresh {plan.upstream.name} at {plan.ref} ({plan.commit[:12]})", title_justify="left")
    for column in ("patch", "state", "action", "detail"):
        table.add_column(column, overflow="fold")
    styles = {"refreshed": "green", "unchanged": "green", "upstream": "cyan", "refused": "red"}
    for refreshed in plan.patches:
        row(table, refreshed.patch.id, Text(refreshed.state.value, style=STATE_STYLE[refreshed.state]),
                      Text(refreshed.action, style=styles[refreshed.action]), refreshed.reason)
    console.print(table)
    for refreshed in plan.changed:
        if refreshed.shared_with:
            console.print(f"note: {refreshed.patch.id} is also listed by target {', '.join(refreshed.shared_with)}: "
                          "check it there with patchmgr status", style="yellow", highlight=False, markup=False)
    if not summary:
        return
    if not plan.ok:
        console.print("refused: nothing was written", style="red", highlight=False)
    elif dry_run:
        console.print(f"dry run: {patches(len(plan.changed))} would be rewritten; nothing was written",
                      highlight=False)
    else:
        console.print(f"rewrote {patches(len(plan.written))}" + "".join(f"\n  {p}" for p in plan.written),
                      style="green", highlight=False)


def render_bump(console: Console, outcome: BumpOutcome) -> None:
    plan = outcome.plan
    name = plan.upstream.name
    notes(console, plan.notes)
    if outcome.action == "refused":
        render_refresh(console, plan, summary=False)
        for blocker in outcome.blockers:
            console.print(f"blocks the bump: {blocker.patch.id} is {blocker.state.value} at {plan.ref}",
                          style="red", highlight=False, markup=False)
        for unproven in outcome.review:
            console.print(f"needs review: {unproven.patch.id} looks upstream at {plan.ref} (its reverse applies "
                          "where the patch puts it), but no upstream commit has its patch-id, so bump does not "
                          f"drop it on that alone. Check that upstream really carries the change; then remove "
                          f"{unproven.patch.id} from the series in {outcome.target.path} and delete "
                          f"{unproven.patch.path}, or keep it with bump --keep; then bump again",
                          style="red", highlight=False, markup=False)
        console.print(f"refused: {name} stays at {plan.upstream.commit[:12]}", style="red", highlight=False)
        return
    if outcome.action == "up-to-date":
        console.print(f"{name} is already pinned at {plan.commit[:12]} ({plan.ref})", highlight=False)
        return
    planned = outcome.action == "planned"
    for refreshed in plan.changed:
        console.print(f"{'would refresh' if planned else 'refreshed'} {refreshed.patch.id} "
                      f"({refreshed.state.value})", highlight=False)
    for dropped in outcome.dropped:
        console.print(f"{'would drop' if planned else 'dropped'} {dropped.patch.id}: {dropped.reason}", style="cyan",
                      highlight=False, markup=False)
        if dropped.patch.id in outcome.shared:
            console.print(f"  its file stays: target {', '.join(outcome.shared[dropped.patch.id])} lists it too",
                          style="yellow", highlight=False, markup=False)
    for kept in outcome.kept:
        console.print(f"kept {kept.patch.id} (--keep), although {kept.reason}", style="yellow", highlight=False,
                      markup=False)
    version = (f", version {outcome.old_version} -> {outcome.new_version}"
               if outcome.new_version and outcome.new_version != outcome.old_version else "")
    if planned:
        console.print(f"dry run: would bump {name}: {plan.upstream.commit[:12]} -> {plan.commit[:12]} ({plan.ref})"
                      f"{version}; nothing was written", highlight=False)
        return
    console.print(f"bumped {name}: {plan.upstream.commit[:12]} -> {plan.commit[:12]} ({plan.ref}){version} "
                  f"in {outcome.target.path}", style="green", highlight=False)


def render_edit(console: Console, outcome: EditOutcome) -> None:
    notes(console, outcome.notes)
    console.print(f"{outcome.into}: {outcome.upstream.name} at {outcome.pin[:12]} with {len(outcome.commits)} "
                  "patch commits:", highlight=False)
    for patch_id, commit in outcome.commits:
        console.print(f"  {commit[:12]} {patch_id}", highlight=False)
    console.print(f"commit your changes there (amend, rebase -i, add commits), then: patchmgr export --target "
                  f"{outcome.target} --upstream {outcome.upstream.name} --from {outcome.into}",
                  style="dim", highlight=False)


def render_export(console: Console, outcome: ExportOutcome) -> None:
    notes(console, outcome.notes)
    for patch in outcome.patches:
        style = "green" if patch.action != "unchanged" else "dim"
        console.print(f"{patch.action:9} {patch.id} ({patch.commit[:12]})", style=style, highlight=False)
    for patch_id in outcome.removed:
        kept = (f" (its file stays: target {', '.join(outcome.shared[patch_id])} lists it)"
                if patch_id in outcome.shared else "")
        console.print(f"removed   {patch_id}: no commit carries it any more{kept}", style="yellow", highlight=False,
                      markup=False)
    if not outcome.changed:
        console.print(f"{outcome.upstream.name}: no patch changed", highlight=False)
    elif outcome.series_changed:
        console.print(f"{outcome.upstream.name}: series is now {', '.join(p.id for p in outcome.patches)}",
                      highlight=False)


def _refreshed_json(refreshed) -> dict:
    return {"id": refreshed.patch.id, "state": refreshed.state.value, "action": refreshed.action,
            "reason": refreshed.reason, "carrier": refreshed.carrier, "shared_with": refreshed.shared_with,
            "interdiff": refreshed.interdiff}


def refresh_json(plan: RefreshPlan, dry_run: bool = False) -> dict:
    action = "refused" if not plan.ok else "dry-run" if dry_run else "refreshed"
    return {"upstream": plan.upstream.name, "ref": plan.ref, "commit": plan.commit, "ok": plan.ok, "action": action,
            "patches": [_refreshed_json(p) for p in plan.patches], "written": [str(p) for p in plan.written],
            "notes": plan.notes}


def bump_json(outcome: BumpOutcome) -> dict:
    plan = outcome.plan
    return {"target": outcome.target.name, "upstream": plan.upstream.name, "ref": plan.ref, "ok": outcome.ok,
            "action": outcome.action, "pin": plan.upstream.commit, "commit": plan.commit,
            "old_version": outcome.old_version, "new_version": outcome.new_version,
            "patches": [_refreshed_json(p) for p in plan.patches],
            "dropped": [p.patch.id for p in outcome.dropped], "kept": [p.patch.id for p in outcome.kept],
            "review": [p.patch.id for p in outcome.review], "blockers": [p.patch.id for p in outcome.blockers],
            "shared": outcome.shared, "written": [str(p) for p in outcome.writes] if outcome.action == "bumped" else [],
            "notes": plan.notes}


def edit_json(outcome: EditOutcome) -> dict:
    return {"target": outcome.target, "upstream": outcome.upstream.name, "into": str(outcome.into),
            "pin": outcome.pin, "patches": [{"id": pid, "commit": commit} for pid, commit in outcome.commits],
            "notes": outcome.notes}


def export_json(outcome: ExportOutcome) -> dict:
    return {"upstream": outcome.upstream.name, "from": str(outcome.source), "changed": outcome.changed,
            "series_changed": outcome.series_changed,
            "patches": [{"id": p.id, "commit": p.commit, "action": p.action, "path": str(p.path)}
                        for p in outcome.patches],
            "removed": outcome.removed, "shared": outcome.shared, "notes": outcome.notes}
