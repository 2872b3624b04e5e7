"""``edit --continue``, ``--skip`` and ``--abort`` of a move that stopped (``maintain.onto``).

Each one works on a copy of the checkout in the edit slot's staging and swaps it in only when it is done
(``targets.slot``): a refusal, a failure or a kill leaves the checkout exactly as it was.

No work is lost and no patch leaves the series unasked:

- ``--continue`` after a git am that patchmgr started was ended outside it (``git am --abort`` or ``--skip``
  by hand) refuses, saying so: only an explicit ``--skip`` leaves a patch out;
- ``--abort`` keeps every commit made during the move, and every staged and unstaged change made since the
  stop (``StopMark``), on a ``patchmgr-saved/<UTC time>`` branch named in the output, before it goes back to
  the series at the pin.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

from patchmgr.io.faults import step
from patchmgr.io.files import remove_tree
from patchmgr.io.git import GitRepo, identity_env
from patchmgr.maintain.edit_checkout import locked_edit
from patchmgr.maintain.edit_record import PatchCommit, add_note, read_record
from patchmgr.maintain.export_guards import head_commit
from patchmgr.maintain.onto import (
    AM_COMMITTER,
    MAILS,
    MoveAction,
    MoveRun,
    OntoOutcome,
    checked,
    commits_since,
    done_current,
    index_digest,
    run_outcome,
    run_queue,
    work_tree_tree,
)
from patchmgr.maintain.onto_lost import BRANCH, lost_tips
from patchmgr.model.errors import GitError, StateError, UsageError
from patchmgr.model.mail import commit_spec
from patchmgr.model.patchfile import parse_patch
from patchmgr.model.project import Project
from patchmgr.targets.absent import leaving_out_absent
from patchmgr.targets.localwork import SAVED_PREFIX, utc_stamp
from patchmgr.targets.slot import begin, discard, stage_copy, swap_in


class ResumeAction(StrEnum):
    """How a stopped move goes on: each is the option it is given as (``--continue``, ``--skip``, ``--abort``)."""

    CONTINUE = "continue"
    SKIP = "skip"
    ABORT = "abort"


def resume_onto(
    project: Project, into: Path, action: ResumeAction, target: str | None = None, upstream: str | None = None
) -> OntoOutcome:
    """``--continue``, ``--skip`` or ``--abort`` of the move in ``into`` (made for ``target``/``upstream`` when
    given)."""
    into = into.resolve()
    notes: list[str] = []
    with locked_edit(into, notes) as slot:
        record = read_record(into)
        for option, given, made in (("--target", target, record.target), ("--upstream", upstream, record.upstream)):
            if given and given != made:
                raise UsageError(
                    f"{into} was made for {record.made_for()}, not {option} {given}",
                    f"leave {option} out: --{action} reads it from the checkout",
                )
        if record.onto is None:
            raise StateError(
                f"{into} is not moving to a new ref: no edit --onto to {action}",
                "start one with: patchmgr edit --target T --upstream NAME --into DIR --onto REF",
            )
        begin(slot)
        work = stage_copy(slot, into, record.upstream)
        try:
            with GitRepo(work) as repo:
                outcome = _resume(project, MoveRun(repo, work, into, record), action)
        except BaseException:
            discard(slot)
            raise
        swap_in(slot, {into: work})
    outcome.notes[:0] = notes
    return outcome


def _resume(project: Project, run: MoveRun, action: ResumeAction) -> OntoOutcome:
    repo, move = run.repo, run.move
    if action is ResumeAction.ABORT:
        return _abort(run)
    _on_the_branch(run, action)
    outcome = run_outcome(run, MoveAction.CONTINUED if action is ResumeAction.CONTINUE else MoveAction.SKIPPED)
    if action is ResumeAction.SKIP and move.current is None and move.queue and not repo.am_in_progress():
        move.current, move.before = move.queue[0].id, repo.resolve("HEAD")  # the one git refused (older records)
    if move.current is not None:
        if action is ResumeAction.CONTINUE:
            _continue_current(run, move.current)
        else:
            _skip_current(run, move.current, outcome)
    elif repo.am_in_progress():
        raise StateError(
            f"a git am that patchmgr did not start is in progress in {run.into}",
            f"finish it with git am --continue, --skip or --abort in {run.into}, then run again",
        )
    return checked(project, run_queue(run, outcome), run.work)


def _continue_current(run: MoveRun, current: str) -> None:
    """Record the commit made for ``current`` (the stopped patch, ``move.current``)."""
    repo, move, into = run.repo, run.move, run.into
    ended_by_hand = not repo.am_in_progress()  # git am --continue (or --abort, --skip) was run outside patchmgr
    if not ended_by_hand:
        unmerged = repo.unmerged_paths()
        if unmerged:
            raise StateError(
                f"{current}: {_paths(unmerged)} still {'has' if len(unmerged) == 1 else 'have'} "
                "conflicts; nothing was done",
                f"edit {'it' if len(unmerged) == 1 else 'them'} in {into} (remove the <<<<<<< ======= "
                f">>>>>>> markers), then: git -C {into} add {' '.join(unmerged)} && patchmgr edit "
                f"--continue --into {into}",
            )
        marked = _marked(run.work, _changed_paths(repo))
        if marked:
            raise StateError(
                f"{current}: conflict markers remain in {_paths(marked)}; nothing was done",
                f"resolve them in {into}, git add the files, then patchmgr edit --continue --into {into}",
            )
        try:
            repo.am_resume("continue", env=AM_COMMITTER)
        except GitError as exc:
            raise StateError(
                f"{current}: git am --continue refused: {exc.message.removeprefix('git am: ')}",
                f"git -C {into} add the resolved files, or leave the patch out with: patchmgr edit "
                f"--skip --into {into}",
            ) from None
        step()
    made = commits_since(repo, move.before)
    if not made:
        _refuse_lost_commits(run, ResumeAction.CONTINUE)
        raise _no_commit(run)
    if ended_by_hand:
        _refuse_a_commit_not_ams(run, current, made[0])
    add_note(repo, made[0], current)
    run.record.patches.append(
        PatchCommit(current, made[0], next((e.sha256 for e in move.queue if e.id == current), ""))
    )
    move.resolved.append(current)
    done_current(run)


def _refuse_a_commit_not_ams(run: MoveRun, current: str, commit: str) -> None:
    """The first commit since the stop, when git am was ended by hand, must be git am's commit of ``current``:
    the patch's subject and author (git am --continue by hand makes it so). Anything else (a commit made after
    a git am --abort by hand) is not the patch resolved, and never taken as it."""
    mail = run.mail(current)
    spec = commit_spec(parse_patch(mail.read_bytes(), mail, run.record.upstream, current))
    subject, address = run.repo.run("log", "-1", "--format=%s%x00%ae", commit).partition("\0")[::2]
    if subject == " ".join(spec.message.split("\n\n")[0].split()) and address == spec.address:
        return
    into = run.into
    raise StateError(
        f"{current}: the commit {commit[:12]} ({subject}) is not git am's commit of {current} (its subject or author "
        "differs): the git am of the stopped patch was ended outside patchmgr; nothing was done",
        f"give the move up with: patchmgr edit --abort --into {into} (it keeps that commit on a patchmgr-saved "
        f"branch), then start it again with edit --onto {run.move.ref}; or, if that commit is {current} resolved, "
        f"give it the patch's subject and author (git -C {into} commit --amend) and run patchmgr edit --continue "
        f"--into {into} again",
    )


def _on_the_branch(run: MoveRun, action: ResumeAction) -> None:
    """The move goes on only on its branch: HEAD switched elsewhere (git switch, git checkout) is said as that."""
    repo, into = run.repo, run.into
    try:
        head = repo.run("symbolic-ref", "-q", "HEAD")
    except GitError:
        head = ""
    if head == BRANCH:
        return
    where = f"on branch {head.removeprefix('refs/heads/')}" if head else f"detached at {repo.resolve('HEAD') or '?'}"
    raise StateError(
        f"HEAD in {into} is no longer on the move's branch patchmgr (it is {where}); nothing was done",
        f"go back with: git -C {into} switch patchmgr, then patchmgr edit --{action} --into {into}; or "
        f"give the move up with: patchmgr edit --abort --into {into} (it keeps every commit made during "
        "the move on a patchmgr-saved branch)",
    )


def _refuse_lost_commits(run: MoveRun, action: ResumeAction) -> None:
    """The branch moved back (git reset) past commits made during the move: never taken as a skip or an am ended
    by hand."""
    lost = lost_tips(run.repo, run.record, run.move)
    if lost:
        into = run.into
        raise StateError(
            f"{run.move.current}: the move's branch patchmgr was moved back; the commit "
            f"{lost[0][:12]} made during the move is on no branch now; nothing was done",
            f"bring it back with: git -C {into} reset --hard {lost[0][:12]}, then patchmgr edit "
            f"--{action} --into {into}; or give the move up with: patchmgr edit --abort --into {into} "
            "(it keeps every commit made during the move on a patchmgr-saved branch)",
        )


def _no_commit(run: MoveRun) -> StateError:
    """The stopped patch made no commit and no git am waits: never taken as a skip."""
    move, into = run.move, run.into
    restart = (
        f"start the move again with: patchmgr edit --abort --into {into}, then patchmgr edit --target "
        f"{run.record.target} --upstream {run.record.upstream} --into {into} --onto {move.ref}"
    )
    if move.stop is None or move.stop.am:
        return StateError(
            f"{move.current}: the git am that patchmgr started for it is no longer in progress and "
            "made no commit: it was ended outside patchmgr (git am --abort, --skip or --quit); "
            "nothing was done",
            f"to apply it again, {restart}; to leave it out of the series, say so with: patchmgr edit "
            f"--skip --into {into}",
        )
    return StateError(
        f"{move.current}: no commit was made for it (git could not apply it); nothing was done",
        f"make its change in {into} and commit it (git commit), then patchmgr edit --continue --into "
        f"{into}; or leave it out with: patchmgr edit --skip --into {into}",
    )


def _skip_current(run: MoveRun, current: str, outcome: OntoOutcome) -> None:
    """Leave ``current`` (the stopped patch, ``move.current``) out of the series."""
    repo, move = run.repo, run.move
    if repo.am_in_progress():
        repo.am_resume("skip", env=AM_COMMITTER)
        step()
    elif commits_since(repo, move.before):
        raise StateError(
            f"{current} is already committed ({commits_since(repo, move.before)[0][:12]}); there is nothing to skip",
            f"carry on with: patchmgr edit --continue --into {run.into}",
        )
    else:
        _refuse_lost_commits(run, ResumeAction.SKIP)
    move.skipped.append(current)
    outcome.notes.append(f"skipped {current}: export leaves it out of the series (and removes its file)")
    done_current(run)


def _abort(run: MoveRun) -> OntoOutcome:
    """Back to the series at the pin, after keeping every commit and change made during the move on a branch."""
    repo, record, move = run.repo, run.record, run.move
    outcome = run_outcome(run, MoveAction.ABORTED)
    kept = _work_of_the_move(run)
    work = [kept] if kept else []
    for tip in work + lost_tips(repo, record, move, tuple(work)):
        branch = _free_branch(repo, f"{SAVED_PREFIX}{utc_stamp()}")
        repo.run("branch", "-f", branch, tip)
        outcome.saved.append(branch)
        step()
    if repo.am_in_progress():
        repo.am_resume("abort", env=AM_COMMITTER)
    try:
        # everything in the work tree is on the saved branch now (or was what the move itself left there)
        with leaving_out_absent(repo, run.work, record.pin):  # back to the files the source lacks at the pin
            repo.run("checkout", "--quiet", "--force", "-B", "patchmgr", move.old_tip)
    except GitError as exc:
        raise StateError(
            f"cannot go back to the series at the pin in {run.into}: {exc.message}; nothing was changed",
            f"fix the cause, then patchmgr edit --abort --into {run.into} again",
        ) from None
    step()
    record.patches = move.old_patches
    record.onto = None
    run.save()
    remove_tree(run.work / ".git" / MAILS)
    outcome.commit, outcome.applied = record.pin, [(p.id, p.commit) for p in record.patches]
    return outcome


def _work_of_the_move(run: MoveRun) -> str | None:
    """A commit holding all the work of the move that going back would lose, or None when there is none.

    Work is: patches resolved by hand (``resolved``), commits made by hand (HEAD beyond the last commit the
    move recorded), and the index and work tree when they differ from what the stop left (``StopMark``; with
    no stop, from HEAD). The commit is HEAD, then the index (when it has no conflicts left) and then the work
    tree (untracked files too) committed on top, each only when it differs.
    """
    repo, record, move = run.repo, run.record, run.move
    head = head_commit(repo, run.work, "to keep the move's work on")
    tree = work_tree_tree(repo, run.work)
    head_tree = repo.run("rev-parse", f"{head}^{{tree}}")
    if move.stop is not None:
        changed = tree != move.stop.tree or index_digest(repo) != move.stop.index
    else:
        changed = tree != head_tree or not repo.run_ok("diff", "--cached", "--quiet", "HEAD")
    if not (move.resolved or head != record.tip() or changed):
        return None
    tip = head
    if changed:
        if not repo.unmerged_paths():
            staged = repo.run("write-tree")
            if staged != head_tree:
                tip = _commit(repo, staged, tip, "staged changes when the move was aborted")
        if tree != repo.run("rev-parse", f"{tip}^{{tree}}"):
            tip = _commit(repo, tree, tip, "work tree (tracked and untracked files) when the move was aborted")
    if tip == head and head == record.tip() and not move.resolved:
        return None  # the stop's state went, and nothing was made instead (a git am --abort by hand)
    return tip


def _commit(repo: GitRepo, tree: str, parent: str, what: str) -> str:
    message = f"patchmgr: {what}\n\nSaved by patchmgr edit --abort before going back to the series at the pin.\n"
    return repo.run("commit-tree", tree, "-p", parent, "-F", "-", stdin=message.encode(), env=identity_env())


def _free_branch(repo: GitRepo, name: str) -> str:
    branch, number = name, 2
    while repo.resolve(f"refs/heads/{branch}"):
        branch, number = f"{name}-{number}", number + 1
    return branch


def _changed_paths(repo: GitRepo) -> list[str]:
    out = repo.run("diff", "--cached", "--name-only", "-z", "HEAD", strip=False)
    return [p for p in out.split("\0") if p]


def _marked(folder: Path, paths: list[str]) -> list[str]:
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
