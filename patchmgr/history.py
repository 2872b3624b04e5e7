"""Walk an upstream's history between the pin and a ref: which commit broke a patch, or absorbed it.

No checkout and no binary search. Only a commit that changes one of the files
a patch (or an earlier patch of its series) touches can change the patch's
state, so the walk classifies the merge base and then each such commit on the
first-parent line, oldest first, with the engine reading blobs from the cache.
Those commits are few, so every one is checked, and a history where a patch
breaks, recovers and breaks again is reported as such instead of naming a
commit that a binary search would happen to land on.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from patchmgr.engine import State, check_series
from patchmgr.errors import StateError, UsageError
from patchmgr.gitio import CommitInfo, GitRepo, merge_texts
from patchmgr.manifest import Upstream
from patchmgr.patchfile import PatchFile
from patchmgr.project import Project
from patchmgr.sources import GitSource, open_git_source
from patchmgr.store import Store

_PR_NUMBER = (re.compile(r"\(#(\d+)\)"), re.compile(r"^Merge pull request #(\d+)"), re.compile(r"(?:^|\s)!(\d+)\b"))


def pr_number(subject: str) -> int | None:
    """The pull-request number a subject names: ``(#1234)``, ``Merge pull request #1234``, or gitcode's ``!1234``."""
    for pattern in _PR_NUMBER:
        found = pattern.findall(subject)
        if found:
            return int(found[-1])
    return None


@dataclass(frozen=True)
class Step:
    """A patch's state at one commit of the walk."""

    commit: str
    subject: str
    state: State

    @property
    def pr(self) -> int | None:
        return pr_number(self.subject)

    @property
    def applies(self) -> bool:
        return self.state.applies


@dataclass
class PatchHistory:
    patch: PatchFile
    state_at_to: State
    at_base: Step
    transitions: list[Step] = field(default_factory=list)  # each commit where the state changed
    carrier: Step | None = None  # the commit with the patch's own patch-id, if any
    commits_checked: int = 0

    @property
    def monotonic(self) -> bool:
        """The patch applied at the merge base and, once it stopped, never applied again."""
        flips, applied = 0, self.at_base.applies
        for step in self.transitions:
            flips += step.applies != applied
            applied = step.applies
        return self.at_base.applies and flips <= 1

    @property
    def first_commit(self) -> Step | None:
        """The commit where the patch stops applying; None when the history cannot name one."""
        if not self.monotonic:
            return None
        return next((s for s in self.transitions if not s.applies), None)

    @property
    def state(self) -> State:
        first = self.first_commit
        return first.state if first else self.state_at_to

    @property
    def note(self) -> str:
        if not self.at_base.applies and not any(s.applies for s in self.transitions):
            return (f"already {self.at_base.state.value} at the merge base {self.at_base.commit[:12]}: "
                    f"the pin's own branch has changes this patch needs")
        if not self.monotonic:
            path = " -> ".join([self.at_base.state.value] + [f"{s.state.value} at {s.commit[:12]}"
                                                              for s in self.transitions])
            return f"not monotonic ({path}): it stops applying more than once, so no single commit broke it"
        if self.carrier is not None:
            return f"commit {self.carrier.commit[:12]} carries the change (same patch-id)"
        return ""


@dataclass
class Bisection:
    upstream: Upstream
    ref: str
    to: str
    pin: str
    base: str
    commits_on_path: int
    patches: list[PatchHistory] = field(default_factory=list)
    applying: list[str] = field(default_factory=list)  # patches that apply at the ref: nothing to find
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(p.state_at_to.applies for p in self.patches)


def bisect_upstream(project: Project, upstream: Upstream, store: Store, overrides: Mapping[str, str],
                    ref: str, patch_ids: Sequence[str] = ()) -> Bisection:
    """For each patch that does not apply at ``ref`` (or each of ``patch_ids``), walk the history."""
    patches = project.patches(upstream)
    unknown = [pid for pid in patch_ids if pid not in upstream.patch_ids]
    if unknown:
        raise UsageError(f"no patch {', '.join(unknown)} in upstream {upstream.name} "
                         f"(it has: {', '.join(upstream.patch_ids) or 'none'})", "use a patch id from the manifest")
    open_git_source(store, upstream, None, overrides)
    target = open_git_source(store, upstream, ref, overrides)
    repo, to = target.repo, target.commit
    base = repo.merge_base(upstream.commit, to)
    if base is None:
        raise StateError(f"{upstream.name}: the pin {upstream.commit[:12]} and {ref} share no history",
                         "check that the ref belongs to the same upstream")
    at_to = check_series(patches, target, merge_texts)
    chosen = [i for i, r in enumerate(at_to) if (r.patch.id in patch_ids if patch_ids else not r.state.applies)]
    line = repo.first_parent_path(base, to)
    result = Bisection(upstream, ref, to, upstream.commit, base, len(line))
    if line and repo.commit_info(line[0]).parents[:1] != (base,):
        result.notes.append(f"the merge base {base[:12]} is not on {ref}'s first-parent line (a merge brought it "
                            "in): the first commits of the walk compare the two lines, not one change")
    result.applying = [r.patch.id for r in at_to if r.state.applies and r.patch.id not in patch_ids]
    if not chosen:
        return result
    walk = Walk(repo, base, to, target.location, patches[: max(chosen) + 1])
    carriers = {i: find_carrier(repo, base, to, patches[i]) for i in chosen}
    result.patches = [walk.history(i, at_to[i].state, carriers[i]) for i in chosen]
    return result


class Walk:
    """The series classified at the merge base and at each commit that touches its files."""

    def __init__(self, repo: GitRepo, base: str, to: str, location: str, series: list[PatchFile]) -> None:
        self.repo, self.base, self.to, self.location, self.series = repo, base, to, location, series
        repo.prefetch_blobs(base, to, sorted({p for patch in series for p in patch.touched_paths}))
        self._states: dict[str, list[State]] = {}

    def states_at(self, commit: str) -> list[State]:
        if commit not in self._states:
            source = GitSource(self.repo, commit, self.location)
            self._states[commit] = [r.state for r in check_series(self.series, source, merge_texts)]
        return self._states[commit]

    def history(self, index: int, state_at_to: State, carrier: CommitInfo | None) -> PatchHistory:
        """One patch's steps, at the commits touching files of it or of the patches before it."""
        paths = sorted({p for patch in self.series[: index + 1] for p in patch.touched_paths})
        commits = self.repo.commits_touching(self.base, self.to, paths)
        at_base = Step(self.base, self.repo.commit_info(self.base).subject, self.states_at(self.base)[index])
        history = PatchHistory(self.series[index], state_at_to, at_base, commits_checked=len(commits) + 1)
        carried = False
        previous = at_base.state
        for commit in commits:
            state = self.states_at(commit.sha)[index]
            carried = carried or (carrier is not None and commit.sha == carrier.sha)
            if carried and not state.applies:
                # The patch's own change landed at the carrier; later upstream edits of
                # the same lines make its reverse fail, but the change is upstream's.
                state = State.UPSTREAM
            if state is not previous:
                history.transitions.append(Step(commit.sha, commit.subject, state))
                previous = state
        if carrier is not None:
            history.carrier = Step(carrier.sha, carrier.subject, State.UPSTREAM)
            if not state_at_to.applies:
                history.state_at_to = State.UPSTREAM
        return history


def find_carrier(repo: GitRepo, base: str, to: str, patch: PatchFile) -> CommitInfo | None:
    """The first commit after ``base`` up to ``to`` whose change to the patch's files has its patch-id."""
    wanted = repo.patch_id(patch.data)
    if wanted is None:
        return None
    for patch_id, commit in repo.path_patch_ids(base, to, patch.touched_paths, context_size(patch)):
        if patch_id == wanted:
            return repo.commit_info(commit)
    return None


def context_size(patch: PatchFile) -> int:
    """The context size the patch was made with (3 unless it says otherwise)."""
    sizes = [max(h.leading, h.trailing) for d in patch.files for h in d.hunks if d.kind == "modify"]
    return max(sizes, default=3) or 3
