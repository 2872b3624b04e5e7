"""verify and revert of an installed environment: prove what apply wrote, or put the originals back."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from patchmgr.io.journal import apply_transaction
from patchmgr.model.manifest import Target, Upstream
from patchmgr.model.project import Project
from patchmgr.sources.environment import Environment
from patchmgr.targets import env_state
from patchmgr.targets.env_state import EnvAction, EnvOutcome, EnvState
from patchmgr.targets.ledger import UpstreamLedger, verify_recorded
from patchmgr.targets.record import bytecode_of, record_hash, record_rows


def verify_environment(project: Project, target: Target, python: str, only: Sequence[str] = ()) -> EnvOutcome:
    environment, upstreams = env_state.open_environment(python, target, only)
    return verify_opened(project, target, environment, upstreams)


def verify_opened(project: Project, target: Target, environment: Environment, upstreams: list[Upstream]) -> EnvOutcome:
    """``verify_environment`` of an environment already probed (apply verifies before it re-applies)."""
    state = EnvState(environment, target.name)
    outcome = EnvOutcome(target.name, environment.python, EnvAction.VERIFIED, notes=recovered_notes(environment))
    if len(upstreams) < len(target.upstreams):
        outcome.only = tuple(upstream.name for upstream in upstreams)
    ledger = state.read_ledger()
    outcome.has_ledger = ledger is not None
    for upstream in upstreams:
        entry = None if ledger is None else ledger.upstream(upstream.name)
        if entry is None:
            outcome.unapplied.append(upstream.name)
        else:
            outcome.differences += _verify_upstream(project, environment, upstream, entry)
    if outcome.problems:
        outcome.action = EnvAction.DIFFERS
    return outcome


def recovered_notes(environment: Environment) -> list[str]:
    """Finish or undo an interrupted run first (under the lock: never a transaction a live run is writing)."""
    if not (environment.state_dir / "journal").exists():
        return []
    with env_state.locked_environment(environment, writing=True) as done:
        return [done.message] if done.message else []


def _verify_upstream(
    project: Project, environment: Environment, upstream: Upstream, entry: UpstreamLedger
) -> list[str]:
    """The common checks (``verify_recorded``), then the distribution's version and its RECORD rows."""
    env = entry.env_part()
    problems = []
    dist = environment.dists.get(upstream.name)
    if dist is None or dist.version != env.version:
        found = dist.version if dist else "nothing"
        problems.append(f"{upstream.name}: {env.dist} {env.version} was patched, now {found} is installed")
    common, differs = verify_recorded(project, upstream, entry, lambda path: Path(env.installed[path]))
    problems += common
    problems += [f"{upstream.name}: {env.installed[path]} differs from what apply wrote" for path in differs]
    rows = record_rows(Path(env.record)) if env.record and not env.editable else {}
    for path, patched in entry.files.items():
        installed = Path(env.installed[path])
        if rows and path not in differs and patched is not None:
            row = rows.get(str(installed.resolve()))
            if row is None or len(row) < 2 or row[1] != record_hash(installed.read_bytes()):
                problems.append(f"{upstream.name}: RECORD does not match {installed}")
    return problems


def revert_environment(target: Target, python: str, only: Sequence[str] = (), force: bool = False) -> EnvOutcome:
    """Put back the original bytes of every file apply changed, and the original RECORD."""
    environment, upstreams = env_state.open_environment(python, target, only)
    state = EnvState(environment, target.name)
    outcome = EnvOutcome(target.name, python, EnvAction.NOTHING_TO_REVERT)
    with env_state.locked_environment(environment, writing=True) as done:
        if done.message:
            outcome.notes.append(done.message)
        ledger = state.read_ledger()
        if ledger is None:
            return outcome
        names = {u.name for u in upstreams}
        saved, saved_note = env_state.keep_edits(
            state, [u for u in ledger.upstreams if u.name in names], force, "revert"
        )
        if saved_note:
            outcome.notes.append(saved_note)
        writes: dict[Path, bytes | None] = dict(saved)
        for entry in ledger.upstreams:
            if entry.name not in names:
                continue
            for path, data in state.originals(entry).items():
                installed = Path(entry.env_part().installed[path])
                writes[installed] = data
                for stale in bytecode_of(installed):
                    writes[stale] = None
            env = entry.env_part()
            for compiled, digest in env.bytecode.items():
                writes[Path(compiled)] = state.saved(entry, digest, compiled)
            if env.record and env.record_original:
                writes[Path(env.record)] = state.saved(entry, env.record_original, f"{env.dist}'s RECORD")
        remaining = [u for u in ledger.upstreams if u.name not in names]
        if remaining:
            ledger.upstreams = remaining
            writes[state.ledger_path] = ledger.to_json().encode()
        else:
            writes[state.ledger_path] = None
        apply_transaction(environment.state_dir, writes)
    outcome.action = EnvAction.REVERTED
    outcome.changed = env_state.environment_files(writes, environment)
    return outcome
