"""``--smoke`` of status, bump, export and matrix: each patch's smoke verdict at the ref checked, as a table (a line
per patch in a log) and as JSON (``smoke`` in each command's document)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

from patchmgr.render.console import notes, row, say
from patchmgr.render.outside import one_line
from patchmgr.render.reports.rows import short_ref
from patchmgr.render.smoke import smoke_json
from patchmgr.smoke.absorption import Absorption

if TYPE_CHECKING:
    from patchmgr.check.status import TargetStatus
    from patchmgr.history.matrix import Matrix
    from patchmgr.maintain.bump import BumpOutcome
    from patchmgr.maintain.roundtrip import ExportOutcome
    from patchmgr.smoke.absorption import RefVerdict
    from patchmgr.smoke.at_ref import RefSmoke

STYLES = {
    Absorption.PROVEN: "green",
    Absorption.UPSTREAM: "cyan",
    Absorption.PARTLY_UPSTREAM: "yellow",
    Absorption.FAILED: "red",
    Absorption.NOT_PROVEN: "magenta",
}


def verdict_json(verdict: RefVerdict) -> dict:
    return {
        "patch": verdict.patch,
        "upstream": verdict.upstream,
        "ref": verdict.ref,
        "verdict": verdict.verdict.value,
        "label": verdict.verdict.label,
        "reason": verdict.reason,
        "passing_unpatched": list(verdict.passing_unpatched),
        "tests": list(verdict.tests),
    }


def ref_smoke_json(smoke: RefSmoke) -> dict:
    """The verdicts, their counts, the notes, and the runs behind them (``smoke --json``'s documents): with and
    without the patches at the ref, and without and with them at the pin (null where no test needed them, or the ref
    is the pin)."""
    return {
        "ok": smoke.ok,
        "notes": smoke.notes,
        "summary": {v.value: len(smoke.with_verdict(v)) for v in Absorption},
        "patches": [verdict_json(v) for v in smoke.verdicts],
        "patched": smoke_json(smoke.patched) if smoke.patched else None,
        "unpatched": smoke_json(smoke.unpatched) if smoke.unpatched else None,
        "at_pin": smoke_json(smoke.at_pin) if smoke.at_pin else None,
        "at_pin_patched": smoke_json(smoke.at_pin_patched) if smoke.at_pin_patched else None,
    }


def both_json(smoke: RefSmoke) -> dict:
    """``smoke --both --json``: ``ok`` only when every patch is proven (its exit code)."""
    return {**ref_smoke_json(smoke), "ok": smoke.all_proven}


def with_smoke(doc: dict, smoke: RefSmoke | None) -> dict:
    """A command's JSON document with ``smoke`` added (null when ``--smoke`` was not given)."""
    return {**doc, "smoke": ref_smoke_json(smoke) if smoke is not None else None}


def summary_line(smoke: RefSmoke) -> str:
    return ", ".join(f"{len(smoke.with_verdict(v))} {v.label}" for v in Absorption)


def render_ref_smoke(console: Console, smoke: RefSmoke) -> None:
    """The table (or, in a log, a line per patch), then a line per patch that needs a person, then the counts."""
    notes(console, smoke.notes)
    title = "smoke at the ref checked: each patch's tests with and without it"
    if console.is_terminal:
        table = Table(title=title, title_justify="left")
        for column in ("upstream", "patch", "ref", "smoke", "reason"):
            table.add_column(column, overflow="fold")
        for v in smoke.verdicts:
            label = Text(v.verdict.label, style=STYLES[v.verdict])
            row(table, v.upstream, v.patch, short_ref(v.ref), label, v.reason)
        console.print(table)
    else:  # a log: one line per patch, never cut nor padded
        say(console, f"{title}:")
        for v in smoke.verdicts:
            where = f"  {v.upstream}/{v.patch} at {short_ref(v.ref)}: "
            line = Text.assemble(where, (v.verdict.label, STYLES[v.verdict]))
            line.append(f" - {one_line(v.reason)}")
            console.print(line, highlight=False, markup=False, crop=False, overflow="ignore")
    for v in smoke.verdicts:
        if v.verdict in (Absorption.UPSTREAM, Absorption.PARTLY_UPSTREAM, Absorption.FAILED):
            say(console, f"{v.verdict.label}: {v.upstream}/{v.patch}: {v.reason}", STYLES[v.verdict])
    say(console, f"smoke: {summary_line(smoke)}", "red" if not smoke.ok else "green")


def status_smoke_json(statuses: list[TargetStatus], smoke: RefSmoke) -> dict:
    from patchmgr.render.status import status_json

    return with_smoke(status_json(statuses, single=True), smoke)


def render_status_smoke(console: Console, statuses: list[TargetStatus], smoke: RefSmoke) -> None:
    from patchmgr.render.status import render_status

    render_status(console, statuses)
    render_ref_smoke(console, smoke)


def bump_smoke_json(outcome: BumpOutcome, smoke: RefSmoke) -> dict:
    from patchmgr.render.maintain import bump_json

    doc = bump_json(outcome)
    return with_smoke({**doc, "dropped_by_smoke": outcome.by_smoke, "smoke_failed": outcome.smoke_failed}, smoke)


def render_bump_smoke(console: Console, outcome: BumpOutcome, smoke: RefSmoke) -> None:
    """The smoke verdicts first (what the tests say at the ref, before the pin moves), then the bump."""
    from patchmgr.render.maintain import render_bump

    render_ref_smoke(console, smoke)
    for patch, reason in outcome.smoke_failed.items():
        say(console, f"blocks the bump: {patch} fails its smoke tests at {outcome.plan.ref}: {reason}", "red")
    render_bump(console, outcome)
    # a patch the bump drops on patch-id evidence anyway needs no other
    carried = {p.patch.id for p in outcome.plan.patches if p.action == "upstream" and p.carrier}
    upstream = [
        v.patch
        for v in smoke.with_verdict(Absorption.UPSTREAM)
        if v.patch not in outcome.by_smoke and v.patch not in carried
    ]
    if upstream:
        say(
            console,
            f"upstream by smoke at {outcome.plan.ref}: {', '.join(upstream)} (every smoke test passes there without "
            "it, and failed without it and passed with it at the pin); to drop it on that evidence, run the same "
            "bump with --smoke --drop-upstream-by-smoke",
            "cyan",
        )


def export_smoke_json(outcome: ExportOutcome, smoke: RefSmoke) -> dict:
    from patchmgr.render.maintain import export_json

    return with_smoke(export_json(outcome), smoke)


def render_export_smoke(console: Console, outcome: ExportOutcome, smoke: RefSmoke) -> None:
    """The smoke verdicts (run before anything was written), then what export wrote."""
    from patchmgr.render.maintain import render_export

    render_ref_smoke(console, smoke)
    render_export(console, outcome)


def render_refused_export(console: Console, smoke: RefSmoke) -> None:
    render_ref_smoke(console, smoke)
    failed = ", ".join(v.patch for v in smoke.with_verdict(Absorption.FAILED))
    say(console, f"refused: {failed} fails its smoke tests in the edit checkout; nothing was written", "red")
    say(console, "fix the patch's commit there (git commit --amend, or git rebase -i), then export again", "dim")


def matrix_smoke_json(matrices: list[Matrix], target: str, html: str | None, smoke: RefSmoke) -> dict:
    from patchmgr.render.matrix import matrix_json

    return with_smoke(matrix_json(matrices, target, html), smoke)


def render_matrix_smoke(
    console: Console, matrices: list[Matrix], target: str, html: str | None, smoke: RefSmoke
) -> None:
    from patchmgr.render.matrix import render_matrix

    render_matrix(console, matrices, target, html)
    render_ref_smoke(console, smoke)


def with_smoke_html(page: str, smoke: RefSmoke) -> str:
    """The matrix page with a section of the smoke verdicts before its end (every text escaped)."""
    from patchmgr.render.outside import for_html as escape

    rows = "".join(
        f'<tr data-patch="{escape(v.patch)}"><td>{escape(v.upstream)}</td><th scope="row">{escape(v.patch)}</th>'
        f'<td>{escape(short_ref(v.ref))}</td><td class="smoke-{escape(v.verdict.value)}">{escape(v.verdict.label)}</td>'
        f"<td>{escape(v.reason)}</td></tr>"
        for v in smoke.verdicts
    )
    notes = "".join(f"<li>{escape(note)}</li>" for note in smoke.notes)
    section = (
        '<section class="smoke"><h2>smoke at the newest release: each patch\'s tests with and without it</h2>'
        '<table class="matrix"><thead><tr><th>upstream</th><th>patch</th><th>ref</th><th>smoke</th><th>reason</th>'
        f'</tr></thead><tbody>{rows}</tbody></table><ul class="notes">{notes}</ul></section>\n'
    )
    end = page.rfind("</body>")
    return page[:end] + section + page[end:] if end >= 0 else page + section
