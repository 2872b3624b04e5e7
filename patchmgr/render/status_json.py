"""status and what builds on it as JSON: the documents of patches, guards, upstreams and targets, without rich
(``status --json`` loads no rendering code)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, TypeVar

from patchmgr.engine.results import CheckResult, GuardResult, State

if TYPE_CHECKING:  # only for annotations
    from patchmgr.check.status import TargetStatus, UpstreamStatus


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
        doc["carrier"] = result.carrier  # the commit that carries the change; null: only its reverse applies
        doc["changed_since"] = result.changed_since  # its lines changed after it landed: its reverse fails
    if result.notes:
        doc["notes"] = list(result.notes)
    # a knock-on failure: the earlier patches it fails for want of, which do not apply (engine.knock_on)
    doc["needs"] = [needed.patch_id for needed in result.needs]
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
