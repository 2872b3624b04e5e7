"""``export``: the patches written back from a checkout, the pin it moved and git range-diff of the series, for
people and as JSON."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console

from patchmgr.render.console import notes, say
from patchmgr.render.maintain.guards import print_broken_guards
from patchmgr.render.status import guard_json, or_none

if TYPE_CHECKING:
    from patchmgr.maintain.quilt_export import QuiltExport
    from patchmgr.maintain.rangediff import RangeDiff
    from patchmgr.maintain.roundtrip import ExportOutcome
    from patchmgr.maintain.series_export import SeriesExport


def render_export(console: Console, outcome: ExportOutcome) -> None:
    notes(console, list(outcome.notes))
    for patch_id, guards in outcome.guards.items():
        print_broken_guards(console, patch_id, guards, "the exported tree")
    if not outcome.guards_hold:
        say(
            console,
            "written, but a guard is broken (see above): change the patch in the checkout so that it "
            "holds, then export again",
            "red",
        )
    for patch in outcome.patches:
        style = "green" if patch.action != "unchanged" else "dim"
        say(console, f"{patch.action:9} {patch.id} ({patch.commit[:12]})", style)
    for patch_id in outcome.removed:
        kept = (
            f" (its file stays: target {', '.join(outcome.shared[patch_id])} lists it)"
            if patch_id in outcome.shared
            else ""
        )
        if patch_id in outcome.dropped:
            say(console, f"dropped   {patch_id}: {outcome.dropped[patch_id]}{kept}", "cyan")
            continue
        say(console, f"removed   {patch_id}: no commit carries it any more{kept}", "yellow")
    if not outcome.changed:
        say(console, f"{outcome.upstream.name}: no patch changed")
    elif outcome.series_changed:
        say(console, f"{outcome.upstream.name}: series is now {', '.join(p.id for p in outcome.patches)}")
    if outcome.moved:
        old, new, ref = outcome.moved
        version = (
            f", version {outcome.old_version} -> {outcome.new_version}"
            if outcome.new_version and outcome.new_version != outcome.old_version
            else ""
        )
        say(console, f"moved the pin of {outcome.upstream.name}: {old[:12]} -> {new[:12]} ({ref}){version}", "green")
    if outcome.range_diff is not None:
        render_range_diff(console, outcome.range_diff)


def render_range_diff(console: Console, diff: RangeDiff) -> None:
    """git range-diff of the old series against the new: = same, ! changed (its diff follows), < gone, > new."""
    old_base, old_tip = diff.old.split("..", 1)
    new_base, new_tip = diff.new.split("..", 1)
    say(
        console,
        f"range-diff of the old series ({old_base[:12]}..{old_tip[:12]}) against the new "
        f"({new_base[:12]}..{new_tip[:12]}); = same, ! changed, < left the series, > new:",
    )
    for line in diff.text.rstrip("\n").split("\n"):  # git's lines: a subject's CR is shown, not a line break
        console.print("  " + line, highlight=False, markup=False, soft_wrap=True)


def export_json(outcome: ExportOutcome) -> dict:
    return {
        "upstream": outcome.upstream.name,
        "from": str(outcome.source),
        "changed": outcome.changed,
        "series_changed": outcome.series_changed,
        "patches": [{"id": p.id, "commit": p.commit, "action": p.action, "path": str(p.path)} for p in outcome.patches],
        "removed": outcome.removed,
        "shared": outcome.shared,
        "copies": outcome.copies,
        "also": list(outcome.also),
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
        "range_diff": or_none(_range_diff_json, outcome.range_diff),
        "notes": outcome.notes,
        "guards": {pid: [guard_json(g) for g in guards] for pid, guards in outcome.guards.items()},
    }


def _range_diff_json(diff: RangeDiff) -> dict:
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


def render_series_export(console: Console, outcome: SeriesExport) -> None:
    notes(console, list(outcome.notes))
    for upstream in outcome.upstreams:
        layout = upstream.layout
        say(
            console,
            f"{layout.name}: {layout.patch} ({len(layout.patch_ids)} patch(es), {upstream.files} file(s)) "
            f"at {layout.commit[:12]}",
            "green",
        )
    say(
        console,
        f"wrote target {outcome.target} as a patch series into {outcome.into}: series.conf, pins.dockerfile "
        f"(the pins as ARG lines, and how to use them) and {len(outcome.upstreams)} monolithic patch(es); "
        "git apply of each at its pin gives the files patchmgr apply writes",
    )


def series_export_json(outcome: SeriesExport) -> dict:
    return {
        "target": outcome.target,
        "into": str(outcome.into),
        "upstreams": [
            {
                "name": u.layout.name,
                "patch": u.layout.patch,
                "git": u.layout.git,
                "commit": u.layout.commit,
                "sha256": u.layout.sha256,
                "patches": list(u.layout.patch_ids),
                "files": u.files,
            }
            for u in outcome.upstreams
        ],
        "written": [str(p) for p in outcome.written],
        "replaced": [str(p) for p in outcome.replaced],
        "kept": list(outcome.kept),
        "notes": list(outcome.notes),
    }


def render_quilt_export(console: Console, outcome: QuiltExport) -> None:
    say(console, f"{outcome.upstream}: {len(outcome.patch_ids)} patch(es) at {outcome.commit[:12]}", "green")
    say(
        console,
        f"wrote the {outcome.upstream} series of target {outcome.target} as a quilt series into {outcome.into}: "
        + ("the series it was imported from" if outcome.kept_series else "series")
        + " and the patch files; quilt push -a there on the pristine upstream gives the files patchmgr apply writes",
    )


def quilt_export_json(outcome: QuiltExport) -> dict:
    return {
        "target": outcome.target,
        "upstream": outcome.upstream,
        "commit": outcome.commit,
        "into": str(outcome.into),
        "patches": list(outcome.patch_ids),
        "kept_series": outcome.kept_series,  # the series is the one the patches were imported from
        "written": [str(p) for p in outcome.written],
        "replaced": [str(p) for p in outcome.replaced],
    }
