"""Apply a target into an installed Python environment (``--python PATH``), verify it, revert it.

All or nothing across the target, through one journaled transaction that
writes the patched files, the distributions' RECORD files (so pip's view stays
consistent) and the ledger together. Stale bytecode of changed modules is
removed. The original bytes of every touched file, and the original RECORD,
are kept so that ``revert`` restores them exactly.

Only files inside the distribution's own packages are written (other paths
of a patch are left out with a note; a ``.pth`` or a new top-level module is
refused). A file edited since apply is never overwritten by ``revert`` or a
re-``apply`` unless ``--force``, which first saves it, in the same
transaction, under ``<state>/<target>/saved/<UTC time>/``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path

from patchmgr.check.status import TargetStatus, UpstreamStatus, drift, every_touched_file
from patchmgr.engine.classify import check_series
from patchmgr.engine.results import CheckResult, Conflict, State
from patchmgr.history.backports import unknown_backports
from patchmgr.io import scratch
from patchmgr.io.files import linked_tree
from patchmgr.io.journal import apply_transaction
from patchmgr.model.errors import PatchmgrError, StateError
from patchmgr.model.manifest import Target, Upstream
from patchmgr.model.patchfile import PatchFile
from patchmgr.model.project import Project
from patchmgr.model.records import sha256_bytes
from patchmgr.sources.environment import Environment, InstalledDist, InstalledSource, Placed, place_patch, require_dists
from patchmgr.sources.upstream import Sources
from patchmgr.targets.actions import ApplyAction
from patchmgr.targets.env_state import (
    EnvOutcome,
    EnvState,
    environment_files,
    keep_edits,
    locked_environment,
    open_environment,
)
from patchmgr.targets.env_verify import recovered_notes, verify_opened
from patchmgr.targets.ledger import AppliedPatch, InstalledPart, Ledger, UpstreamLedger, same_plan
from patchmgr.targets.record import bytecode_of, update_record
from patchmgr.targets.trees import SmokeTree, put_back


def check_environment(
    project: Project, target: Target, sources: Sources, python: str, only: Sequence[str] = ()
) -> tuple[TargetStatus, list[str]]:
    """Classify the patches against the installed files (seen unpatched when patchmgr patched them)."""
    environment, upstreams = open_environment(python, target, only)
    return _check(project, target, sources, environment, upstreams)


def _check(
    project: Project, target: Target, sources: Sources, environment: Environment, upstreams: list[Upstream]
) -> tuple[TargetStatus, list[str]]:
    dists = require_dists(environment, upstreams)
    state = EnvState(environment, target.name)
    notes = []
    with locked_environment(environment, writing=False) as done:
        if done.message:
            notes.append(done.message)
        ledger = state.read_ledger()
    statuses = []
    for dist in dists:
        entry = ledger.upstream(dist.upstream.name) if ledger else None
        source = InstalledSource(dist, state.originals(entry) if entry else None)
        placed = [place_patch(dist, patch) for patch in project.patches(dist.upstream)]
        status = UpstreamStatus(
            dist.upstream,
            dist.version,
            None,
            source.identity,
            _check_placed(placed, source),
            installed=dist,
            backports=unknown_backports([p.patch for p in placed], "installed files have no git history"),
        )
        status.notes.append(_drift(sources, dist, source, [p.patch for p in placed if not p.refused]))
        left_out = [path for p in placed for path in p.left_out]
        if left_out:
            status.notes.append(
                f"left out: {', '.join(dict.fromkeys(left_out))} (not part of {dist.name}'s installed "
                "packages, so apply does not write them into this environment)"
            )
        if entry:
            status.notes.append(f"patchmgr applied {len(entry.patches)} patches here (ledger {state.ledger_path})")
        statuses.append(status)
    return TargetStatus(target, statuses), notes


def _check_placed(placed: list[Placed], source: InstalledSource) -> list[CheckResult]:
    """The series checked in order over the files each patch writes here.

    A patch with a file that must never be written into an installed
    environment (a ``.pth``, a new top-level module) is a conflict naming that
    file, and the later patches are checked without it, so ``status`` and
    ``apply`` agree.
    """
    checked = iter(check_series([item.patch for item in placed if not item.refused], source))
    results = []
    for item in placed:
        if item.refused:
            path, why = item.refused
            results.append(CheckResult(item.patch, State.CONFLICT, conflict=Conflict(path, 0, "", why, 1)))
        else:
            results.append(next(checked))
    return results


def _drift(sources: Sources, dist: InstalledDist, installed: InstalledSource, patches: list[PatchFile]) -> str:
    """Compare the installed originals of the touched files with the pinned commit (or release)."""
    try:
        pinned = sources.open(dist.upstream, None)
    except PatchmgrError as exc:
        return f"drift not checked: no source of the pin ({exc.message})"
    paths, differing = drift(installed, pinned, patches, lambda path: bool(dist.installed_path(path)))
    if differing:
        return (
            f"installed files differ from the pin ({pinned.description}) in {', '.join(differing)}: "
            "this installation was not built from the pinned commit"
        )
    return f"installed files match the pin ({pinned.description}) in {every_touched_file(len(paths))}"


def apply_environment(
    project: Project,
    target: Target,
    sources: Sources,
    python: str,
    only: Sequence[str] = (),
    dry_run: bool = False,
    force: bool = False,
) -> EnvOutcome:
    environment, upstreams = open_environment(python, target, only)
    require_dists(environment, upstreams)
    state = EnvState(environment, target.name)
    # locked from the check to the last write: a second apply waits, then finds this one's result
    with locked_environment(environment, writing=not dry_run) as done:
        status, notes = _check(project, target, sources, environment, upstreams)
        if done.message:  # recovered here, before _check looked
            notes.insert(0, done.message)
        if done.waited:
            notes.insert(0, f"waited {done.waited:.1f}s for another patchmgr run on this environment")
        outcome = EnvOutcome(target.name, python, ApplyAction.REFUSED, status, notes)
        if not status.ok:
            return outcome
        ledger = state.read_ledger() or Ledger(target.name, python=python)
        if same_plan(ledger.series, status) and not verify_opened(project, target, environment, upstreams).problems:
            outcome.action = ApplyAction.ALREADY_APPLIED
            return outcome
        names = {u.name for u in upstreams}
        saved, saved_note = keep_edits(state, [u for u in ledger.upstreams if u.name in names], force, "apply", dry_run)
        if saved_note:
            outcome.notes.append(saved_note)
        if dry_run:
            outcome.action = ApplyAction.DRY_RUN
            return outcome
        writes, _ = _plan_writes(state, ledger, status)
        apply_transaction(environment.state_dir, {**saved, **writes})
    outcome.action = ApplyAction.APPLIED
    outcome.changed = environment_files(writes, environment)
    return outcome


def _plan_writes(state: EnvState, ledger: Ledger, status: TargetStatus) -> tuple[dict[Path, bytes | None], Ledger]:
    writes: dict[Path, bytes | None] = {}
    for upstream_status in status.upstreams:
        dist = upstream_status.installed
        if dist is None:  # _check gives every upstream the installed distribution it read
            raise StateError(
                f"{upstream_status.upstream.name}: no installed distribution was read",
                "run `patchmgr status --python` to see why",
            )
        old = ledger.upstream(dist.upstream.name)
        originals = state.originals(old)
        source = InstalledSource(dist, originals)
        final: dict[str, bytes | None] = {}
        for result in upstream_status.results:
            final.update(result.files)
        # a path an earlier apply patched but this series no longer touches goes back to its original
        for path, data in originals.items():
            final.setdefault(path, data)
        files: dict[str, str | None] = {}
        installed_at: dict[str, str] = {}
        original_digests: dict[str, str | None] = {}
        bytecode = dict(old.env_part().bytecode) if old else {}
        record_updates: dict[str, bytes | None] = {}
        for path, data in final.items():
            if getattr(data, "is_symlink", False):
                # an environment is written file by file through its RECORD, which holds no links
                raise StateError(
                    f"{dist.name}: a patch makes {path} a symbolic link, which an installed environment does not "
                    "hold; nothing was written",
                    "apply the target into a checkout instead (patchmgr apply --into DIR)",
                )
            installed = dist.installed_path(path)
            if installed is None:
                raise StateError(
                    f"{dist.name}: {path} is not part of the installed distribution",
                    "the patch touches files the release does not ship",
                )
            original = originals[path] if path in originals else source.read(path)
            original_digest: str | None = None
            if original is not None:
                original_digest = sha256_bytes(original)
                writes[state.backup_path(dist.upstream.name, original_digest)] = original
            writes[installed] = data
            record_updates[str(installed)] = data
            files[path] = None if data is None else sha256_bytes(data)
            installed_at[path], original_digests[path] = str(installed), original_digest
            for stale in bytecode_of(installed):
                compiled = stale.read_bytes()
                bytecode[str(stale)] = sha256_bytes(compiled)
                writes[state.backup_path(dist.upstream.name, bytecode[str(stale)])] = compiled
                writes[stale] = None
                record_updates[str(stale)] = None
        record_original = old.env_part().record_original if old else None
        if dist.record is not None and not dist.editable:
            current = dist.record.read_bytes()
            if old is None or record_original is None:
                record_original = sha256_bytes(current)
                writes[state.backup_path(dist.upstream.name, record_original)] = current
                base = current
            else:
                base = state.saved(old, record_original, f"{dist.name}'s RECORD")
            writes[dist.record] = update_record(base, dist.location, record_updates, dist.record)
        entry = UpstreamLedger(
            dist.upstream.name,
            dist.upstream.commit,
            [AppliedPatch(r.patch.id, r.patch.sha256) for r in upstream_status.results],
            files,
            env=InstalledPart(
                dist.name,
                dist.version,
                str(dist.location),
                dist.editable,
                installed_at,
                original_digests,
                str(dist.record) if dist.record else None,
                record_original,
                bytecode,
            ),
        )
        ledger.upstreams = [u for u in ledger.upstreams if u.name != entry.name] + [entry]
    writes[state.ledger_path] = ledger.to_json().encode()
    return writes, ledger


def environment_trees(target: Target, environment: Environment, upstreams: list[Upstream]) -> list[SmokeTree]:
    """Each upstream's installed code for the smoke tests (``verified_trees`` proves it is what apply wrote);
    unpatched means the saved originals put back."""
    # like apply and status: a missing distribution, or another version than the pin, is bad input (exit 2),
    # never smoke tests run against code the manifest does not pin
    dists = require_dists(environment, upstreams)
    state = EnvState(environment, target.name)
    notes = recovered_notes(environment)
    ledger = state.read_ledger()
    trees = []
    for upstream, dist in zip(upstreams, dists, strict=False):
        entry = ledger.upstream(upstream.name) if ledger else None
        if entry is None:  # its installed code is the upstream's own: smoke with the patches would test without
            why = f"{upstream.name} is not applied in {environment.python}'s environment: run `patchmgr apply` for it"
            trees.append(SmokeTree(upstream, None, why))
            continue
        trees.append(
            SmokeTree(upstream, dist.import_root, unpatched=partial(_unpatched_install, dist, state.originals(entry)))
        )
    if trees:
        trees[0].notes += notes
    return trees


@contextmanager
def _unpatched_install(dist: InstalledDist, originals: dict[str, bytes | None]) -> Iterator[Path]:
    """A copy of the installed top-level packages with the original bytes of patched files put back."""
    root = dist.import_root
    if not originals:  # patchmgr never patched it: the installed code is the unpatched code
        yield root
        return
    with scratch.folder("unpatched") as tmp:
        copy = Path(tmp)
        tops = {
            Path(installed).relative_to(root).parts[0]
            for path in originals
            if (installed := dist.installed_path(path)) is not None
        }
        for top in sorted(tops):
            linked_tree(root / top, copy / top, "__pycache__")
        for path, data in originals.items():
            installed = dist.installed_path(path)
            if installed is not None:
                put_back(copy / installed.relative_to(root), data)
        yield copy
