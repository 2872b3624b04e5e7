"""Commits made during an ``edit --onto`` move that no ref keeps: what ``--abort`` must save and what
``--continue`` must not take for a git am ended by hand (patchmgr's own clean git am commits are not work).

A move's commits are made on the ``patchmgr`` branch (by patchmgr's git am, or by hand: ``git am --continue``,
``git commit``). Going back to the pin moves that branch; a commit is lost when nothing else reaches it. Those
looked at: HEAD, the branch's tip, the commits the record names (resolved patches), and every commit HEAD or the
branch pointed at since (their reflogs), each only when it is beyond the move's new base.
"""

from __future__ import annotations

from patchmgr.io.git import GitRepo
from patchmgr.maintain.edit_record import EditRecord, Move
from patchmgr.model.errors import GitError

BRANCH = "refs/heads/patchmgr"


def lost_tips(repo: GitRepo, record: EditRecord, move: Move, kept: tuple[str, ...] = ()) -> list[str]:
    """The tips of the move's commits that would be on no ref once the ``patchmgr`` branch and HEAD move
    (``kept``: commits that will be on a ref anyway); none is an ancestor of another."""
    looked_at = [
        repo.resolve("HEAD"),
        repo.resolve(BRANCH),
        *(p.commit for p in record.patches),
        *_reflog(repo, "HEAD"),
        *_reflog(repo, BRANCH),
    ]
    beyond = [
        c
        for c in dict.fromkeys(c for c in looked_at if c)
        if c != move.commit and repo.run_ok("merge-base", "--is-ancestor", move.commit, c)
    ]
    if not beyond:
        return []
    staying = [
        line.split(" ", 1)[0]
        for line in repo.run("for-each-ref", "--format=%(objectname) %(refname)").splitlines()
        if line.split(" ", 1)[1:] != [BRANCH]
    ]
    # patchmgr's own git am commits (applied cleanly, not resolved) are no one's work: the patch files make them
    applied = [p.commit for p in record.patches if p.id not in move.resolved]
    wanted = "".join(f"{c}\n" for c in beyond) + "".join(f"^{c}\n" for c in (*staying, *kept, *applied, move.old_tip))
    lost = set(repo.run("rev-list", "--stdin", stdin=wanted.encode()).split())
    tips = [c for c in beyond if c in lost]
    if len(tips) > 1:
        independent = set(repo.run("merge-base", "--independent", *tips).split())
        tips = [c for c in tips if c in independent]
    return tips


def _reflog(repo: GitRepo, ref: str) -> list[str]:
    try:
        return repo.run("reflog", "show", "--format=%H", ref, "--").split()
    except GitError:  # no reflog (core.logAllRefUpdates off, or a ref never written)
        return []
