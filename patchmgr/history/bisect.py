"""bisect: for each patch, the first commit between the pin and a ref where its state changes, from one walk."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from patchmgr.history.at_ref import check_at_ref
from patchmgr.history.backports import BackportCheck, Landed, named_by, named_text, same_repository
from patchmgr.history.carriers import find_carriers
from patchmgr.history.walk import PatchHistory, Walk, broken_guards
from patchmgr.model.errors import StateError, UsageError
from patchmgr.model.manifest import Upstream
from patchmgr.model.project import Project
from patchmgr.sources.upstream import Sources


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
    # patch id -> each pull request or commit it names, and whether the pin / the ref has it (history.backports)
    backports_at_pin: dict[str, tuple[Landed, ...]] = field(default_factory=dict)
    backports_at_to: dict[str, tuple[Landed, ...]] = field(default_factory=dict)
    named: dict[str, str] = field(default_factory=dict)  # patch id -> what its first commit is to it, if it names it

    @property
    def ok(self) -> bool:
        return all(p.state_at_to.applies and not p.guards_broken_at_to for p in self.patches)


# told each patch's history as soon as it is found, with how many of how many are done: a whole series' bisect
# over thousands of commits takes a while, and its answers come one by one
Found = Callable[[PatchHistory, int, int], None]


def bisect_upstream(
    project: Project,
    upstream: Upstream,
    sources: Sources,
    ref: str,
    patch_ids: Sequence[str] = (),
    on_found: Found | None = None,
) -> Bisection:
    """For each patch that does not apply at ``ref``, or whose guards break there (or each of ``patch_ids``),
    walk the history: a commit where a guard breaks counts as the patch breaking there. The patches share one
    walk (``Walk``: each commit's check, by the entries of the files it reads) and one patch-id pass over the
    range (``find_carriers``); ``on_found`` hears each patch's answer as it is found."""
    patches = project.patches(upstream)
    unknown = [pid for pid in patch_ids if pid not in upstream.patch_ids]
    if unknown:
        raise UsageError(
            f"no patch {', '.join(unknown)} in upstream {upstream.name} "
            f"(it has: {', '.join(upstream.patch_ids) or 'none'})",
            "use a patch id from the manifest",
        )
    sources.open_git(upstream, None)
    target = sources.open_git(upstream, ref)
    repo, to = target.repo, target.commit
    base = repo.merge_base(upstream.commit, to)
    if base is None:
        raise StateError(
            f"{upstream.name}: the pin {upstream.commit[:12]} and {ref} share no history",
            "check that the ref belongs to the same upstream",
        )
    # the states at the ref as every command reads them (check_at_ref); the carriers are bisect's own search below
    at_to = check_at_ref(sources, upstream, target, patches, explain=False)
    fine = [r.ok for r in at_to]
    chosen = [i for i, r in enumerate(at_to) if (r.patch.id in patch_ids if patch_ids else not fine[i])]
    line = repo.first_parent_path(base, to)
    result = Bisection(upstream, ref, to, upstream.commit, base, len(line))
    if line and repo.commit_info(line[0]).parents[:1] != (base,):
        result.notes.append(
            f"the merge base {base[:12]} is not on {ref}'s first-parent line (a merge brought it "
            "in): the first commits of the walk compare the two lines, not one change"
        )
    result.applying = [r.patch.id for i, r in enumerate(at_to) if fine[i] and r.patch.id not in patch_ids]
    check = BackportCheck(repo, upstream, patches)
    result.backports_at_pin, result.backports_at_to = check.at(upstream.commit), check.at(to)
    if not chosen:
        return result
    walk = Walk(repo, base, to, target.location, patches[: max(chosen) + 1])
    carriers = find_carriers(repo, upstream, base, to, patches, chosen)  # what status --against finds, too
    for done, i in enumerate(chosen, 1):
        result.patches.append(walk.history(i, at_to[i].state, carriers.get(i), broken_guards(at_to[i])))
        if on_found is not None:
            on_found(result.patches[-1], done, len(chosen))
    for history in result.patches:
        step = history.first_commit or history.carrier
        references = [r for r in check.references.get(history.patch.id, ()) if same_repository(r, upstream)]
        reference = named_by(references, step.commit, step.subject) if step else None
        if reference is not None:
            result.named[history.patch.id] = named_text(reference)
    return result
