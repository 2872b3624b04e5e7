"""Files a source lacks (a mirror without its large blobs): left out of a checkout's work tree, and said so.

A partial mirror may lack the blobs of large files. A checkout from it keeps such paths in git's index (so
commits and ``git status`` stay exact) and out of the work tree, with git's sparse checkout. Which paths
is read from the tree of the commit being checked out, every path whose blob the source lacks: the same blob
can sit at several paths, and a later ref (``edit --onto``) can have it at paths the pin did not. Every
command that checks out (apply, edit, edit --onto) reports the paths with ``absent_note``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from patchmgr.io.git import GitRepo
from patchmgr.model.errors import GitError
from patchmgr.model.urls import as_local_path

_PATTERN_SPECIAL = re.compile(r"([\\*?\[\]])")


def leave_out_absent(repo: GitRepo, folder: Path, commit: str, absent: list[str] | None = None) -> list[str]:
    """Make the next checkout of ``commit`` in ``folder`` leave out every path of its tree whose blob the
    source (``origin``, when it is a folder on this machine) lacks, or the ``absent`` paths given (what
    ``patchmgr fetch`` recorded for the cache). Run before each checkout: the patterns are those of ``commit``
    alone. A source that cannot be asked (a URL) leaves the patterns as they are. The paths left out."""
    if absent is None:
        absent = missing_in_origin(repo, commit)
        if absent is None:
            return []
    info = folder / ".git" / "info"
    if absent:
        repo.run("config", "core.sparseCheckout", "true")
        info.mkdir(exist_ok=True)
        (info / "sparse-checkout").write_text("\n".join(["/*"] + ["!/" + _literal(p) for p in absent]) + "\n")
    elif (info / "sparse-checkout").is_file():
        (info / "sparse-checkout").write_text("/*\n")  # an earlier ref's files are back in the work tree
    return sorted(absent)


@contextmanager
def leaving_out_absent(repo: GitRepo, folder: Path, commit: str) -> Iterator[list[str]]:
    """``leave_out_absent`` for a checkout of ``commit`` made in the block; the patterns as they were when the
    block fails (the checkout stays where it was)."""
    patterns = folder / ".git" / "info" / "sparse-checkout"
    before = patterns.read_bytes() if patterns.is_file() else None
    try:
        yield leave_out_absent(repo, folder, commit)
    except BaseException:
        if before is not None:
            patterns.write_bytes(before)
        raise


def missing_in_origin(repo: GitRepo, commit: str) -> list[str] | None:
    """The paths at ``commit`` whose blobs ``origin`` lacks, when it is a folder here; None for a URL (which
    cannot be asked without fetching)."""
    local = as_local_path(repo.run("remote", "get-url", "origin"))
    if local is None or not local.exists():
        return None
    try:
        with GitRepo(local) as source:
            return source.missing_blobs(commit)
    except GitError:  # not a repository (any more), or without the commit: the checkout itself says what fails
        return None


def absent_note(name: str, at: str, paths: list[str]) -> str:
    """What a command says of the files it left out of ``name``'s checkout at ``at``."""
    return (
        f"{name}: {len(paths)} {'file' if len(paths) == 1 else 'files'} left out of the checkout at {at}, "
        f"the source lacks {'its blob' if len(paths) == 1 else 'their blobs'} (kept in git's index, so git "
        f"status shows no change; a patch that touches one is refused): {', '.join(paths)}"
    )


def _literal(path: str) -> str:
    """``path`` as a sparse-checkout pattern that matches it alone (wildcards and a trailing space escaped)."""
    escaped = _PATTERN_SPECIAL.sub(r"\\\1", path)
    return escaped[:-1] + "\\ " if escaped.endswith(" ") else escaped
