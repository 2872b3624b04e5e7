"""Move an edit checkout's series onto a new upstream ref (``patchmgr edit --onto REF``), patch by patch.

The checkout is first made at the pin as ``edit`` makes it (one commit per
patch), so every preimage blob that the patches' ``index`` lines name is in
it; then it goes to the new ref and the patch files are applied there one at a
time with ``git am --3way``, each one commit with its note. A patch whose
change the ref already carries (an upstream commit between the pin and the
ref has its ``git patch-id --stable``) is left out, with that commit named. At
the first patch that git cannot apply or merge (or that changes nothing
there), the move stops with the conflict markers in place; ``--continue``
(after the files are resolved and ``git add``-ed, or after a plain ``git am
--continue``), ``--skip`` (the only way a patch leaves the series) and
``--abort`` (back to the pin, the series as it was, the work of the move kept
on a branch) carry on (``maintain.onto_resume``). The move's state lives in the
checkout's typed record (``edit_record.Move``), so ``export`` knows the new
base, the old series for the range-diff, and why a patch left. The whole move
is built in the edit slot's staging (``maintain.edit_checkout``): a move that
fails changes nothing in DIR.

Why ``edit --onto`` and not ``bump --edit``: the work happens in an edit
checkout, with edit's guards against losing work and export's one journaled
write; ``bump`` stays what it is, one step that writes nothing unless every
patch refreshes exactly. ``bump`` refusing a conflict names this way out, and
the pin moves only when ``export`` writes the resolved series, so an abandoned
move leaves the project as it was.
"""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from patchmgr.engine.results import CheckResult, GuardResult, State
from patchmgr.history.at_ref import check_at_ref
from patchmgr.io.faults import step
from patchmgr.io.git import GitRepo
from patchmgr.maintain.edit_record import (
    Carried,
    EditRecord,
    Move,
    PatchCommit,
    Queued,
    StopMark,
    add_note,
    read_record,
    write_record,
)
from patchmgr.maintain.export_guards import guards_at_head, head_commit
from patchmgr.model.errors import GitError, StateError, UsageError
from patchmgr.model.mail import as_mail
from patchmgr.model.manifest import Upstream
from patchmgr.model.patchfile import PatchFile
from patchmgr.model.project import Project
from patchmgr.model.records import sha256_bytes
from patchmgr.model.urls import mask_url, without_credentials
from patchmgr.sources.upstream import Sources
from patchmgr.targets.absent import absent_note, leaving_out_absent
from patchmgr.targets.cache_remote import fetch_from_cache

MAILS = "patchmgr-onto"  # in the checkout's .git: the patch files still to apply, as they were
OLD_SERIES = "refs/patchmgr/old-series"  # the series at the pin, for the range-diff and --abort
# the committer of the commits git am makes in a move (edit --onto and its --continue, --skip, --abort)
AM_COMMITTER = {"GIT_COMMITTER_NAME": "patchmgr", "GIT_COMMITTER_EMAIL": "patchmgr@localhost"}


@dataclass
class OntoPlan:
    ref: str
    commit: str
    carried: list[Carried] = field(default_factory=list)
    results: list[CheckResult] = field(default_factory=list)  # the series at the ref, as status checks it
    notes: list[str] = field(default_factory=list)

    @property
    def states(self) -> dict[str, State]:
        """Patch id -> its state at the ref, as status reads it."""
        return {r.patch.id: r.state for r in self.results}


@dataclass
class Stopped:
    """The patch that needs a person."""

    id: str
    number: int  # 1-based position in the series being applied
    total: int
    conflicts: list[str]  # paths with conflict markers (unmerged); empty: git could not merge at all
    mail: Path  # the patch file git am is applying
    reason: str | None = None  # why it stopped when no git am waits (git refused the mail, or it changes nothing)


class MoveAction(StrEnum):
    """What one ``edit --onto`` call did to the move."""

    STARTED = "started"
    CONTINUED = "continued"
    SKIPPED = "skipped"
    ABORTED = "aborted"


@dataclass
class OntoOutcome:
    target: str
    upstream: str
    into: Path
    ref: str
    commit: str
    pin: str
    action: MoveAction
    applied: list[tuple[str, str]] = field(default_factory=list)  # (patch id, commit) on the new base so far
    carried: list[Carried] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    stopped: Stopped | None = None
    saved: list[str] = field(default_factory=list)  # --abort: the branches that keep the work done during the move
    # finished: patch id -> its guards on the new HEAD (the patched tree at the ref), for patches that have guards
    guards: dict[str, list[GuardResult]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def finished(self) -> bool:
        return self.stopped is None

    @property
    def guards_hold(self) -> bool:
        return all(g.holds for guards in self.guards.values() for g in guards)


def plan_onto(project: Project, upstream: Upstream, sources: Sources, ref: str) -> OntoPlan:
    """The commit ``ref`` names, and the patches whose change it already carries; reads only.

    A ref the source does not have is bad input (exit 2), before anything is written.
    """
    source = sources.open_git(upstream, ref)
    plan = OntoPlan(ref, source.commit)
    if source.commit == upstream.commit:
        raise UsageError(
            f"{upstream.name} is already pinned at {ref} ({source.commit[:12]}); nothing to move",
            "edit without --onto to change the patches at the pin",
        )
    if not source.repo.has_commit(upstream.commit) or source.repo.merge_base(upstream.commit, source.commit) is None:
        raise UsageError(
            f"{ref} ({source.commit[:12]}) shares no history with the pin {upstream.commit[:12]}",
            "give a branch, tag or commit of the same upstream",
        )
    # guards included, as status checks them; what the move reports of them is their state on its finished HEAD
    # (``checked``), the tree export writes, after git am's merges
    plan.results = check_at_ref(sources, upstream, source, project.patches(upstream))
    for result in plan.results:
        if result.state is State.UPSTREAM and result.carrier:
            plan.carried.append(
                Carried(result.patch.id, result.carrier, source.repo.commit_info(result.carrier).subject)
            )
        elif result.state is State.UPSTREAM:
            plan.notes.append(
                f"{result.patch.id} looks upstream at {ref} (its reverse applies), but no upstream "
                "commit has its patch-id: it is applied like the others; skip it if it is redundant"
            )
    return plan


@dataclass
class MoveRun:
    """A move being carried on: the checkout git works in (``work``, a copy in the edit slot's staging), where the
    user sees it (``into``, named in every message), and its record."""

    repo: GitRepo
    work: Path
    into: Path
    record: EditRecord

    @property
    def move(self) -> Move:
        assert self.record.onto is not None
        return self.record.onto

    def mail(self, patch_id: str) -> Path:
        return self.work / ".git" / MAILS / f"{patch_id}.patch"

    def shown(self, path: Path) -> Path:
        """``path`` in ``work`` as the user will find it in ``into``."""
        return self.into / path.relative_to(self.work)

    def save(self) -> None:
        write_record(self.work, self.record)


def write_mail(path: Path, patch: PatchFile) -> None:
    """The mail ``git am`` applies for ``patch``: a plain diff gets a mail's headers from its DEP-3 fields."""
    path.write_bytes(as_mail(patch))


def start_onto(
    folder: Path, into: Path, project: Project, upstream: Upstream, plan: OntoPlan, sources: Sources
) -> OntoOutcome:
    """Move the pin checkout in ``folder`` (made by edit, one commit per patch, in the edit slot's staging; it
    will be swapped in at ``into``) to ``plan.commit`` and apply the series there, as far as it goes. The
    commit comes from the checkout's ``origin`` (the upstream), or from the cache when that cannot be reached
    and the cache holds every file of it (``targets.cache_remote``)."""
    record = read_record(folder)
    carried = {c.id for c in plan.carried}
    mails = folder / ".git" / MAILS
    shutil.rmtree(mails, ignore_errors=True)
    mails.mkdir()
    queue = []
    for patch in project.patches(upstream):
        if patch.id not in carried:
            write_mail(mails / f"{patch.id}.patch", patch)
            queue.append(Queued(patch.id, sha256_bytes(patch.data)))
    with GitRepo(folder) as repo:
        old_tip = head_commit(repo, folder, "to move onto another ref")
        repo.run("update-ref", OLD_SERIES, old_tip)
        try:
            upstream_url = _fetch_onto(repo, sources, upstream, plan, record.target, into)
            with leaving_out_absent(repo, folder, plan.commit) as absent:  # the files the source lacks there
                repo.run("checkout", "--quiet", "-B", "patchmgr", plan.commit)
            if upstream_url is not None:
                repo.run("remote", "set-url", "origin", "--", upstream_url)  # as it was, without a login
        except GitError as exc:
            raise StateError(
                f"cannot check {upstream.name} out at {plan.ref} ({plan.commit[:12]}): {exc.message}; "
                f"nothing in {into} was changed",
                f"pass a reachable clone with --source {upstream.name}=PATH_OR_URL",
            ) from None
        step()
        record.onto = Move(plan.ref, plan.commit, old_tip, record.patches, queue, carried=list(plan.carried))
        record.patches = []
        run = MoveRun(repo, folder, into, record)
        run.save()
        outcome = run_outcome(run, MoveAction.STARTED)
        outcome.notes += plan.notes + ([absent_note(upstream.name, plan.ref, absent)] if absent else [])
        return checked(project, run_queue(run, outcome), folder)


def _fetch_onto(
    repo: GitRepo, sources: Sources, upstream: Upstream, plan: OntoPlan, target: str, into: Path
) -> str | None:
    """``commit`` into the checkout from its ``origin``; when that cannot be reached, from the cache (with a note),
    or one error naming what the cache lacks. The upstream's URL to point ``origin`` back at once the checkout
    has read its files (None: it is as it was).

    A checkout's ``origin`` is its URL without a login (``targets/build``); the source it was given with one
    (--source, PATCHMGR_SOURCES) lends it for the fetch and for the blobs the checkout fetches after it."""
    origin = repo.run("remote", "get-url", "origin")
    login = next((url for url in sources.urls(upstream) if url != origin and without_credentials(url) == origin), None)
    if login is not None:
        sources.store.configure_remote(repo, login)
    try:
        repo.run("fetch", "--quiet", "--no-tags", "--filter=blob:none", "origin", "--", plan.commit)
        return origin if login is not None else None
    except GitError as exc:
        reason = exc.message
    try:
        store = sources.store
        fetch_from_cache(repo, store, upstream.name, plan.commit, f"{mask_url(origin)}: {reason}", target, ref=plan.ref)
    except StateError as failed:
        raise StateError(f"{failed.message}; nothing in {into} was changed", failed.hint) from None
    return origin


def checked(project: Project, outcome: OntoOutcome, work: Path) -> OntoOutcome:
    """A finished move, with the guards of its patches evaluated on the new HEAD (of ``work``): a guard that the
    ref broke is fixed here, in the checkout, before export."""
    if outcome.finished and outcome.action is not MoveAction.ABORTED:
        applied = {pid for pid, _commit in outcome.applied}
        found = guards_at_head(project, outcome.target, outcome.upstream, work)
        outcome.guards = {pid: guards for pid, guards in found.items() if pid in applied}
    return outcome


def run_queue(run: MoveRun, outcome: OntoOutcome) -> OntoOutcome:
    """Apply the queued patches one by one; stop at the first that needs a person (a conflict, a mail git
    refuses, or a patch that changes nothing there: only an explicit --skip leaves a patch out)."""
    repo, record, move = run.repo, run.record, run.move
    total = len(record.patches) + len(move.skipped) + len(move.queue)
    while move.queue:
        entry = move.queue[0]
        before = head_commit(repo, run.work, "to apply the next patch on")
        move.current, move.before, move.stop = entry.id, before, None
        run.save()
        mail = run.mail(entry.id)
        reason = None
        try:
            applied = repo.am_apply(mail, env=AM_COMMITTER)
        except GitError as exc:  # git refused the mail itself: nothing was applied, no git am waits
            applied, reason = False, f"git am cannot apply it: {exc.message.removeprefix('git am: ')}"
        step()
        made = _commits(repo, before) if applied else []
        if applied and not made:
            applied, reason = (
                False,
                (f"git am found nothing left to change at {move.ref} (the ref may already have its change)"),
            )
        if not applied:
            number = len(record.patches) + len(move.skipped) + 1
            move.stop = stop_mark(repo, run.work, am=reason is None)
            outcome.stopped = Stopped(entry.id, number, total, repo.unmerged_paths(), run.shown(mail), reason)
            break
        add_note(repo, made[0], entry.id)
        record.patches.append(PatchCommit(entry.id, made[0], entry.sha256))
        done_current(run)
    run.save()
    outcome.applied = [(p.id, p.commit) for p in record.patches]
    outcome.skipped = list(move.skipped)
    return outcome


def stop_mark(repo: GitRepo, folder: Path, am: bool) -> StopMark:
    """The checkout as a stop leaves it (``StopMark``), to tell at --abort what a person did since."""
    return StopMark(work_tree_tree(repo, folder), index_digest(repo), am)


def work_tree_tree(repo: GitRepo, folder: Path) -> str:
    """The tree of every file in the work tree (tracked, and untracked ones git does not ignore), conflict markers
    and all; written with a copy of the index, so the checkout's own index is untouched."""
    index = folder / ".git" / "patchmgr-work-index"
    try:
        if (folder / ".git" / "index").is_file():
            shutil.copyfile(folder / ".git" / "index", index)
        env = {"GIT_INDEX_FILE": str(index), "GIT_LITERAL_PATHSPECS": "1"}
        repo.run("add", "--all", "--", ".", env=env)
        return repo.run("write-tree", env=env)
    finally:
        index.unlink(missing_ok=True)


def index_digest(repo: GitRepo) -> str:
    """A digest of the index, every stage of every path."""
    return hashlib.sha256(repo.run("ls-files", "--stage", "-z", strip=False).encode("utf-8")).hexdigest()


def done_current(run: MoveRun) -> None:
    move = run.move
    current = move.current
    move.queue = [e for e in move.queue if e.id != current]
    move.current = move.before = None
    move.stop = None
    if current is not None:
        run.mail(current).unlink(missing_ok=True)
    run.save()


def run_outcome(run: MoveRun, action: MoveAction) -> OntoOutcome:
    record, move = run.record, run.move
    return OntoOutcome(
        record.target,
        record.upstream,
        run.into,
        move.ref,
        move.commit,
        record.pin,
        action,
        carried=list(move.carried),
        skipped=list(move.skipped),
    )


def _commits(repo: GitRepo, before: str) -> list[str]:
    out = repo.run("rev-list", "--reverse", f"{before}..HEAD")
    return out.split() if out else []


def commits_since(repo: GitRepo, before: str | None) -> list[str]:
    return _commits(repo, before) if before else []
