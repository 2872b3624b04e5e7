"""Find the upstream commit a monolithic patch was made against (its base), and say how it was found.

In this order:

1. the pin the user or the Dockerfile gives, when the patch applies there (clean or offset);
2. the preimage blob ids of the patch's ``index`` lines: along the first-parent line of the search tip,
   the newest commit at which every file whose blob id the upstream has holds exactly that blob. Blob
   ids the upstream never had (a patch made with ``git diff`` in a dirty tree, or written by hand) are
   left out and named;
3. otherwise the commit nearest the given pin (or the newest) at which the patch applies cleanly, found
   with the history walk: only commits that change the patch's files can change whether it applies, and
   each distinct state of those files is classified once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from patchmgr.engine.classify import check_patch
from patchmgr.engine.results import State
from patchmgr.history.walk import Walk
from patchmgr.io.git import GitRepo
from patchmgr.model.errors import UsageError
from patchmgr.model.patchfile import PatchFile
from patchmgr.sources.upstream import GitSource



@dataclass
class Base:
    commit: str
    how: str  # "given", "index", "applies"
    detail: str
    notes: list[str] = field(default_factory=list)


def find_base(repo: GitRepo, location: str, patch: PatchFile, given: str | None, search: Callable[[], str]) -> Base:
    """``search`` gives the tip of the line to search (fetched only when the given pin does not fit)."""
    notes: list[str] = []
    if given is not None:
        state = check_patch(patch, GitSource(repo, given, location)).state
        if state.applies:
            return Base(given, "given", f"the patch applies at the given pin ({state.value})")
        notes.append(f"the monolithic patch does not apply at the given pin {given[:12]} ({state.value}): "
                     "searched for its base")
    tip = search()
    line = _line(repo, tip, patch.touched_paths)
    by_blobs = _by_blobs(repo, patch, line, tip, notes)
    if by_blobs is not None:
        state = check_patch(patch, GitSource(repo, by_blobs.commit, location)).state
        if state.applies:
            by_blobs.notes = notes + by_blobs.notes
            return by_blobs
        notes.append(f"the index lines point at {by_blobs.commit[:12]}, but the patch is {state.value} there")
    found = _by_applying(repo, location, patch, line, tip, given)
    if found is None:
        raise UsageError(f"{patch.path}: found no upstream commit on the line of {tip[:12]} where the patch applies "
                         "(" + "; ".join(notes or ["no index line names an upstream blob"]) + ")",
                         "pass --pin NAME=REF naming the commit it was made against, or --source a clone that "
                         "has it")
    found.notes = notes + found.notes
    return found


def _line(repo: GitRepo, tip: str, paths: list[str]) -> list[tuple[str, str | None]]:
    """Commits on ``tip``'s first-parent line that change ``paths``, newest first, with their first parents."""
    out = repo.run("log", "--first-parent", "--format=%H %P", tip, "--", *paths, env={"GIT_LITERAL_PATHSPECS": "1"})
    line = []
    for text in out.splitlines():
        parts = text.split()
        line.append((parts[0], parts[1] if len(parts) > 1 else None))
    return line


def _segments(line: list[tuple[str, str | None]], tip: str) -> list[tuple[str, str]]:
    """(oldest, newest) commit of each stretch of the line where the files stay the same, newest stretch first."""
    segments = []
    newer_parent = tip
    for commit, parent in line:
        segments.append((commit, newer_parent))
        newer_parent = parent or commit
    return segments


def _by_blobs(repo: GitRepo, patch: PatchFile, line: list[tuple[str, str | None]], tip: str,
              notes: list[str]) -> Base | None:
    wanted = [(d.old_path, d.old_blob) for d in patch.files
              if d.kind != "add" and d.old_path and d.old_blob and set(d.old_blob) != {"0"}]
    if not wanted:
        return None
    paths = [path for path, _ in wanted]
    segments = _segments(line, tip)
    entries = [(segment, repo.path_entries(segment[0], paths)) for segment in segments]
    known = [index for index, (path, blob) in enumerate(wanted)
             if any(e[index] is not None and e[index][1].startswith(blob) for _, e in entries)]
    fake = [wanted[index] for index in range(len(wanted)) if index not in known]
    if fake:
        notes.append("index lines name blobs the upstream never had, left out: "
                     + ", ".join(f"{path} ({blob[:12]})" for path, blob in fake))
    if not known:
        return None
    for (oldest, newest), found in entries:
        if all(found[i] is not None and found[i][1].startswith(wanted[i][1]) for i in known):
            span = f"{oldest[:12]}..{newest[:12]}" if oldest != newest else oldest[:12]
            return Base(newest, "index", f"the preimage blobs of {len(known)} of {len(wanted)} files (index lines) "
                        f"are upstream's at {span}; the newest of them")
    notes.append(f"the preimage blobs of {len(known)} files never stand together at one upstream commit")
    return None


def _by_applying(repo: GitRepo, location: str, patch: PatchFile, line: list[tuple[str, str | None]], tip: str,
                 given: str | None) -> Base | None:
    segments = _segments(line, tip)
    if not segments:
        return None
    walk = Walk(repo, segments[-1][0], tip, location, [patch])
    order = [newest for _oldest, newest in segments]
    if given is not None and given in [c for s in segments for c in s]:
        at = next(i for i, s in enumerate(segments) if given in s)
        order = sorted(order, key=lambda commit: abs(order.index(commit) - at))
    states = {commit: walk.state_at(0, commit) for commit in order}
    for wanted in (State.CLEAN, State.OFFSET):
        for commit in order:
            if states[commit] is wanted:
                near = "nearest the given pin" if given is not None else "newest"
                return Base(commit, "applies", f"the {near} commit where the patch applies ({wanted.value}); "
                            f"{len(order)} states of its files checked along {tip[:12]}")
    return None
