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

import fnmatch
import re
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field

from patchmgr.engine.classify import check_series
from patchmgr.engine.results import CheckResult, Needed, State
from patchmgr.history.carriers import Carrier
from patchmgr.history.deletions import held_to_base
from patchmgr.io.git import GitRepo
from patchmgr.io.git_merge import merge_texts
from patchmgr.model.guards import parse_guard
from patchmgr.model.patchfile import PatchFile
from patchmgr.sources.upstream import GitSource

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
    # the patch's broken guards at this commit, each "guard: offense" (model/guards.py): a commit where one
    # breaks counts as the patch breaking there, even when it still applies
    guards_broken: tuple[str, ...] = ()
    # a knock-on failure here: the earlier patches it fails for want of (engine.knock_on); the commit broke them
    needs: tuple[Needed, ...] = ()

    @property
    def pr(self) -> int | None:
        return pr_number(self.subject)

    @property
    def applies(self) -> bool:
        return self.state.applies and not self.guards_broken

    @property
    def label(self) -> str:
        """``clean``, or ``clean, guard broken``."""
        return self.state.value + (", guard broken" if self.guards_broken else "")


@dataclass
class PatchHistory:
    patch: PatchFile
    state_at_to: State
    at_base: Step
    transitions: list[Step] = field(default_factory=list)  # each commit where the state changed
    carrier: Step | None = None  # the commit that carries the patch's change (history.carriers), if any
    carried_how: str = ""  # how that commit was found: ``same patch-id``, ``its Origin names it``
    commits_checked: int = 0
    guards_broken_at_to: tuple[str, ...] = ()  # as in ``Step``, at the ref

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
        first = next((s for s in self.transitions if not s.applies), None)
        return None if first is not None and first.needs else first  # it broke an earlier patch, not this one

    @property
    def state(self) -> State:
        first = self.first_commit
        return first.state if first else self.state_at_to

    @property
    def note(self) -> str:
        if not self.at_base.applies and not any(s.applies for s in self.transitions):
            return (
                f"already {self.at_base.label} at the merge base {self.at_base.commit[:12]}: "
                f"the pin's own branch has changes this patch needs"
            )
        if not self.monotonic:
            path = " -> ".join([self.at_base.label] + [f"{s.label} at {s.commit[:12]}" for s in self.transitions])
            return f"not monotonic ({path}): it stops applying more than once, so no single commit broke it"
        knocked = next((s for s in self.transitions if not s.applies), None) if self.carrier is None else None
        if knocked is not None and knocked.needs:
            return (
                "; ".join(needed.text for needed in knocked.needs) + f" from commit {knocked.commit[:12]} on: "
                "that commit broke the earlier patch, not this one"
            )
        if self.carrier is not None:
            return f"commit {self.carrier.commit[:12]} carries the change ({self.carried_how})"
        first = self.first_commit
        if first is not None and first.guards_broken:
            return f"commit {first.commit[:12]} breaks its guard: " + "; ".join(first.guards_broken)
        return ""


def broken_guards(result: CheckResult) -> tuple[str, ...]:
    """Each broken guard of ``result`` with its offenses, as one line each: ``guard: path:line: text; ...``."""
    return tuple(
        f"{g.guard}: {'; '.join((*g.offense_lines, *([g.error] if g.error else [])))}"
        for g in result.guards
        if not g.holds
    )


def guard_paths(patch: PatchFile, listing: list[str] | None) -> list[str]:
    """The files ``patch``'s guards read: each plain path, and what each glob matches in ``listing``."""
    paths: list[str] = []
    for text in patch.field_values("Guard"):
        guard = parse_guard(text)
        if not guard.is_glob:
            paths.append(guard.where)
        elif listing is not None:
            paths += [p for p in listing if fnmatch.fnmatchcase(p, guard.where)]
    return paths


def _reads(patch: PatchFile, guarded: Iterable[str] = ()) -> set[str]:
    """The paths whose content or kind a check of ``patch`` reads: its files (and ``guarded``, the files its
    guards read) and the folders above them."""
    reads: set[str] = set()
    for path in [*patch.touched_paths, *guarded]:
        parts = path.split("/")
        reads.update("/".join(parts[:depth]) for depth in range(1, len(parts) + 1))
    return reads


def related(series: list[PatchFile], index: int, guarded: dict[int, list[str]] | None = None) -> list[int]:
    """The patches up to ``index`` whose files can change its state: it, and those writing what it reads, or what
    a patch so chosen reads (``guarded``: the files each patch's guards read)."""
    guarded = guarded or {}
    reads, chosen = _reads(series[index], guarded.get(index, ())), [index]
    for other in range(index - 1, -1, -1):
        if reads.intersection(series[other].touched_paths):
            chosen.append(other)
            reads |= _reads(series[other], guarded.get(other, ()))
    return sorted(chosen)


def independent_groups(series: list[PatchFile], guarded: dict[int, list[str]] | None = None) -> list[tuple[int, ...]]:
    """The series split into groups that share no path: no patch of one group writes what another reads.

    A patch's state depends on the patches before it only through the files they
    write, so each group can be checked alone, in series order, with the same
    results as the whole series.
    """
    parent = list(range(len(series)))

    def root(index: int) -> int:
        while parent[index] != index:
            parent[index] = parent[parent[index]]
            index = parent[index]
        return index

    readers: dict[str, list[int]] = {}
    for index, patch in enumerate(series):
        for path in _reads(patch, (guarded or {}).get(index, ())):
            readers.setdefault(path, []).append(index)
    for index, patch in enumerate(series):
        for path in patch.touched_paths:
            for other in readers.get(path, ()):
                parent[root(other)] = root(index)
    groups: dict[int, list[int]] = {}
    for index in range(len(series)):
        groups.setdefault(root(index), []).append(index)
    return sorted(tuple(group) for group in groups.values())


class _Classified:
    """A group's states, broken guards and needs by what decides them (its patches, the base, the entries of what
    they read), shared by every walk of the process: a matrix walks from one merge base toward each of its
    columns, and those walks meet the same commits and the same files again. The patches are kept with their
    answer, so an id is never taken for another patch's; the least recently used are dropped past ``limit``."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.kept: OrderedDict[tuple[object, ...], tuple] = OrderedDict()

    def get(self, key: tuple[object, ...]) -> tuple | None:
        found = self.kept.get(key)
        if found is not None:
            self.kept.move_to_end(key)
        return found

    def put(self, key: tuple[object, ...], value: tuple) -> None:
        self.kept[key] = value
        if len(self.kept) > self.limit:
            self.kept.popitem(last=False)


_CLASSIFIED = _Classified(50_000)


class Walk:
    """The series classified at the merge base and at each commit that touches its files.

    A check reads only the patches' files and the kinds of the folders above
    them, so a group of patches (``independent_groups``) is classified once per
    distinct set of those entries: a commit that changes none of them costs a
    few lookups in the cached trees, not a check. That is what makes a sweep
    over consecutive commits cheap, where most commits leave a patch's file alone.
    """

    def __init__(
        self, repo: GitRepo, base: str, to: str, location: str, series: list[PatchFile], blame: bool = True
    ) -> None:
        """``blame``: each step names the earlier patches a knock-on failure needs (``check_series``); off for a
        caller that asks only where a patch turns ``upstream`` (``evidence``), which the blame never changes."""
        self.repo, self.base, self.to, self.location, self.series = repo, base, to, location, series
        self._blame = blame
        self._prefetched: set[str] = set()
        if not repo.history_indexed(to):  # fetched lazily, or before patchmgr wrote commit-graphs
            repo.index_history(to)
        # a guard's glob is followed through the files it matches at the ref
        globs = any(parse_guard(t).is_glob for patch in series for t in patch.field_values("Guard"))
        listing = repo.file_paths(to) if globs else None
        self._guarded = {i: guard_paths(patch, listing) for i, patch in enumerate(series)}
        self._groups = independent_groups(series, self._guarded)
        self._group_of = {index: group for group in self._groups for index in group}
        self._inputs: dict[tuple[int, ...], tuple[list[str], int]] = {}
        for group in self._groups:
            files = sorted({p for i in group for p in [*series[i].touched_paths, *self._guarded[i]]})
            folders = sorted(set().union(*(_reads(series[i], self._guarded[i]) for i in group)) - set(files))
            self._inputs[group] = (files + folders, len(files))
        self._states: dict[tuple, list[State]] = {}
        self._broken: dict[tuple, list[tuple[str, ...]]] = {}
        self._needs: dict[tuple, list[tuple[Needed, ...]]] = {}
        self.checks = 0  # groups classified by the engine, for the benchmarks

    def prefetch(self, paths: Iterable[str]) -> None:
        """Fetch in one request the blobs of ``paths`` between base and tip that a partial clone lacks."""
        wanted = sorted(set(paths) - self._prefetched)
        if wanted:
            self.repo.prefetch_blobs(self.base, self.to, wanted)
            self._prefetched.update(wanted)

    def states_at(self, commit: str) -> list[State]:
        """The state of each patch of the series at ``commit``."""
        self.prefetch(p for patch in self.series for p in patch.touched_paths)
        states: list[State] = [State.CLEAN] * len(self.series)
        for group in self._groups:
            for index, state in zip(group, self._group_states(group, commit), strict=True):
                states[index] = state
        return states

    def state_at(self, index: int, commit: str) -> State:
        """The state of patch ``index`` at ``commit`` (its group alone is classified)."""
        group = self._group_of[index]
        self.prefetch(self.group_paths([index]))  # one request for the whole walk, not one blob per commit
        return self._group_states(group, commit)[group.index(index)]

    def guards_at(self, index: int, commit: str) -> tuple[str, ...]:
        """Patch ``index``'s broken guards at ``commit`` (``broken_guards``); empty when they hold."""
        group = self._group_of[index]
        return self._broken[self._key(group, commit)][group.index(index)]

    def needs_at(self, index: int, commit: str) -> tuple[Needed, ...]:
        """The earlier patches that patch ``index`` fails for want of at ``commit`` (``engine.knock_on``)."""
        group = self._group_of[index]
        return self._needs[self._key(group, commit)][group.index(index)]

    def _key(self, group: tuple[int, ...], commit: str) -> tuple:
        paths, files = self._inputs[group]
        entries = self.repo.path_entries(commit, paths)
        # files by content, folders above them by kind only (the engine checks that they are folders)
        key = (group, entries[:files], tuple(entry and entry[0] for entry in entries[files:]))
        if key not in self._states:
            patches = tuple(self.series[i] for i in group)
            # the same patches over the same entries from the same base: another walk's answer (_Classified)
            shared = (
                None if commit == self.base else self.base,
                self._blame,
                tuple(map(id, patches)),
                tuple(paths),
                *key[1:],
            )
            found = _CLASSIFIED.get(shared)
            if found is not None and all(a is b for a, b in zip(found[0], patches, strict=True)):
                self._states[key], self._broken[key], self._needs[key] = found[1:]
                return key
            source = GitSource(self.repo, commit, self.location)
            results = check_series(list(patches), source, merge_texts, self._blame)
            # a deletion-only patch is upstream at a commit only where its lines were there at the base (deletions)
            at_base = None if commit == self.base else lambda: self._group_states(group, self.base)
            self._states[key] = held_to_base(results, at_base)
            self._broken[key] = [broken_guards(r) for r in results]
            self._needs[key] = [r.needs for r in results]
            _CLASSIFIED.put(shared, (patches, self._states[key], self._broken[key], self._needs[key]))
            self.checks += len(group)
        return key

    def _group_states(self, group: tuple[int, ...], commit: str) -> list[State]:
        return self._states[self._key(group, commit)]

    def group_paths(self, indexes: Iterable[int]) -> list[str]:
        """The files of the groups of the patches ``indexes``: what classifying them reads at each commit."""
        return sorted(
            {
                p
                for index in indexes
                for i in self._group_of[index]
                for p in [*self.series[i].touched_paths, *self._guarded[i]]
            }
        )

    def related(self, index: int) -> list[int]:
        """The patches up to ``index`` whose files can change its state: it, and those writing what it reads."""
        return related(self.series, index, self._guarded)

    def history(
        self, index: int, state_at_to: State, carrier: Carrier | None, guards_broken_at_to: tuple[str, ...] = ()
    ) -> PatchHistory:
        """One patch's steps, at the commits touching files of it, of its guards, or of the earlier patches it
        depends on. A step is a change of state, or of whether the patch's guards hold."""
        self.prefetch(self.group_paths([index]))
        paths = sorted({p for i in self.related(index) for p in [*self.series[i].touched_paths, *self._guarded[i]]})
        commits = self.repo.commits_touching(self.base, self.to, paths)
        at_base = Step(
            self.base,
            self.repo.commit_info(self.base).subject,
            self.state_at(index, self.base),
            self.guards_at(index, self.base),
        )
        history = PatchHistory(
            self.series[index],
            state_at_to,
            at_base,
            commits_checked=len(commits) + 1,
            guards_broken_at_to=guards_broken_at_to,
        )
        carried = False
        previous = (at_base.state, bool(at_base.guards_broken))
        for commit in commits:
            state = self.state_at(index, commit.sha)
            broken = self.guards_at(index, commit.sha)
            carried = carried or (carrier is not None and commit.sha == carrier.sha)
            if carried and not state.applies:
                # The patch's own change landed at the carrier; later upstream edits of
                # the same lines make its reverse fail, but the change is upstream's.
                state, broken = State.UPSTREAM, ()
            if (state, bool(broken)) != previous:
                history.transitions.append(
                    Step(commit.sha, commit.subject, state, broken, self.needs_at(index, commit.sha))
                )
                previous = (state, bool(broken))
        if carrier is not None:
            history.carrier = Step(carrier.sha, carrier.subject, State.UPSTREAM)
            history.carried_how = carrier.how
            if not state_at_to.applies:
                history.state_at_to = State.UPSTREAM
        return history
