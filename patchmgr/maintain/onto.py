"""Move an edit checkout's series onto a new upstream ref (``patchmgr edit --onto REF``), patch by patch.

The checkout is first made at the pin as ``edit`` makes it (one commit per
patch), so every preimage blob that the patches' ``index`` lines name is in
it; then it goes to the new ref and the patch files are applied there one at a
time with ``git am --3way``, each one commit with its note. A patch whose
change the ref already carries (an upstream commit between the pin and the
ref has its ``git patch-id --stable``) is left out, with that commit named. At
the first patch that git cannot apply or merge, the move stops with the
conflict markers in place; ``--continue`` (after the files are resolved and
``git add``-ed, or after a plain ``git am --continue``), ``--skip`` (the patch
leaves the series) and ``--abort`` (back to the pin, the series as it was)
carry on. The move's state lives in the checkout's record (``onto``), so
``export`` knows the new base, the old series for the range-diff, and why a
patch left.

Why ``edit --onto`` and not ``bump --edit``: the work happens in an edit
checkout, with edit's guards against losing work and export's one journaled
write; ``bump`` stays what it is, one step that writes nothing unless every
patch refreshes exactly. ``bump`` refusing a conflict names this way out, and
the pin moves only when ``export`` writes the resolved series, so an abandoned
move leaves the project as it was.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from patchmgr.engine.classify import Overlay, check_patch
from patchmgr.engine.results import GuardResult, State
from patchmgr.history.evidence import explain_upstream
from patchmgr.io.git import GitRepo, merge_texts
from patchmgr.maintain.edit_record import add_note, read_record, write_record_doc
from patchmgr.maintain.export_guards import guards_at_head
from patchmgr.model.errors import GitError, StateError, UsageError
from patchmgr.model.mail import as_mail
from patchmgr.model.manifest import Upstream
from patchmgr.model.project import Project
from patchmgr.model.records import sha256_bytes
from patchmgr.sources.store import Store
from patchmgr.sources.upstream import open_git_source
from patchmgr.targets.absent import absent_note, leaving_out_absent
from patchmgr.targets.localwork import SAVED_PREFIX, utc_stamp

MAILS = "patchmgr-onto"  # in the checkout's .git: the patch files still to apply, as they were
OLD_SERIES = "refs/patchmgr/old-series"  # the series at the pin, for the range-diff and --abort
_COMMITTER = {"GIT_COMMITTER_NAME": "patchmgr", "GIT_COMMITTER_EMAIL": "patchmgr@localhost"}


@dataclass(frozen=True)
class Carried:
    """A patch whose change the new ref already has: ``commit`` has its patch-id."""

    id: str
    commit: str
    subject: str

    def describe(self) -> str:
        return f"upstream carries it as {self.commit[:7]} ({self.subject})"


@dataclass
class OntoPlan:
    ref: str
    commit: str
    carried: list[Carried] = field(default_factory=list)
    states: dict[str, str] = field(default_factory=dict)  # patch id -> its state at the ref, as status reads it
    notes: list[str] = field(default_factory=list)


@dataclass
class Stopped:
    """The patch that needs a person."""

    id: str
    number: int  # 1-based position in the series being applied
    total: int
    conflicts: list[str]  # paths with conflict markers (unmerged); empty: git could not merge at all
    mail: Path  # the patch file git am is applying


@dataclass
class OntoOutcome:
    target: str
    upstream: str
    into: Path
    ref: str
    commit: str
    pin: str
    action: str  # "started" | "continued" | "skipped" | "aborted"
    applied: list[tuple[str, str]] = field(default_factory=list)  # (patch id, commit) on the new base so far
    carried: list[Carried] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    stopped: Stopped | None = None
    saved: str | None = None  # --abort: the branch that keeps resolved work
    # finished: patch id -> its guards on the new HEAD (the patched tree at the ref), for patches that have guards
    guards: dict[str, list[GuardResult]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def finished(self) -> bool:
        return self.stopped is None

    @property
    def guards_hold(self) -> bool:
        return all(g.holds for guards in self.guards.values() for g in guards)


def plan_onto(project: Project, upstream: Upstream, store: Store, overrides: Mapping[str, str], ref: str
              ) -> OntoPlan:
    """The commit ``ref`` names, and the patches whose change it already carries; reads only.

    A ref the source does not have is bad input (exit 2), before anything is written.
    """
    source = open_git_source(store, upstream, ref, overrides)
    plan = OntoPlan(ref, source.commit)
    if source.commit == upstream.commit:
        raise UsageError(f"{upstream.name} is already pinned at {ref} ({source.commit[:12]}); nothing to move",
                         "edit without --onto to change the patches at the pin")
    if not source.repo.has_commit(upstream.commit) or source.repo.merge_base(upstream.commit, source.commit) is None:
        raise UsageError(f"{ref} ({source.commit[:12]}) shares no history with the pin {upstream.commit[:12]}",
                         "give a branch, tag or commit of the same upstream")
    overlay = Overlay(source)
    results = []
    for patch in project.patches(upstream):
        results.append(check_patch(patch, overlay, merge_texts))
        overlay.update(results[-1].files)
    results = explain_upstream(store, upstream, overrides, source, results)
    for result in results:
        plan.states[result.patch.id] = result.state.value
        if result.state is State.UPSTREAM and result.carrier:
            plan.carried.append(Carried(result.patch.id, result.carrier,
                                        source.repo.commit_info(result.carrier).subject))
        elif result.state is State.UPSTREAM:
            plan.notes.append(f"{result.patch.id} looks upstream at {ref} (its reverse applies), but no upstream "
                              "commit has its patch-id: it is applied like the others; skip it if it is redundant")
    return plan


def start_onto(folder: Path, project: Project, upstream: Upstream, plan: OntoPlan) -> OntoOutcome:
    """Move the pin checkout in ``folder`` (made by edit, one commit per patch) to ``plan.commit`` and apply the
    series there, as far as it goes."""
    record = read_record(folder)
    carried = {c.id for c in plan.carried}
    mails = folder / ".git" / MAILS
    shutil.rmtree(mails, ignore_errors=True)
    mails.mkdir()
    queue = []
    for patch in project.patches(upstream):
        if patch.id not in carried:
            (mails / f"{patch.id}.patch").write_bytes(as_mail(patch))  # a plain diff gets a mail's headers
            queue.append({"id": patch.id, "sha256": sha256_bytes(patch.data)})
    with GitRepo(folder) as repo:
        old_tip = repo.resolve("HEAD")
        repo.run("update-ref", OLD_SERIES, old_tip)
        try:
            repo.run("fetch", "--quiet", "--no-tags", "--filter=blob:none", "origin", "--", plan.commit)
            with leaving_out_absent(repo, folder, plan.commit) as absent:  # the files the source lacks there
                repo.run("checkout", "--quiet", "-B", "patchmgr", plan.commit)
        except GitError as exc:
            raise StateError(f"cannot check {upstream.name} out at {plan.ref} ({plan.commit[:12]}) in {folder}: "
                             f"{exc.message}", f"pass a reachable clone with --source {upstream.name}=PATH_OR_URL"
                             ) from None
        record["onto"] = {"ref": plan.ref, "commit": plan.commit, "old_tip": old_tip,
                          "old_patches": record.get("patches") or [], "queue": queue, "current": None,
                          "before": None, "carried": [vars(c) for c in plan.carried], "skipped": [], "resolved": []}
        record["patches"] = []
        write_record_doc(folder, record)
        outcome = _outcome(folder, record, "started")
        outcome.notes += plan.notes + ([absent_note(upstream.name, plan.ref, absent)] if absent else [])
        return _checked(project, _run_queue(repo, folder, record, outcome))


def _checked(project: Project, outcome: OntoOutcome) -> OntoOutcome:
    """A finished move, with the guards of its patches evaluated on the new HEAD: a guard that the ref broke
    is fixed here, in the checkout, before export."""
    if outcome.finished and outcome.action != "aborted":
        applied = {pid for pid, _commit in outcome.applied}
        found = guards_at_head(project, outcome.target, outcome.upstream, outcome.into)
        outcome.guards = {pid: guards for pid, guards in found.items() if pid in applied}
    return outcome


def resume_onto(project: Project, folder: Path, action: str) -> OntoOutcome:
    """``--continue``, ``--skip`` or ``--abort`` of a move that stopped."""
    folder = folder.resolve()
    record = read_record(folder)
    onto = record.get("onto")
    if not onto:
        raise StateError(f"{folder} is not moving to a new ref: no edit --onto to {action}",
                         "start one with: patchmgr edit --target T --upstream NAME --into DIR --onto REF")
    with GitRepo(folder) as repo:
        if action == "abort":
            return _abort(repo, folder, record)
        outcome = _outcome(folder, record, "continued" if action == "continue" else "skipped")
        if action == "skip" and onto.get("current") is None and onto["queue"] and not repo.am_in_progress():
            onto["current"], onto["before"] = onto["queue"][0]["id"], repo.resolve("HEAD")  # the one git refused
        current = onto.get("current")
        if current is not None:
            if action == "continue":
                _continue_current(repo, folder, record, outcome)
            else:
                _skip_current(repo, folder, record, outcome)
        elif repo.am_in_progress():
            raise StateError(f"a git am that patchmgr did not start is in progress in {folder}",
                             f"finish it with git am --continue, --skip or --abort in {folder}, then run again")
        return _checked(project, _run_queue(repo, folder, record, outcome))


def _continue_current(repo: GitRepo, folder: Path, record: dict, outcome: OntoOutcome) -> None:
    onto = record["onto"]
    current, before = onto["current"], onto["before"]
    if repo.am_in_progress():
        unmerged = repo.unmerged_paths()
        if unmerged:
            raise StateError(f"{current}: {_paths(unmerged)} still {'has' if len(unmerged) == 1 else 'have'} "
                             "conflicts; nothing was done",
                             f"edit {'it' if len(unmerged) == 1 else 'them'} in {folder} (remove the <<<<<<< ======= "
                             f">>>>>>> markers), then: git -C {folder} add {' '.join(unmerged)} && patchmgr edit "
                             f"--continue --into {folder}")
        marked = _marked(repo, folder, _changed_paths(repo))
        if marked:
            raise StateError(f"{current}: conflict markers remain in {_paths(marked)}; nothing was done",
                             f"resolve them in {folder}, git add the files, then patchmgr edit --continue "
                             f"--into {folder}")
        try:
            repo.am_resume("continue", env=_COMMITTER)
        except GitError as exc:
            raise StateError(f"{current}: git am --continue refused: {exc.message.removeprefix('git am: ')}",
                             f"git -C {folder} add the resolved files, or leave the patch out with: patchmgr edit "
                             f"--skip --into {folder}") from None
    made = _commits(repo, before)
    if made:
        add_note(repo, made[0], current)
        record["patches"].append({"id": current, "commit": made[0], "sha256": _queued_sum(onto, current)})
        onto["resolved"].append(current)
    else:
        onto["skipped"].append(current)
        outcome.notes.append(f"{current} made no commit (git am --skip, or nothing left to change): it leaves the "
                             "series")
    _done_current(folder, record)


def _skip_current(repo: GitRepo, folder: Path, record: dict, outcome: OntoOutcome) -> None:
    onto = record["onto"]
    current, before = onto["current"], onto["before"]
    if repo.am_in_progress():
        repo.am_resume("skip", env=_COMMITTER)
    elif _commits(repo, before):
        raise StateError(f"{current} is already committed ({_commits(repo, before)[0][:12]}); there is nothing to "
                         "skip", f"carry on with: patchmgr edit --continue --into {folder}")
    onto["skipped"].append(current)
    outcome.notes.append(f"skipped {current}: export leaves it out of the series (and removes its file)")
    _done_current(folder, record)


def _abort(repo: GitRepo, folder: Path, record: dict) -> OntoOutcome:
    onto = record["onto"]
    outcome = _outcome(folder, record, "aborted")
    if repo.am_in_progress():
        repo.am_resume("abort", env=_COMMITTER)
    head = repo.resolve("HEAD")
    if onto.get("resolved") and head != onto["commit"]:
        outcome.saved = f"{SAVED_PREFIX}{utc_stamp()}-onto"
        repo.run("branch", "-f", outcome.saved, head)
    try:
        with leaving_out_absent(repo, folder, record["pin"]):  # back to the files the source lacks at the pin
            repo.run("checkout", "--quiet", "-B", "patchmgr", onto["old_tip"])
    except GitError as exc:
        raise StateError(f"cannot go back to the series at the pin in {folder}: {exc.message}",
                         f"commit or stash the changes git names, then patchmgr edit --abort --into {folder} again"
                         ) from None
    record["patches"] = onto["old_patches"]
    del record["onto"]
    write_record_doc(folder, record)
    shutil.rmtree(folder / ".git" / MAILS, ignore_errors=True)
    outcome.commit, outcome.applied = record["pin"], [(p["id"], p["commit"]) for p in record["patches"]]
    return outcome


def _run_queue(repo: GitRepo, folder: Path, record: dict, outcome: OntoOutcome) -> OntoOutcome:
    """Apply the queued patches one by one; stop at the first that needs a person."""
    onto = record["onto"]
    total = len(record["patches"]) + len(onto["skipped"]) + len(onto["queue"])
    while onto["queue"]:
        entry = onto["queue"][0]
        before = repo.resolve("HEAD")
        onto["current"], onto["before"] = entry["id"], before
        write_record_doc(folder, record)
        mail = folder / ".git" / MAILS / f"{entry['id']}.patch"
        try:
            applied = repo.am_apply(mail, env=_COMMITTER)
        except GitError as exc:  # git refused the mail itself: nothing was applied, nothing waits
            onto["current"] = onto["before"] = None
            write_record_doc(folder, record)
            raise StateError(f"{entry['id']}: git am cannot apply {mail}: {exc.message.removeprefix('git am: ')}",
                             f"leave the patch out with: patchmgr edit --skip --into {folder}, or give up the move "
                             f"with: patchmgr edit --abort --into {folder}") from None
        if not applied:
            number = len(record["patches"]) + len(onto["skipped"]) + 1
            outcome.stopped = Stopped(entry["id"], number, total, repo.unmerged_paths(), mail)
            break
        made = _commits(repo, before)
        if made:
            add_note(repo, made[0], entry["id"])
            record["patches"].append({"id": entry["id"], "commit": made[0], "sha256": entry["sha256"]})
        else:
            onto["skipped"].append(entry["id"])
            outcome.notes.append(f"{entry['id']}: git am found nothing left to change at {onto['ref']}; it leaves "
                                 "the series")
        _done_current(folder, record)
    write_record_doc(folder, record)
    outcome.applied = [(p["id"], p["commit"]) for p in record["patches"]]
    outcome.skipped = list(onto["skipped"])
    return outcome


def _done_current(folder: Path, record: dict) -> None:
    onto = record["onto"]
    current = onto["current"]
    onto["queue"] = [e for e in onto["queue"] if e["id"] != current]
    onto["current"] = onto["before"] = None
    (folder / ".git" / MAILS / f"{current}.patch").unlink(missing_ok=True)
    write_record_doc(folder, record)


def _outcome(folder: Path, record: dict, action: str) -> OntoOutcome:
    onto = record["onto"]
    return OntoOutcome(record["target"], record["upstream"], folder, onto["ref"], onto["commit"], record["pin"],
                       action, carried=[Carried(**c) for c in onto.get("carried") or []],
                       skipped=list(onto.get("skipped") or []))


def _commits(repo: GitRepo, before: str) -> list[str]:
    out = repo.run("rev-list", "--reverse", f"{before}..HEAD")
    return out.split() if out else []


def _queued_sum(onto: dict, patch_id: str) -> str:
    return next((e["sha256"] for e in onto["queue"] if e["id"] == patch_id), "")


def _changed_paths(repo: GitRepo) -> list[str]:
    out = repo.run("diff", "--cached", "--name-only", "-z", "HEAD", strip=False)
    return [p for p in out.split("\0") if p]


def _marked(repo: GitRepo, folder: Path, paths: list[str]) -> list[str]:
    """Those of ``paths`` whose staged content still has a whole conflict block."""
    marked = []
    for path in paths:
        try:
            data = (folder / path).read_bytes()
        except OSError:
            continue
        if b"\n<<<<<<< " in b"\n" + data and b"\n=======" in data and b"\n>>>>>>> " in data:
            marked.append(path)
    return marked


def _paths(paths: list[str]) -> str:
    return ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
