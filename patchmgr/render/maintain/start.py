"""``init`` and ``add``: the files a new project or a new patch got, and what to do next, for people and as JSON."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console

from patchmgr.render.console import notes, say
from patchmgr.render.fields import fields_json

if TYPE_CHECKING:
    from patchmgr.maintain.add_patch import AddOutcome
    from patchmgr.maintain.start import StartOutcome


def render_start(console: Console, outcome: StartOutcome) -> None:
    notes(console, outcome.notes)
    for path in outcome.written:
        say(console, f"wrote     {path.relative_to(outcome.root)}", "green")
    for path in outcome.kept:
        say(console, f"kept      {path.relative_to(outcome.root)} (already so)", "dim")
    version = f", version {outcome.version}" if outcome.version else ""
    say(
        console,
        f"target {outcome.target}: {outcome.upstream} pinned at {outcome.commit} ({outcome.ref}{version}), "
        f"from {outcome.source}",
    )
    say(
        console,
        f"next: make a change on the pin (patchmgr edit --target {outcome.target} --upstream {outcome.upstream} "
        f"--into DIR, commit there), then patchmgr add ID --target {outcome.target} --upstream {outcome.upstream} "
        "--from-edit DIR",
    )


def start_json(outcome: StartOutcome) -> dict:
    return fields_json(outcome, "root")


def render_add(console: Console, outcome: AddOutcome) -> None:
    notes(console, outcome.notes)
    say(console, f"added     {outcome.patch_id}: {outcome.path} (clean at the pin {outcome.pin[:12]})", "green")
    say(console, f"series of {outcome.upstream} in {outcome.target}: {', '.join(outcome.series)}")
    if outcome.stub:
        say(
            console,
            f"wrote     {outcome.smoke_test}: a stub that fails until you write the test (lint names it until then)",
            "yellow",
        )
    else:
        say(console, f"smoke test: {outcome.smoke_test}")


def render_skipped(console: Console, note: str) -> None:
    """``add`` of empty commits only: the note, and that nothing was added."""
    notes(console, [f"{note}; nothing was added"])


def skipped_json(note: str) -> dict:
    return {"added": None, "notes": [f"{note}; nothing was added"]}


def add_json(outcome: AddOutcome) -> dict:
    return {
        "target": outcome.target,
        "upstream": outcome.upstream,
        "id": outcome.patch_id,
        "path": str(outcome.path),
        "from": outcome.kind,
        "commits": list(outcome.commits),
        "pin": outcome.pin,
        "smoke_test": outcome.smoke_test,
        "stub": outcome.stub,
        "series": outcome.series,
        "notes": outcome.notes,
    }
