"""The trees ``smoke`` tests, only once the build is proven to be what ``apply`` wrote, as ``verify`` proves it.

Every smoke mode (patched, ``--unpatched``, ``--both``) over a build (``--into DIR``, with or without ``--python``
for the interpreter, or ``--python`` alone: an environment ``apply --python`` patched) takes its trees from here. A
patch changed since apply, a patch added to or removed from the series, a moved pin or a file of the build edited
by hand would make smoke test something other than the patches it names: such a build is refused (exit 1), with
what differs and the apply that rebuilds it. An upstream that no apply wrote there stays in the trees without a
root, so its patches are not proven, with that reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from patchmgr.model.errors import StateError
from patchmgr.model.manifest import Target
from patchmgr.model.project import Project
from patchmgr.targets.checkout_verify import verify_into
from patchmgr.targets.trees import SmokeTree, checkout_trees


def verified_trees(project: Project, target: Target, place: Path | str, only: Sequence[str] = ()) -> list[SmokeTree]:
    """Each asked upstream's tree in ``place`` (DIR of ``apply --into``, or the interpreter of ``apply --python``),
    after the build is checked against its ledger by verify's own comparison (``verify_into``,
    ``verify_opened``); a build that differs is a ``StateError`` naming every difference."""
    if isinstance(place, str):  # (the installed side's modules load only for it)
        from patchmgr.targets.env_state import open_environment
        from patchmgr.targets.env_verify import verify_opened
        from patchmgr.targets.installed import environment_trees

        environment, upstreams = open_environment(place, target, only)
        trees = environment_trees(target, environment, upstreams)  # a missing or other version first: exit 2
        env = verify_opened(project, target, environment, upstreams)
        recovered = trees[0].notes if trees else []  # environment_trees finished or undid an interrupted apply
        _refuse_differences(env.differences, f"{environment.python}'s environment", target, env.hint, recovered)
        return trees
    into = verify_into(project, target, place, only)  # it finishes or undoes an interrupted apply first
    _refuse_differences(into.differences, str(into.into), target, into.hint, into.notes)
    trees = checkout_trees(target, place, only)
    if trees:
        trees[0].notes[:0] = into.notes
    return trees


def _refuse_differences(
    differences: Sequence[str], where: str, target: Target, hint: str, notes: Sequence[str]
) -> None:
    if not differences:
        return
    error = StateError(
        f"{where} differs from what `patchmgr apply` wrote for target {target.name}, so smoke would not test "
        f"these patches: {'; '.join(differences)}",
        hint,
    )
    error.notes += notes
    raise error
