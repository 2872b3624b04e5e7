"""What matrix columns share: a column's explanation of a patch that reads ``upstream`` (the walk from the merge
base that names where its reverse starts to apply) is an earlier column's where nothing the walk reads changed
between them. ``matrix._check_columns`` asks before it walks again."""

from __future__ import annotations

from patchmgr.engine.results import CheckResult
from patchmgr.io.git import GitRepo
from patchmgr.model.patchfile import PatchFile


def same_walk(
    repo: GitRepo,
    engine: dict[str, list[CheckResult]],
    done: list[str],
    bases: dict[str, str],
    lines: dict[str, set[str]],
    patches: list[PatchFile],
    commit: str,
    index: int,
) -> str | None:
    """The latest column explained before ``commit`` whose explanation of patch ``index`` is ``commit``'s too:
    on ``commit``'s first-parent line from the same merge base, the engine's result there equal to this one, and
    no commit between the two changing a file of the series up to that patch (what the walk reads). Columns then
    share the walk wherever those files did not change between them."""
    paths = {p for patch in patches[: index + 1] for p in patch.touched_paths}
    for earlier in reversed(done):
        if bases.get(earlier) != bases[commit] or engine[earlier][index] != engine[commit][index]:
            continue
        if commit not in lines:
            lines[commit] = set(repo.first_parent_path(bases[commit], commit))
        if earlier not in lines[commit]:
            continue
        if paths & _changed(repo, earlier, commit):
            return None  # the files changed after it: a later column cannot be nearer
        return earlier
    return None


_CHANGED: dict[tuple[str, str], set[str]] = {}


def _changed(repo: GitRepo, base: str, tip: str) -> set[str]:
    if (base, tip) not in _CHANGED:
        _CHANGED[(base, tip)] = repo.paths_changed(base, tip)
    return _CHANGED[(base, tip)]
