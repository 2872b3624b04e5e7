"""smoke: each patch's verdict and the tests that ran, as a table or a JSON document."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

from patchmgr.render.console import notes, row, say
from patchmgr.render.fields import fields_json
from patchmgr.render.outside import one_line
from patchmgr.smoke.verdicts import Verdict

if TYPE_CHECKING:
    from patchmgr.smoke.verdicts import SmokeReport, SmokeResult


def smoke_json(smoke: SmokeReport) -> dict:
    return {
        "target": smoke.target,
        "unpatched": smoke.unpatched,
        "ok": smoke.ok,
        "notes": smoke.notes,
        "summary": {v.value: len(smoke.with_verdict(v)) for v in Verdict},
        "patches": [fields_json(v) for v in smoke.verdicts],
        "python": [
            {
                "upstream": n.upstream,
                "requires_python": n.spec,
                "from": n.where or None,
                "python": n.python,
                "version": n.version,
                "fits": n.fits,
                "environment": n.environment or None,
            }
            for n in smoke.python_needs
        ],
        "results": [fields_json(r) for r in smoke.results],
    }


def _test(r: SmokeResult) -> str:
    return r.test.rsplit("::", 1)[-1] if "::" in r.test else r.test


def _time(r: SmokeResult) -> str:
    return f"{r.seconds:.1f}s"


def render_smoke(console: Console, smoke: SmokeReport) -> None:
    notes(console, smoke.notes)
    title = f"smoke {smoke.target}" + (" (unpatched: every test must fail its assertions)" if smoke.unpatched else "")
    styles = {"passed": "green", "failed": "red", "error": "magenta", "skipped": "yellow", "timed-out": "magenta"}
    if smoke.unpatched:
        styles = {**styles, "passed": "red", "failed": "green"}
    if console.is_terminal:
        table = Table(title=title, title_justify="left")
        for column in ("patch", "test", "device", "result", "time", "reason"):
            table.add_column(column, overflow="fold")
        for r in smoke.results:
            row(table, r.patch, _test(r), r.device, Text(r.result, style=styles.get(r.result, "")), _time(r), r.reason)
        console.print(table)
    else:  # a log (CI, docker build): a line per test, as long as its text and no longer, never cut nor padded
        say(console, f"{title}:")
        for r in smoke.results:
            line = Text.assemble(f"  {r.patch} {_test(r)} {r.device}: ", (r.result, styles.get(r.result, "")))
            line.append(f" {_time(r)}" + (f" - {one_line(r.reason)}" if r.reason else ""))
            console.print(line, highlight=False, markup=False, crop=False, overflow="ignore")
    # one line per patch that is not proven, saying which and why
    for v in smoke.verdicts:
        if v.verdict is not Verdict.PROVEN:
            label = "failed" if v.verdict is Verdict.FAILED else "not proven"
            say(console, f"{label}: {v.upstream}/{v.patch}: {v.reason}", "red")
    counts = {
        result: sum(r.result == result for r in smoke.results) for result in ("passed", "failed", "error", "skipped")
    }
    proven, failed, not_proven = (len(smoke.with_verdict(v)) for v in Verdict)
    if smoke.unpatched:
        patches = (
            f"{proven} proven (each detects its bug), {failed} failed (a test passes without the patch), "
            f"{not_proven} not proven"
        )
        tests = f"{counts['failed']} tests failed their assertions on the unpatched upstream, {counts['passed']} passed"
    else:
        patches = f"{proven} proven, {failed} failed, {not_proven} not proven"
        tests = f"{counts['passed']} tests passed, {counts['failed']} failed"
    tests += (f", {counts['error']} errors" if counts["error"] else "") + (
        f", {counts['skipped']} not run" if counts["skipped"] else ""
    )
    if not smoke.verdicts:
        patches = "no patch selected: nothing proven"
    say(console, f"{patches} ({tests})", "green" if smoke.ok else "red")
