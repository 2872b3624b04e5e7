"""``refresh`` and ``bump`` (a refresh at the new ref that also moves the pin): lines and tables for people,
JSON documents for machines."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

from patchmgr.render.console import STATE_STYLE, notes, patches, row, say
from patchmgr.render.maintain.guards import print_broken_guards
from patchmgr.render.reports.rows import display_path
from patchmgr.render.status import guard_json

if TYPE_CHECKING:
    from patchmgr.maintain.bump import BumpOutcome
    from patchmgr.maintain.refresh import RefreshedPatch, RefreshPlan
    from patchmgr.model.patchfile import PatchFile


def render_interdiffs(console: Console, plan: RefreshPlan) -> None:
    """Old and new patch of each fuzz or 3-way rewrite, shown before anything is written."""
    for refreshed in plan.patches:
        if refreshed.interdiff:
            say(console, f"{refreshed.patch.id}: old and new patch ({refreshed.state.value}):")
            for line in refreshed.interdiff:
                style = "green" if line.startswith("+") else "red" if line.startswith("-") else None
                say(console, line.rstrip("\n"), style)


def render_refresh(console: Console, plan: RefreshPlan, dry_run: bool = False, summary: bool = True) -> None:
    if summary:  # render_bump prints them itself
        notes(console, plan.notes)
    table = Table(title=f"refresh {plan.upstream.name} at {plan.ref} ({plan.commit[:12]})", title_justify="left")
    for column in ("patch", "state", "action", "detail"):
        table.add_column(column, overflow="fold")
    styles = {"refreshed": "green", "unchanged": "green", "upstream": "cyan", "refused": "red"}
    for refreshed in plan.patches:
        row(
            table,
            refreshed.patch.id,
            Text(refreshed.label, style=STATE_STYLE[refreshed.state]),
            Text(refreshed.action, style=styles[refreshed.action]),
            refreshed.reason,
        )
    console.print(table)
    for refreshed in plan.patches:
        print_broken_guards(console, refreshed.patch.id, refreshed.guards, plan.ref)
    if not summary:
        return
    if not plan.ok:
        say(console, "refused: nothing was written", "red")
    elif dry_run:
        say(console, f"dry run: {patches(len(plan.changed))} would be rewritten; nothing was written")
    else:
        say(console, f"rewrote {patches(len(plan.written))}" + "".join(f"\n  {p}" for p in plan.written), "green")
    if plan.guards_broken:
        say(
            console,
            f"not done: {', '.join(p.patch.id for p in plan.guards_broken)} applies at {plan.ref} but "
            "breaks its guard (see above); change the patch so that it holds there (patchmgr edit --onto "
            f"{plan.ref}, then export)",
            "red",
        )


def render_bump(console: Console, outcome: BumpOutcome) -> None:
    plan = outcome.plan
    name = plan.upstream.name
    notes(console, plan.notes)
    if outcome.action == "refused":
        render_refresh(console, plan, summary=False)
        for blocker in outcome.blockers:
            needs = "".join(f", {needed.text}" for needed in blocker.needs)  # the blame where it is due
            say(console, f"blocks the bump: {blocker.patch.id} is {blocker.state.value} at {plan.ref}{needs}", "red")
        for blocker in outcome.guard_blockers:
            say(
                console,
                f"blocks the bump: a guard of {blocker.patch.id} is broken at {plan.ref} (see above); "
                "change the patch so that it holds there (patchmgr edit --onto, below, then export)",
                "red",
            )
        for unproven in outcome.review:
            say(
                console,
                f"needs review: {unproven.patch.id} looks upstream at {plan.ref} (its reverse applies "
                "where the patch puts it), but no upstream commit has its patch-id, so bump does not "
                f"drop it on that alone. Check that upstream really carries the change; then remove "
                f"{unproven.patch.id} from the series in {outcome.target.path} and delete "
                f"{unproven.patch.path}, or keep it with bump --keep; then bump again",
                "red",
            )
        say(console, f"refused: {name} stays at {plan.upstream.commit[:12]}", "red")
        if outcome.blockers or outcome.guard_blockers or not plan.ok:
            say(
                console,
                f"resolve them in a checkout at {plan.ref}: patchmgr edit --target {outcome.target.name} "
                f"--upstream {name} --into DIR --onto {plan.ref}, then patchmgr export --target "
                f"{outcome.target.name} --upstream {name} --from DIR (it moves the pin)",
                "dim",
            )
        return
    if outcome.action == "up-to-date":
        say(console, f"{name} is already pinned at {plan.commit[:12]} ({plan.ref})")
        return
    planned = outcome.action == "planned"
    for refreshed in plan.changed:
        copy = plan.copies.get(refreshed.patch.id)
        said = f"{'would refresh' if planned else 'refreshed'} {refreshed.patch.id} ({refreshed.state.value})"
        say(console, said + (f" as its own copy {copy}" if copy else ""))
    for dropped in outcome.dropped:
        say(console, f"{'would drop' if planned else 'dropped'} {dropped.patch.id}: {dropped.reason}", "cyan")
        if dropped.patch.id in outcome.shared:
            say(
                console,
                f"  its file stays: target {', '.join(outcome.shared[dropped.patch.id])} lists it too",
                "yellow",
            )
        else:  # the patch file and its smoke tests leave together, each named
            say(console, f"  {'would remove' if planned else 'removed'} {_leaving(outcome, dropped.patch)}")
    for kept in outcome.kept:
        say(console, f"kept {kept.patch.id} (--keep), although {kept.reason}", "yellow")
    version = (
        f", version {outcome.old_version} -> {outcome.new_version}"
        if outcome.new_version and outcome.new_version != outcome.old_version
        else ""
    )
    if planned:
        say(
            console,
            f"dry run: would bump {name}: {plan.upstream.commit[:12]} -> {plan.commit[:12]} ({plan.ref})"
            f"{version}; nothing was written",
        )
        return
    also = plan.movers.targets[1:] if plan.movers else ()
    say(
        console,
        f"bumped {name}: {plan.upstream.commit[:12]} -> {plan.commit[:12]} ({plan.ref}){version} "
        f"in {', '.join(str(t.path) for t in (outcome.target, *also))}",
        "green",
    )


def _leaving(outcome: BumpOutcome, patch: PatchFile) -> str:
    """A dropped patch's file and its smoke test files, as the project names them (from its root)."""
    tests = outcome.tests_removed.get(patch.id, ())
    said = _shown(outcome, patch.path)
    if tests:
        said += f" and its smoke test{'s' if len(tests) > 1 else ''} {', '.join(_shown(outcome, t) for t in tests)}"
    return said


def _shown(outcome: BumpOutcome, path: Path) -> str:
    root = outcome.plan.root
    return display_path(path, root) if root is not None else path.as_posix()


def refreshed_json(refreshed: RefreshedPatch) -> dict:
    return {
        "id": refreshed.patch.id,
        "state": refreshed.state.value,
        "changed_since": refreshed.changed_since,
        "action": refreshed.action,
        "reason": refreshed.reason,
        "carrier": refreshed.carrier,
        "needs": [needed.patch_id for needed in refreshed.needs],
        "shared_with": refreshed.shared_with,
        "interdiff": refreshed.interdiff,
        "guards": [guard_json(g) for g in refreshed.guards],
    }


def refresh_json(plan: RefreshPlan, dry_run: bool = False) -> dict:
    action = "refused" if not plan.ok else "dry-run" if dry_run else "refreshed"
    return {
        "upstream": plan.upstream.name,
        "ref": plan.ref,
        "commit": plan.commit,
        "ok": plan.ok and not plan.guards_broken,
        "action": action,
        "guards_broken": [p.patch.id for p in plan.guards_broken],
        "patches": [refreshed_json(p) for p in plan.patches],
        "written": [str(p) for p in plan.written],
        "copies": plan.copies,
        "also": list(plan.movers.also) if plan.movers else [],
        "notes": plan.notes,
    }


def bump_json(outcome: BumpOutcome) -> dict:
    plan = outcome.plan
    return {
        "target": outcome.target.name,
        "upstream": plan.upstream.name,
        "ref": plan.ref,
        "ok": outcome.ok,
        "action": outcome.action,
        "pin": plan.upstream.commit,
        "commit": plan.commit,
        "old_version": outcome.old_version,
        "new_version": outcome.new_version,
        "patches": [refreshed_json(p) for p in plan.patches],
        "dropped": [p.patch.id for p in outcome.dropped],
        "kept": [p.patch.id for p in outcome.kept],
        "review": [p.patch.id for p in outcome.review],
        "blockers": [p.patch.id for p in outcome.blockers],
        "guards_broken": [p.patch.id for p in outcome.guard_blockers],
        "shared": outcome.shared,
        # each dropped patch whose file left, with its smoke test files that left with it
        "tests_removed": {pid: [_shown(outcome, t) for t in tests] for pid, tests in outcome.tests_removed.items()},
        "written": [str(p) for p in outcome.writes] if outcome.action == "bumped" else [],
        "copies": plan.copies,
        "also": list(plan.movers.also) if plan.movers else [],
        "notes": plan.notes,
    }
