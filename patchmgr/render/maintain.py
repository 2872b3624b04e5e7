"""bisect, refresh, bump, edit and export: tables and lines for people, JSON documents for machines."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

from patchmgr.render.console import STATE_STYLE, notes, patches, row
from patchmgr.render.status import guard_json

if TYPE_CHECKING:
    from patchmgr.engine.results import GuardResult
    from patchmgr.history.bisect import Bisection
    from patchmgr.history.walk import Step
    from patchmgr.maintain.bump import BumpOutcome
    from patchmgr.maintain.onto import OntoOutcome
    from patchmgr.maintain.rangediff import RangeDiff
    from patchmgr.maintain.refresh import RefreshedPatch, RefreshPlan
    from patchmgr.maintain.roundtrip import EditOutcome, ExportOutcome


def _step_json(step: Step | None) -> dict | None:
    if step is None:
        return None
    return {
        "commit": step.commit,
        "state": step.state.value,
        "subject": step.subject,
        "pr": step.pr,
        "guards_broken": list(step.guards_broken),
    }


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
                "carried_by": _step_json(history.carrier),
                "at_base": _step_json(history.at_base),
                "transitions": [_step_json(step) for step in history.transitions],
                "commits_checked": history.commits_checked,
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
    }


def render_bisect(console: Console, result: Bisection) -> None:
    name = result.upstream.name
    console.print(
        f"{name}: pin {result.pin[:12]} .. {result.ref} ({result.to[:12]}), merge base {result.base[:12]}, "
        f"{result.commits_on_path} first-parent commits",
        highlight=False,
    )
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
            console.print(f"  {history.patch.id}: {history.state_at_to.value} at {result.ref}", highlight=False)
        for broken in history.guards_broken_at_to:
            console.print(
                f"  {history.patch.id}: guard broken at {result.ref}: {broken}",
                style="red",
                highlight=False,
                markup=False,
            )
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
        row(
            table,
            refreshed.patch.id,
            Text(refreshed.state.value, style=STATE_STYLE[refreshed.state]),
            Text(refreshed.action, style=styles[refreshed.action]),
            refreshed.reason,
        )
    console.print(table)
    for refreshed in plan.patches:
        _guard_lines(console, refreshed.patch.id, refreshed.guards, plan.ref)
    for refreshed in plan.changed:
        if refreshed.shared_with:
            console.print(
                f"note: {refreshed.patch.id} is also listed by target {', '.join(refreshed.shared_with)}: "
                "check it there with patchmgr status",
                style="yellow",
                highlight=False,
                markup=False,
            )
    if not summary:
        return
    if not plan.ok:
        console.print("refused: nothing was written", style="red", highlight=False)
    elif dry_run:
        console.print(f"dry run: {patches(len(plan.changed))} would be rewritten; nothing was written", highlight=False)
    else:
        console.print(
            f"rewrote {patches(len(plan.written))}" + "".join(f"\n  {p}" for p in plan.written),
            style="green",
            highlight=False,
        )
    if plan.guards_broken:
        console.print(
            f"not done: {', '.join(p.patch.id for p in plan.guards_broken)} applies at {plan.ref} but "
            "breaks its guard (see above); change the patch so that it holds there (patchmgr edit --onto "
            f"{plan.ref}, then export)",
            style="red",
            highlight=False,
            markup=False,
        )


def _guard_lines(console: Console, patch_id: str, guards: Iterable[GuardResult], ref: str) -> None:
    """Each broken guard of a patch at ``ref``, and each offending ``file:line``."""
    for guard in guards:
        if guard.holds:
            continue
        console.print(f"{patch_id}: guard broken at {ref}: {guard.guard}", style="red", highlight=False, markup=False)
        for offense in (*guard.offense_lines, *([guard.error] if guard.error else [])):
            console.print(f"  {offense}", style="red", highlight=False, markup=False)


def render_bump(console: Console, outcome: BumpOutcome) -> None:
    plan = outcome.plan
    name = plan.upstream.name
    notes(console, plan.notes)
    if outcome.action == "refused":
        render_refresh(console, plan, summary=False)
        for blocker in outcome.blockers:
            console.print(
                f"blocks the bump: {blocker.patch.id} is {blocker.state.value} at {plan.ref}",
                style="red",
                highlight=False,
                markup=False,
            )
        for blocker in outcome.guard_blockers:
            console.print(
                f"blocks the bump: a guard of {blocker.patch.id} is broken at {plan.ref} (see above); "
                "change the patch so that it holds there (patchmgr edit --onto, below, then export)",
                style="red",
                highlight=False,
                markup=False,
            )
        for unproven in outcome.review:
            console.print(
                f"needs review: {unproven.patch.id} looks upstream at {plan.ref} (its reverse applies "
                "where the patch puts it), but no upstream commit has its patch-id, so bump does not "
                f"drop it on that alone. Check that upstream really carries the change; then remove "
                f"{unproven.patch.id} from the series in {outcome.target.path} and delete "
                f"{unproven.patch.path}, or keep it with bump --keep; then bump again",
                style="red",
                highlight=False,
                markup=False,
            )
        console.print(f"refused: {name} stays at {plan.upstream.commit[:12]}", style="red", highlight=False)
        if outcome.blockers or outcome.guard_blockers or not plan.ok:
            console.print(
                f"resolve them in a checkout at {plan.ref}: patchmgr edit --target {outcome.target.name} "
                f"--upstream {name} --into DIR --onto {plan.ref}, then patchmgr export --target "
                f"{outcome.target.name} --upstream {name} --from DIR (it moves the pin)",
                style="dim",
                highlight=False,
                markup=False,
            )
        return
    if outcome.action == "up-to-date":
        console.print(f"{name} is already pinned at {plan.commit[:12]} ({plan.ref})", highlight=False)
        return
    planned = outcome.action == "planned"
    for refreshed in plan.changed:
        console.print(
            f"{'would refresh' if planned else 'refreshed'} {refreshed.patch.id} ({refreshed.state.value})",
            highlight=False,
        )
        if refreshed.shared_with:
            console.print(
                f"  note: {refreshed.patch.id} is also listed by target {', '.join(refreshed.shared_with)}"
                ": check it there with patchmgr status",
                style="yellow",
                highlight=False,
                markup=False,
            )
    for dropped in outcome.dropped:
        console.print(
            f"{'would drop' if planned else 'dropped'} {dropped.patch.id}: {dropped.reason}",
            style="cyan",
            highlight=False,
            markup=False,
        )
        if dropped.patch.id in outcome.shared:
            console.print(
                f"  its file stays: target {', '.join(outcome.shared[dropped.patch.id])} lists it too",
                style="yellow",
                highlight=False,
                markup=False,
            )
    for kept in outcome.kept:
        console.print(
            f"kept {kept.patch.id} (--keep), although {kept.reason}", style="yellow", highlight=False, markup=False
        )
    version = (
        f", version {outcome.old_version} -> {outcome.new_version}"
        if outcome.new_version and outcome.new_version != outcome.old_version
        else ""
    )
    if planned:
        console.print(
            f"dry run: would bump {name}: {plan.upstream.commit[:12]} -> {plan.commit[:12]} ({plan.ref})"
            f"{version}; nothing was written",
            highlight=False,
        )
        return
    console.print(
        f"bumped {name}: {plan.upstream.commit[:12]} -> {plan.commit[:12]} ({plan.ref}){version} "
        f"in {outcome.target.path}",
        style="green",
        highlight=False,
    )


def render_edit(console: Console, outcome: EditOutcome) -> None:
    notes(console, outcome.notes)
    console.print(
        f"{outcome.into}: {outcome.upstream.name} at {outcome.pin[:12]} with {len(outcome.commits)} patch commits:",
        highlight=False,
    )
    for patch_id, commit in outcome.commits:
        console.print(f"  {commit[:12]} {patch_id}", highlight=False)
    console.print(
        f"commit your changes there (amend, rebase -i, add commits), then: patchmgr export --target "
        f"{outcome.target} --upstream {outcome.upstream.name} --from {outcome.into}",
        style="dim",
        highlight=False,
    )


def render_export(console: Console, outcome: ExportOutcome) -> None:
    notes(console, outcome.notes)
    for patch_id, guards in outcome.guards.items():
        _guard_lines(console, patch_id, guards, "the exported tree")
    if not outcome.guards_hold:
        console.print(
            "written, but a guard is broken (see above): change the patch in the checkout so that it "
            "holds, then export again",
            style="red",
            highlight=False,
            markup=False,
        )
    for patch in outcome.patches:
        style = "green" if patch.action != "unchanged" else "dim"
        console.print(f"{patch.action:9} {patch.id} ({patch.commit[:12]})", style=style, highlight=False)
    for patch_id in outcome.removed:
        kept = (
            f" (its file stays: target {', '.join(outcome.shared[patch_id])} lists it)"
            if patch_id in outcome.shared
            else ""
        )
        if patch_id in outcome.dropped:
            console.print(
                f"dropped   {patch_id}: {outcome.dropped[patch_id]}{kept}", style="cyan", highlight=False, markup=False
            )
            continue
        console.print(
            f"removed   {patch_id}: no commit carries it any more{kept}", style="yellow", highlight=False, markup=False
        )
    if not outcome.changed:
        console.print(f"{outcome.upstream.name}: no patch changed", highlight=False)
    elif outcome.series_changed:
        console.print(
            f"{outcome.upstream.name}: series is now {', '.join(p.id for p in outcome.patches)}", highlight=False
        )
    if outcome.moved:
        old, new, ref = outcome.moved
        version = (
            f", version {outcome.old_version} -> {outcome.new_version}"
            if outcome.new_version and outcome.new_version != outcome.old_version
            else ""
        )
        console.print(
            f"moved the pin of {outcome.upstream.name}: {old[:12]} -> {new[:12]} ({ref}){version}",
            style="green",
            highlight=False,
            markup=False,
        )
    if outcome.range_diff is not None:
        render_range_diff(console, outcome.range_diff)


def render_range_diff(console: Console, diff: RangeDiff) -> None:
    """git range-diff of the old series against the new: = same, ! changed (its diff follows), < gone, > new."""
    old_base, old_tip = diff.old.split("..", 1)
    new_base, new_tip = diff.new.split("..", 1)
    console.print(
        f"range-diff of the old series ({old_base[:12]}..{old_tip[:12]}) against the new "
        f"({new_base[:12]}..{new_tip[:12]}); = same, ! changed, < left the series, > new:",
        highlight=False,
        markup=False,
    )
    for line in diff.text.rstrip("\n").split("\n"):  # git's lines: a subject's CR is shown, not a line break
        console.print("  " + line, highlight=False, markup=False, soft_wrap=True)


def render_onto(console: Console, outcome: OntoOutcome) -> None:
    notes(console, outcome.notes)
    into = outcome.into
    if outcome.action == "aborted":
        console.print(
            f"aborted the move to {outcome.ref}: {into} is back at the pin {outcome.pin[:12]} with the "
            f"series as it was ({len(outcome.applied)} patch commits)",
            highlight=False,
            markup=False,
        )
        for branch in outcome.saved:
            console.print(
                f"the work done during the move (commits, staged and unstaged changes) kept on branch {branch}",
                style="yellow",
                highlight=False,
                markup=False,
            )
        return
    console.print(
        f"{into}: {outcome.upstream} moving from the pin {outcome.pin[:12]} onto {outcome.ref} ({outcome.commit[:12]})",
        highlight=False,
        markup=False,
    )
    for carried in outcome.carried:
        console.print(f"  left out {carried.id}: {carried.describe()}", style="cyan", highlight=False, markup=False)
    for patch_id, commit in outcome.applied:
        console.print(f"  {commit[:12]} {patch_id}", highlight=False, markup=False)
    for patch_id in outcome.skipped:
        console.print(f"  skipped  {patch_id}", style="yellow", highlight=False, markup=False)
    stop = outcome.stopped
    export = f"patchmgr export --target {outcome.target} --upstream {outcome.upstream} --from {into}"
    if stop is None:
        for patch_id, guards in outcome.guards.items():
            _guard_lines(console, patch_id, guards, outcome.ref)
        if not outcome.guards_hold:
            broken = [pid for pid, guards in outcome.guards.items() if not all(g.holds for g in guards)]
            console.print(
                f"every patch is on {outcome.ref}, but {', '.join(broken)} no longer keeps its guard "
                f"there: change {'its commit' if len(broken) == 1 else 'their commits'} in {into} so "
                f"that the guard holds (git commit --amend, or git rebase -i {outcome.commit[:12]}), "
                f"then: {export}",
                style="red",
                highlight=False,
                markup=False,
            )
            return
        console.print(
            f"every patch is on {outcome.ref}; check the result there (tests, smoke), then: {export}",
            style="green",
            highlight=False,
            markup=False,
        )
        return
    if stop.reason:
        what = stop.reason
        fix = (
            f"make its change by hand in {into} and commit it (git commit), or leave it out with: patchmgr edit "
            f"--skip --into {into}"
        )
    elif stop.conflicts:
        what = f"git could not merge it: conflict markers (<<<<<<< ======= >>>>>>>) are in {', '.join(stop.conflicts)}"
        fix = (
            f"edit {'that file' if len(stop.conflicts) == 1 else 'those files'} in {into} to the patch's intent "
            f"at {outcome.ref}, then: git -C {into} add {' '.join(stop.conflicts)}"
        )
    else:
        what = "git could neither apply it nor merge it (no conflict markers were written)"
        fix = (
            f"make its change by hand in {into} (the patch is {stop.mail}; try git -C {into} apply --reject "
            f"{stop.mail}), then git add the files"
        )
    console.print(
        f"stopped at patch {stop.number} of {stop.total}, {stop.id}: {what}.",
        style="red",
        highlight=False,
        markup=False,
    )
    console.print(
        f"next: {fix}; then: patchmgr edit --continue --into {into}\n"
        f"  or leave the patch out of the series: patchmgr edit --skip --into {into}\n"
        f"  or give up the move: patchmgr edit --abort --into {into}\n"
        f"  (git am --continue in {into} works too: run patchmgr edit --continue --into {into} after it "
        "to apply the rest; a git am --skip or --abort by hand leaves no patch out: say --skip to "
        "patchmgr)",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )


def _refreshed_json(refreshed: RefreshedPatch) -> dict:
    return {
        "id": refreshed.patch.id,
        "state": refreshed.state.value,
        "action": refreshed.action,
        "reason": refreshed.reason,
        "carrier": refreshed.carrier,
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
        "patches": [_refreshed_json(p) for p in plan.patches],
        "written": [str(p) for p in plan.written],
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
        "patches": [_refreshed_json(p) for p in plan.patches],
        "dropped": [p.patch.id for p in outcome.dropped],
        "kept": [p.patch.id for p in outcome.kept],
        "review": [p.patch.id for p in outcome.review],
        "blockers": [p.patch.id for p in outcome.blockers],
        "guards_broken": [p.patch.id for p in outcome.guard_blockers],
        "shared": outcome.shared,
        "written": [str(p) for p in outcome.writes] if outcome.action == "bumped" else [],
        "notes": plan.notes,
    }


def edit_json(outcome: EditOutcome) -> dict:
    return {
        "target": outcome.target,
        "upstream": outcome.upstream.name,
        "into": str(outcome.into),
        "pin": outcome.pin,
        "patches": [{"id": pid, "commit": commit} for pid, commit in outcome.commits],
        "notes": outcome.notes,
    }


def export_json(outcome: ExportOutcome) -> dict:
    return {
        "upstream": outcome.upstream.name,
        "from": str(outcome.source),
        "changed": outcome.changed,
        "series_changed": outcome.series_changed,
        "patches": [{"id": p.id, "commit": p.commit, "action": p.action, "path": str(p.path)} for p in outcome.patches],
        "removed": outcome.removed,
        "shared": outcome.shared,
        "dropped": [
            {"id": pid, "reason": why, "carrier": outcome.carriers.get(pid)} for pid, why in outcome.dropped.items()
        ],
        "pin": (
            {
                "from": outcome.moved[0],
                "to": outcome.moved[1],
                "ref": outcome.moved[2],
                "old_version": outcome.old_version,
                "new_version": outcome.new_version,
            }
            if outcome.moved
            else None
        ),
        "range_diff": _range_diff_json(outcome.range_diff),
        "notes": outcome.notes,
        "guards": {pid: [guard_json(g) for g in guards] for pid, guards in outcome.guards.items()},
    }


def _range_diff_json(diff: RangeDiff | None) -> dict | None:
    if diff is None:
        return None
    return {
        "old": diff.old,
        "new": diff.new,
        "text": diff.text,
        "pairs": [
            {
                "old": p.old,
                "old_commit": p.old_commit,
                "status": p.status,
                "new": p.new,
                "new_commit": p.new_commit,
                "subject": p.subject,
            }
            for p in diff.pairs
        ],
    }


def onto_json(outcome: OntoOutcome) -> dict:
    stop = outcome.stopped
    return {
        "target": outcome.target,
        "upstream": outcome.upstream,
        "into": str(outcome.into),
        "action": outcome.action,
        "ref": outcome.ref,
        "commit": outcome.commit,
        "pin": outcome.pin,
        "finished": outcome.finished,
        "patches": [{"id": pid, "commit": commit} for pid, commit in outcome.applied],
        "carried": [{"id": c.id, "commit": c.commit, "subject": c.subject} for c in outcome.carried],
        "skipped": outcome.skipped,
        "saved": outcome.saved,
        "guards": {pid: [guard_json(g) for g in guards] for pid, guards in outcome.guards.items()},
        "stopped": None
        if stop is None
        else {
            "id": stop.id,
            "number": stop.number,
            "total": stop.total,
            "conflicts": stop.conflicts,
            "patch": str(stop.mail),
            "reason": stop.reason,
        },
        "next": None
        if stop is None
        else [
            f"patchmgr edit --continue --into {outcome.into}",
            f"patchmgr edit --skip --into {outcome.into}",
            f"patchmgr edit --abort --into {outcome.into}",
        ],
        "notes": outcome.notes,
    }
