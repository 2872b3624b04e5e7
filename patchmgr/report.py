"""Render results for people (rich tables) and machines (one JSON document).

The only module besides the CLI that writes output; the core returns values.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

from patchmgr.engine import CheckResult, State
from patchmgr.errors import PatchmgrError

if TYPE_CHECKING:  # only for annotations: importing every command's module would slow every command's start
    from patchmgr.bump import BumpOutcome
    from patchmgr.checking import TargetStatus, UpstreamStatus
    from patchmgr.checkout import ApplyOutcome, VerifyOutcome
    from patchmgr.history import Bisection, Step
    from patchmgr.installed import EnvOutcome
    from patchmgr.lint import LintProblem
    from patchmgr.refresh import RefreshPlan
    from patchmgr.roundtrip import EditOutcome, ExportOutcome
    from patchmgr.smoke import SmokeReport

STATE_STYLE = {
    State.CLEAN: "green", State.OFFSET: "green", State.FUZZ: "yellow", State.THREE_WAY: "yellow",
    State.CONFLICT: "red", State.UPSTREAM: "cyan", State.MISSING: "red",
}


def _row(table: Table, *cells) -> None:
    """A table row whose text is shown as is: test ids like ``test_x[case]`` and subjects like
    ``[training] fix`` are not rich markup."""
    table.add_row(*(Text(cell) if isinstance(cell, str) else cell for cell in cells))


def patch_json(result: CheckResult) -> dict:
    patch = result.patch
    doc = {
        "id": patch.id,
        "state": result.state.value,
        "detail": result.detail,
        "sha256": patch.sha256,
        "description": patch.description,
        "upstream_status": patch.field("Upstream-Status"),
        "origin": patch.field("Origin"),
        "files": patch.touched_paths,
    }
    if result.placements:
        doc["hunks"] = [{"file": p.path, "hunk": p.number, "offset": p.offset, "fuzz": p.fuzz}
                        for p in result.placements]
    if result.conflict:
        c = result.conflict
        doc["conflict"] = {"file": c.path, "hunk": c.hunk, "header": c.header, "reason": c.reason,
                           "line": c.expected_line, "upstream_lines": list(c.upstream_lines)}
    if result.evidence:
        doc["evidence"] = result.evidence
    if result.state is State.UPSTREAM:
        doc["carrier"] = result.carrier  # the commit with the patch's patch-id; null: only its reverse applies
    if result.notes:
        doc["notes"] = list(result.notes)
    return doc


def upstream_json(status: UpstreamStatus) -> dict:
    return {
        "name": status.upstream.name,
        "ref": status.ref,
        "commit": status.commit,
        "source": status.source,
        "available": status.available,
        "error": status.error,
        "notes": status.notes,
        "patches": [patch_json(r) for r in status.results],
    }


def target_json(status: TargetStatus) -> dict:
    return {"target": status.target.name, "ok": status.ok,
            "upstreams": [upstream_json(u) for u in status.upstreams], "warnings": status.warnings}


def status_json(statuses: list[TargetStatus], single: bool) -> str:
    if single and len(statuses) == 1:
        return json.dumps(target_json(statuses[0]), indent=2)
    return json.dumps({"targets": [target_json(s) for s in statuses]}, indent=2)


def render_status(console: Console, statuses: Iterable[TargetStatus]) -> None:
    for status in statuses:
        table = Table(title=f"target {status.target.name}", title_justify="left", expand=False)
        table.add_column("upstream")
        table.add_column("patch")
        table.add_column("state")
        table.add_column("detail", overflow="fold")
        for upstream_status in status.upstreams:
            _status_rows(table, upstream_status)
        console.print(table)
        for upstream_status in status.upstreams:
            _upstream_lines(console, upstream_status)
        for warning in status.warnings:
            console.print(f"warning: {warning}", style="yellow", highlight=False)


def _upstream_lines(console: Console, status: UpstreamStatus) -> None:
    name = status.upstream.name
    if not status.available:
        console.print(f"  {name}: unavailable, no source could provide it:", style="red", highlight=False)
        for reason in (status.error or "").split("; "):
            console.print(f"    {reason}", highlight=False, markup=False)
        if status.hint:
            console.print(f"    hint: {status.hint}", highlight=False, markup=False)
        return
    commit = f"{status.commit[:12]} " if status.commit else ""
    console.print(f"  {name}: {commit}from {status.source}", highlight=False, markup=False)
    for note in status.notes:
        console.print(f"    note: {note}", style="yellow", highlight=False, markup=False)


def _status_rows(table: Table, status: UpstreamStatus) -> None:
    name = status.upstream.name
    if not status.available:
        _row(table, name, "-", Text("unavailable", style="red"), "no source could provide it (see below)")
        return
    if not status.results:
        _row(table, name, "-", "no patches", "")
    for result in status.results:
        state = Text(result.state.value, style=STATE_STYLE[result.state])
        _row(table, name, result.patch.id, state, result.detail)
        if result.conflict and result.conflict.upstream_lines and result.state is State.CONFLICT:
            lines = "\n".join(f"  {line}" for line in result.conflict.upstream_lines)
            _row(table, "", "", "", Text(f"upstream at line {result.conflict.expected_line}:\n{lines}",
                                           style="dim"))


def apply_json(outcome: ApplyOutcome) -> str:
    doc = target_json(outcome.status)
    doc.update({"into": str(outcome.into), "action": outcome.action, "notes": outcome.notes})
    return json.dumps(doc, indent=2)


def render_apply(console: Console, outcome: ApplyOutcome) -> None:
    render_status(console, [outcome.status])
    _notes(console, outcome.notes)
    messages = {
        "applied": f"applied target {outcome.status.target.name} into {outcome.into}",
        "already-applied": f"{outcome.into} already holds exactly these patches: nothing to do",
        "dry-run": f"dry run: every patch applies; nothing was written to {outcome.into}",
        "refused": "refused: not every patch applies exactly, so nothing was changed "
                   "(fix or refresh the patches listed above)",
    }
    console.print(messages[outcome.action], style="green" if outcome.ok else "red", highlight=False)


def verify_json(outcome: VerifyOutcome) -> str:
    return json.dumps({"target": outcome.target, "into": str(outcome.into), "ok": outcome.ok,
                       "checked": outcome.checked, "problems": outcome.problems, "notes": outcome.notes}, indent=2)


def render_verify(console: Console, outcome: VerifyOutcome) -> None:
    _notes(console, outcome.notes)
    if outcome.ok:
        console.print(f"verified: {outcome.into} holds exactly target {outcome.target} "
                      f"({', '.join(outcome.checked)})", style="green", highlight=False)
        return
    for problem in outcome.problems:
        console.print(f"differs: {problem}", style="red", highlight=False)


def lint_json(problems: list[LintProblem], checked: int) -> str:
    return json.dumps({"ok": not problems, "patches_checked": checked,
                       "problems": [{"path": str(p.path), "message": p.message} for p in problems]}, indent=2)


def render_lint(console: Console, problems: list[LintProblem], checked: int) -> None:
    for problem in problems:
        console.print(f"{problem.path}: {problem.message}", style="red", highlight=False)
    if not problems:
        console.print(f"lint: {checked} patches and their manifests are well-formed", style="green",
                      highlight=False)


def smoke_json(smoke: SmokeReport) -> str:
    return json.dumps({"target": smoke.target, "unpatched": smoke.unpatched, "ok": smoke.ok, "notes": smoke.notes,
                       "summary": {v: len(smoke.with_verdict(v)) for v in ("proven", "failed", "not-proven")},
                       "patches": [{"patch": v.patch, "upstream": v.upstream, "verdict": v.verdict,
                                    "reason": v.reason} for v in smoke.verdicts],
                       "results": [{"patch": r.patch, "upstream": r.upstream, "test": r.test, "device": r.device,
                                    "result": r.result, "seconds": r.seconds, "reason": r.reason}
                                   for r in smoke.results]}, indent=2)


def render_smoke(console: Console, smoke: SmokeReport) -> None:
    _notes(console, smoke.notes)
    title = f"smoke {smoke.target}" + (" (unpatched: every test must fail its assertions)" if smoke.unpatched
                                       else "")
    table = Table(title=title, title_justify="left")
    for column in ("patch", "test", "device", "result", "time", "reason"):
        table.add_column(column, overflow="fold")
    styles = {"passed": "green", "failed": "red", "error": "magenta", "skipped": "yellow"}
    if smoke.unpatched:
        styles = {**styles, "passed": "red", "failed": "green"}
    for r in smoke.results:
        _row(table, r.patch, r.test.rsplit("::", 1)[-1] if "::" in r.test else r.test, r.device,
             Text(r.result, style=styles.get(r.result, "")), f"{r.seconds:.1f}s", r.reason)
    console.print(table)
    # one line per patch that is not proven, saying which and why
    for v in smoke.verdicts:
        if v.verdict != "proven":
            label = "failed" if v.verdict == "failed" else "not proven"
            console.print(f"{label}: {v.upstream}/{v.patch}: {v.reason}", style="red", highlight=False,
                          markup=False)
    counts = {result: sum(r.result == result for r in smoke.results)
              for result in ("passed", "failed", "error", "skipped")}
    proven, failed, not_proven = (len(smoke.with_verdict(v)) for v in ("proven", "failed", "not-proven"))
    if smoke.unpatched:
        patches = (f"{proven} proven (each detects its bug), {failed} failed (a test passes without the patch), "
                   f"{not_proven} not proven")
        tests = (f"{counts['failed']} tests failed their assertions on the unpatched upstream, "
                 f"{counts['passed']} passed")
    else:
        patches = f"{proven} proven, {failed} failed, {not_proven} not proven"
        tests = f"{counts['passed']} tests passed, {counts['failed']} failed"
    tests += (f", {counts['error']} errors" if counts["error"] else "") + (
        f", {counts['skipped']} not run" if counts["skipped"] else "")
    if not smoke.verdicts:
        patches = "no patch selected: nothing proven"
    console.print(f"{patches} ({tests})", style="green" if smoke.ok else "red", highlight=False, markup=False)


def fetch_json(target: str, fetched: dict[str, dict]) -> str:
    return json.dumps({"target": target, "ok": all(f["ok"] for f in fetched.values()), "upstreams": fetched},
                      indent=2)


def render_fetch(console: Console, target: str, fetched: dict[str, dict]) -> None:
    for name, entry in fetched.items():
        if entry["ok"]:
            console.print(f"{name}: cached from {entry['source']}", style="green", highlight=False, markup=False)
            if entry["absent"]:
                console.print(f"  the source lacks {len(entry['absent'])} files; checkouts leave them out: "
                              + ", ".join(entry["absent"]), style="yellow", highlight=False, markup=False)
        else:
            console.print(f"{name}: not fetched: {entry['error']}", style="red", highlight=False, markup=False)


def env_json(outcome: EnvOutcome) -> str:
    doc = target_json(outcome.status) if outcome.status else {"target": outcome.target}
    doc.update({"python": outcome.python, "action": outcome.action, "ok": outcome.ok, "notes": outcome.notes,
                "problems": outcome.problems, "changed": outcome.changed})
    return json.dumps(doc, indent=2)


def render_env(console: Console, outcome: EnvOutcome) -> None:
    if outcome.status:
        render_status(console, [outcome.status])
    _notes(console, outcome.notes)
    for problem in outcome.problems:
        console.print(f"differs: {problem}", style="red", highlight=False, markup=False)
    messages = {
        "applied": f"applied target {outcome.target} into {outcome.python}'s environment "
                   f"({len(outcome.changed)} files changed: sources, stale bytecode, RECORD; originals kept for revert)",
        "already-applied": f"{outcome.python}'s environment already holds exactly these patches: nothing to do",
        "dry-run": "dry run: every patch applies; nothing was written",
        "refused": "refused: not every patch applies exactly, so nothing was changed",
        "reverted": f"reverted target {outcome.target}: {len(outcome.changed)} files (sources, bytecode, RECORD) "
                    "restored byte for byte",
        "nothing-to-revert": f"nothing to revert: patchmgr has not applied target {outcome.target} there",
        "verified": f"verified: the environment holds exactly target {outcome.target}'s patches",
        "differs": "the environment differs from what apply wrote (see above)",
    }
    console.print(messages[outcome.action], style="green" if outcome.ok else "red", highlight=False, markup=False)


def _notes(console: Console, notes: list[str]) -> None:
    for note in notes:
        console.print(f"note: {note}", style="yellow", highlight=False, markup=False)


def render_error(console: Console, error: PatchmgrError) -> None:
    from patchmgr.gitio import mask_url  # a password in a URL is never printed
    console.print(f"error: {mask_url(error.message)}", style="red", highlight=False, markup=False)
    if error.hint:
        console.print(f"hint: {mask_url(error.hint)}", highlight=False, markup=False)


# -- bisect, refresh, bump, edit, export (issue 6) ------------------------------
def _step_json(step: Step | None) -> dict | None:
    if step is None:
        return None
    return {"commit": step.commit, "state": step.state.value, "subject": step.subject, "pr": step.pr}


def bisect_json(result: Bisection) -> str:
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
    return json.dumps({"upstream": result.upstream.name, "ref": result.ref, "to": result.to, "pin": result.pin,
                       "merge_base": result.base, "commits_on_path": result.commits_on_path,
                       "patches": patches, "applying": result.applying, "notes": result.notes}, indent=2)


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
        _row(table, history.patch.id, Text(history.state.value, style=STATE_STYLE[history.state]),
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
        _notes(console, plan.notes)
    table = Table(title=f"refresh {plan.upstream.name} at {plan.ref} ({plan.commit[:12]})", title_justify="left")
    for column in ("patch", "state", "action", "detail"):
        table.add_column(column, overflow="fold")
    styles = {"refreshed": "green", "unchanged": "green", "upstream": "cyan", "refused": "red"}
    for refreshed in plan.patches:
        _row(table, refreshed.patch.id, Text(refreshed.state.value, style=STATE_STYLE[refreshed.state]),
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
        console.print(f"dry run: {_patches(len(plan.changed))} would be rewritten; nothing was written",
                      highlight=False)
    else:
        console.print(f"rewrote {_patches(len(plan.written))}" + "".join(f"\n  {p}" for p in plan.written),
                      style="green", highlight=False)


def _patches(count: int) -> str:
    return f"{count} patch" + ("" if count == 1 else "es")


def render_bump(console: Console, outcome: BumpOutcome) -> None:
    plan = outcome.plan
    name = plan.upstream.name
    _notes(console, plan.notes)
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
    _notes(console, outcome.notes)
    console.print(f"{outcome.into}: {outcome.upstream.name} at {outcome.pin[:12]} with {len(outcome.commits)} "
                  "patch commits:", highlight=False)
    for patch_id, commit in outcome.commits:
        console.print(f"  {commit[:12]} {patch_id}", highlight=False)
    console.print(f"commit your changes there (amend, rebase -i, add commits), then: patchmgr export --target "
                  f"{outcome.target} --upstream {outcome.upstream.name} --from {outcome.into}",
                  style="dim", highlight=False)


def render_export(console: Console, outcome: ExportOutcome) -> None:
    _notes(console, outcome.notes)
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
