"""status, apply, verify, lint, fetch and the installed-environment commands: tables for people, JSON documents."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Protocol, TypeVar

from rich.console import Console
from rich.table import Table
from rich.text import Text

from patchmgr.engine.results import CheckResult, GuardResult, State
from patchmgr.render.console import STATE_STYLE, notes, row, say, shown

if TYPE_CHECKING:  # only for annotations: importing every command's module would slow every command's start
    from patchmgr.check.status import TargetStatus, UpstreamStatus
    from patchmgr.model.lint import LintProblem
    from patchmgr.targets.checkout import ApplyOutcome
    from patchmgr.targets.checkout_verify import VerifyOutcome
    from patchmgr.targets.env_state import EnvOutcome
    from patchmgr.targets.trees import SmokeTree


def patch_json(result: CheckResult) -> dict:
    patch = result.patch
    doc: dict[str, object] = {
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
        doc["hunks"] = [
            {"file": p.path, "hunk": p.number, "offset": p.offset, "fuzz": p.fuzz} for p in result.placements
        ]
    if result.conflict:
        c = result.conflict
        doc["conflict"] = {
            "file": c.path,
            "hunk": c.hunk,
            "header": c.header,
            "reason": c.reason,
            "line": c.expected_line,
            "upstream_lines": list(c.upstream_lines),
        }
    if result.evidence:
        doc["evidence"] = result.evidence
    if result.state is State.UPSTREAM:
        doc["carrier"] = result.carrier  # the commit with the patch's patch-id; null: only its reverse applies
    if result.notes:
        doc["notes"] = list(result.notes)
    doc["guards"] = [guard_json(g) for g in result.guards]
    doc["ok"] = result.ok
    return doc


def guard_json(guard: GuardResult) -> dict:
    """A guard's result; ``offenses`` are the first ones (model/guards.MAX_OFFENSES), ``offense_count`` all."""
    return {
        "guard": guard.guard,
        "holds": guard.holds,
        "offenses": list(guard.offenses),
        "error": guard.error,
        "offense_count": max(guard.offense_count, len(guard.offenses)),
    }


T = TypeVar("T")


def or_none(to_json: Callable[[T], dict], value: T | None) -> dict | None:
    """``to_json(value)``, or None (JSON's null) where there is no value."""
    return None if value is None else to_json(value)


class StateAtCommit(Protocol):
    """A patch's state at one upstream commit: a step of bisect's walk, the first change in a matrix row."""

    @property
    def commit(self) -> str | None: ...
    @property
    def state(self) -> State: ...
    @property
    def subject(self) -> str: ...
    @property
    def pr(self) -> int | None: ...
    @property
    def guards_broken(self) -> tuple[str, ...]: ...


def commit_json(at: StateAtCommit) -> dict:
    """The patch's state at a commit, with the commit's subject and pull request and the guards broken there."""
    return {
        "commit": at.commit,
        "state": at.state.value,
        "subject": at.subject,
        "pr": at.pr,
        "guards_broken": list(at.guards_broken),
    }


def state_text(result: CheckResult) -> Text:
    """The state cell: ``clean``, or ``clean, guard broken`` when a guard of the patch does not hold."""
    if result.guards_hold:
        return Text(result.state.value, style=STATE_STYLE[result.state])
    return Text(f"{result.state.value}, guard broken", style="red")


def guard_lines(result: CheckResult) -> list[str]:
    """For each broken guard: the guard, then each offending ``file:line: text`` (or why it could not be read)."""
    lines = []
    for guard in result.guards:
        if guard.holds:
            continue
        lines.append(f"guard broken: {guard.guard}")
        lines += [f"  {offense}" for offense in guard.offense_lines]
        if guard.error:
            lines.append(f"  {guard.error}")
    return lines


def upstream_json(status: UpstreamStatus) -> dict:
    return {
        "name": status.upstream.name,
        "ref": status.ref,
        "chosen_by": status.chosen_by,
        "commit": status.commit,
        "source": status.source,
        "available": status.available,
        "error": status.error,
        "notes": status.notes,
        "patches": [_with_backports(patch_json(r), status) for r in status.results],
    }


def _with_backports(doc: dict, status: UpstreamStatus) -> dict:
    """``doc`` of a patch with ``backports``: each pull request or commit it names, and whether the ref has it."""
    from patchmgr.render.backports import landed_json

    return {**doc, "backports": [landed_json(mark) for mark in status.backports.get(doc["id"], ())]}


def target_json(status: TargetStatus) -> dict:
    return {
        "target": status.target.name,
        "ok": status.ok,
        "upstreams": [upstream_json(u) for u in status.upstreams],
        "warnings": status.warnings,
    }


def status_json(statuses: list[TargetStatus], single: bool) -> dict:
    if single and len(statuses) == 1:
        return target_json(statuses[0])
    return {"targets": [target_json(s) for s in statuses]}


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
            say(console, f"warning: {warning}", "yellow")


def _upstream_lines(console: Console, status: UpstreamStatus) -> None:
    name = status.upstream.name
    if not status.available:
        say(console, f"  {name}: unavailable, no source could provide it:", "red")
        for reason in (status.error or "").split("; "):
            say(console, f"    {reason}")
        if status.hint:
            say(console, f"    hint: {status.hint}")
        return
    commit = f"{status.commit[:12]} " if status.commit else ""
    say(console, f"  {name}: {commit}from {status.source}")
    for note in status.notes:
        say(console, f"    note: {note}", "yellow")


def _status_rows(table: Table, status: UpstreamStatus) -> None:
    name = status.upstream.name
    if not status.available:
        row(table, name, "-", Text("unavailable", style="red"), "no source could provide it (see below)")
        return
    if not status.results:
        row(table, name, "-", "no patches", "")
    for result in status.results:
        row(table, name, result.patch.id, state_text(result), result.detail)
        broken = guard_lines(result)
        if broken:
            row(table, "", "", "", shown("\n".join(broken), style="red"))
        if result.conflict and result.conflict.upstream_lines and result.state is State.CONFLICT:
            lines = "\n".join(f"  {line}" for line in result.conflict.upstream_lines)
            row(table, "", "", "", shown(f"upstream at line {result.conflict.expected_line}:\n{lines}", style="dim"))
        marks = status.backports.get(result.patch.id)
        if marks:
            from patchmgr.render.backports import backport_lines
            from patchmgr.render.reports.rows import checked_at

            row(table, "", "", "", shown("\n".join(backport_lines(marks, checked_at(status))), style="dim"))


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
    notes(console, outcome.notes)
    if outcome.ok:
        say(
            console,
            f"verified: {outcome.into} holds exactly target {outcome.target} ({', '.join(outcome.checked)})",
            "green",
        )
        return
    for problem in outcome.problems:
        say(console, f"differs: {problem}", "red")


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
