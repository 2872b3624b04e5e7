"""``edit`` (the series as commits in a checkout at the pin) and ``edit --onto`` (moved onto a new ref, stopping
at a patch git cannot apply): what was done and what to do next, for people and as JSON."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console

from patchmgr.render.console import notes, say
from patchmgr.render.maintain.guards import print_broken_guards
from patchmgr.render.status import guard_json

if TYPE_CHECKING:
    from patchmgr.maintain.onto import OntoOutcome
    from patchmgr.maintain.roundtrip import EditOutcome


def render_edit(console: Console, outcome: EditOutcome) -> None:
    notes(console, outcome.notes)
    say(
        console,
        f"{outcome.into}: {outcome.upstream.name} at {outcome.pin[:12]} with {len(outcome.commits)} patch commits:",
    )
    for patch_id, commit in outcome.commits:
        say(console, f"  {commit[:12]} {patch_id}")
    say(
        console,
        f"commit your changes there (amend, rebase -i, add commits), then: patchmgr export --target "
        f"{outcome.target} --upstream {outcome.upstream.name} --from {outcome.into}",
        "dim",
    )


def edit_json(outcome: EditOutcome) -> dict:
    return {
        "target": outcome.target,
        "upstream": outcome.upstream.name,
        "into": str(outcome.into),
        "pin": outcome.pin,
        "patches": [{"id": pid, "commit": commit} for pid, commit in outcome.commits],
        "notes": outcome.notes,
    }


def render_onto(console: Console, outcome: OntoOutcome) -> None:
    notes(console, outcome.notes)
    into = outcome.into
    if outcome.action == "aborted":
        say(
            console,
            f"aborted the move to {outcome.ref}: {into} is back at the pin {outcome.pin[:12]} with the "
            f"series as it was ({len(outcome.applied)} patch commits)",
        )
        for branch in outcome.saved:
            say(
                console,
                f"the work done during the move (commits, staged and unstaged changes) kept on branch {branch}",
                "yellow",
            )
        return
    say(
        console,
        f"{into}: {outcome.upstream} moving from the pin {outcome.pin[:12]} onto {outcome.ref} ({outcome.commit[:12]})",
    )
    for carried in outcome.carried:
        say(console, f"  left out {carried.id}: {carried.describe()}", "cyan")
    for patch_id, commit in outcome.applied:
        say(console, f"  {commit[:12]} {patch_id}")
    for patch_id in outcome.skipped:
        say(console, f"  skipped  {patch_id}", "yellow")
    stop = outcome.stopped
    export = f"patchmgr export --target {outcome.target} --upstream {outcome.upstream} --from {into}"
    if stop is None:
        for patch_id, guards in outcome.guards.items():
            print_broken_guards(console, patch_id, guards, outcome.ref)
        if not outcome.guards_hold:
            broken = [pid for pid, guards in outcome.guards.items() if not all(g.holds for g in guards)]
            say(
                console,
                f"every patch is on {outcome.ref}, but {', '.join(broken)} no longer keeps its guard "
                f"there: change {'its commit' if len(broken) == 1 else 'their commits'} in {into} so "
                f"that the guard holds (git commit --amend, or git rebase -i {outcome.commit[:12]}), "
                f"then: {export}",
                "red",
            )
            return
        say(console, f"every patch is on {outcome.ref}; check the result there (tests, smoke), then: {export}", "green")
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
    say(console, f"stopped at patch {stop.number} of {stop.total}, {stop.id}: {what}.", "red")
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
