"""status, apply, verify, lint, fetch and the installed-environment commands: tables for people, JSON documents."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, TextIO, cast

from rich.console import Console
from rich.table import Table
from rich.text import Text

from patchmgr.engine.results import CheckResult
from patchmgr.render.console import notes, row, say, shown
from patchmgr.render.status_json import (
    StateAtCommit,
    commit_json,
    guard_json,
    or_none,
    patch_json,
    status_json,
    target_json,
    upstream_json,
)
from patchmgr.render.status_plain import guard_lines, state_cell, status_rows, upstream_lines

if TYPE_CHECKING:  # only for annotations: importing every command's module would slow every command's start
    from patchmgr.check.status import TargetStatus
    from patchmgr.model.lint import LintProblem
    from patchmgr.targets.checkout import ApplyOutcome
    from patchmgr.targets.checkout_verify import VerifyOutcome
    from patchmgr.targets.env_state import EnvOutcome
    from patchmgr.targets.trees import SmokeTree


def state_text(result: CheckResult) -> Text:
    """The state cell: ``clean``, or ``clean, guard broken`` when a guard of the patch does not hold."""
    text, style = state_cell(result)
    return Text(text, style=style)


def render_status(console: Console, statuses: Iterable[TargetStatus]) -> None:
    """The status table and the lines under it: for a terminal, or laid out for a log (``status_plain``) when the
    console is not one, as ``apply``, ``verify`` and ``fetch`` show it too."""
    if not console.is_terminal:
        from patchmgr.render.status_plain import write_status

        console.file.flush()
        write_status(cast(TextIO, console.file), statuses)
        return
    for status in statuses:
        table = Table(title=f"target {status.target.name}", title_justify="left", expand=False)
        table.add_column("upstream")
        table.add_column("patch")
        table.add_column("state")
        table.add_column("detail", overflow="fold")
        for upstream_status in status.upstreams:
            for cells in status_rows(upstream_status):
                state, detail = shown(cells.state, cells.state_style), shown(cells.detail, cells.detail_style)
                row(table, cells.upstream, cells.patch, state, detail)
        console.print(table)
        for upstream_status in status.upstreams:
            for line in upstream_lines(upstream_status):
                say(console, line.text, line.style or None)
        for warning in status.warnings:
            say(console, f"warning: {warning}", "yellow")


def apply_json(outcome: ApplyOutcome) -> dict:
    doc = target_json(outcome.status)
    doc.update({"into": str(outcome.into), "action": outcome.action, "notes": outcome.notes})
    return doc


def render_apply(console: Console, outcome: ApplyOutcome) -> None:
    render_status(console, [outcome.status])
    notes(console, outcome.notes)
    messages = {
        "applied": f"applied target {outcome.status.target.name} into {outcome.into}",
        "already-applied": f"{outcome.into} already holds exactly these patches: nothing to do",
        "dry-run": f"dry run: every patch applies; nothing was written to {outcome.into}",
        "refused": "refused: not every patch applies exactly, so nothing was changed "
        "(fix or refresh the patches listed above)",
    }
    if outcome.action == "refused" and guards_only(outcome.status):
        messages["refused"] = GUARD_REFUSAL
    say(console, messages[outcome.action], "green" if outcome.ok else "red")


GUARD_REFUSAL = (
    "refused: every patch applies, but a guard is broken (listed above): the tree would be known "
    "broken, so nothing was changed (fix the patch so that its guards hold, then apply again)"
)


def guards_only(status: TargetStatus) -> bool:
    """Whether every patch applies and only guards make ``status`` not OK."""
    results = [r for u in status.upstreams for r in u.results]
    return (
        all(u.available for u in status.upstreams)
        and all(r.state.applies for r in results)
        and not all(r.guards_hold for r in results)
    )


def verify_json(outcome: VerifyOutcome) -> dict:
    return {
        "target": outcome.target,
        "into": str(outcome.into),
        "ok": outcome.ok,
        "checked": outcome.checked,
        "problems": outcome.problems,
        "notes": outcome.notes,
    }


def render_verify(console: Console, outcome: VerifyOutcome) -> None:
    notes(console, list(outcome.notes))
    if outcome.ok:
        say(
            console,
            f"verified: {outcome.into} holds exactly target {outcome.target} ({', '.join(outcome.checked)})",
            "green",
        )
        return
    for problem in outcome.problems:
        say(console, f"differs: {problem}", "red")
    say(console, f"hint: {outcome.hint}")


def lint_json(problems: list[LintProblem], checked: int) -> dict:
    return {
        "ok": not problems,
        "patches_checked": checked,
        "problems": [{"path": str(p.path), "line": p.line, "message": p.message} for p in problems],
    }


def render_lint(console: Console, problems: list[LintProblem], checked: int) -> None:
    for problem in problems:
        say(console, f"{problem.where}: {problem.message}", "red")
    if not problems:
        say(console, f"lint: {checked} patches and their manifests are well-formed", "green")


def fetch_json(target: str, fetched: dict[str, dict]) -> dict:
    """``upstreams`` is a list of named entries, as in status."""
    return {
        "target": target,
        "ok": all(f["ok"] for f in fetched.values()),
        "upstreams": [{"name": name, **entry} for name, entry in fetched.items()],
    }


def render_fetch(console: Console, target: str, fetched: dict[str, dict]) -> None:
    for name, entry in fetched.items():
        if entry["ok"]:
            say(console, f"{name}: cached from {entry['source']}", "green")
            if entry["absent"]:
                say(
                    console,
                    f"  the source lacks {len(entry['absent'])} files; checkouts leave them out: "
                    + ", ".join(entry["absent"]),
                    "yellow",
                )
        else:
            say(console, f"{name}: not fetched: {entry['error']}", "red")


def env_json(outcome: EnvOutcome) -> dict:
    doc = target_json(outcome.status) if outcome.status else {"target": outcome.target}
    doc.update(
        {
            "python": outcome.python,
            "action": outcome.action,
            "ok": outcome.ok,
            "notes": outcome.notes,
            "problems": outcome.problems,
            "changed": outcome.changed,
        }
    )
    return doc


def render_env(console: Console, outcome: EnvOutcome) -> None:
    if outcome.status:
        render_status(console, [outcome.status])
    notes(console, outcome.notes)
    for problem in outcome.problems:
        say(console, f"differs: {problem}", "red")
    messages = {
        "applied": f"applied target {outcome.target} into {outcome.python}'s environment "
        f"({len(outcome.changed)} files changed: sources, stale bytecode, RECORD; originals kept for "
        "revert)",
        "already-applied": f"{outcome.python}'s environment already holds exactly these patches: nothing to do",
        "dry-run": "dry run: every patch applies; nothing was written",
        "refused": (
            GUARD_REFUSAL
            if outcome.status and guards_only(outcome.status)
            else "refused: not every patch applies exactly, so nothing was changed"
        ),
        "reverted": f"reverted target {outcome.target}: {len(outcome.changed)} files (sources, bytecode, RECORD) "
        "restored byte for byte",
        "nothing-to-revert": f"nothing to revert: patchmgr has not applied target {outcome.target} there",
        "verified": f"verified: the environment holds exactly target {outcome.target}'s patches",
        "differs": "the environment differs from what apply wrote (see above)",
    }
    say(console, messages[outcome.action], "green" if outcome.ok else "red")
    if outcome.action == "differs":
        say(console, f"hint: {outcome.hint}")


def roots_json(trees: list[SmokeTree]) -> dict:
    return {
        "roots": [{"name": t.upstream.name, "root": str(t.patched_root)} for t in trees if t.patched_root],
        "missing": [{"name": t.upstream.name, "reason": t.reason} for t in trees if t.patched_root is None],
        "notes": [note for t in trees for note in t.notes],
    }


def render_roots(console: Console, trees: list[SmokeTree]) -> None:
    """``NAME ROOT`` per applied upstream and nothing else: a shell reads it with ``while read -r name root``."""
    for tree in trees:
        if tree.patched_root is not None:
            console.print(f"{tree.upstream.name} {tree.patched_root}", highlight=False, markup=False, soft_wrap=True)


__all__ = [
    "StateAtCommit",
    "commit_json",
    "guard_json",
    "guard_lines",
    "or_none",
    "patch_json",
    "status_json",
    "target_json",
    "upstream_json",
]
