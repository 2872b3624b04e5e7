"""git (and GNU patch, as quilt runs it) replaying a series at a ref, each patch on top of the ones before it: the
oracle that status's applies/conflicts verdicts are compared with."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from support.gitrepos import git


@dataclass(frozen=True)
class Replayed:
    """What the independent tools say of one patch on the tree the patches before it made: ``plain``,
    ``git apply --check`` applies it; ``merged``, ``git apply --3way`` applies it; ``fuzzed``, GNU ``patch
    -F2`` (quilt push's fuzz) applies it (None where not asked)."""

    plain: bool
    merged: bool
    fuzzed: bool | None = None


def replay(tmp_path: Path, repo: Path, patches: dict[str, Path], ref: str, fuzz: bool = False) -> dict[str, Replayed]:
    """Each of ``patches`` (id -> file, in series order) tried at ``ref`` of ``repo`` on top of the ones before
    it; one that git merges is kept (``git apply --3way``), with ``fuzz`` one that only GNU patch places with
    fuzz is kept as patch writes it, any other is left out (the tree stays as it was)."""
    work = tmp_path / "replay"
    shutil.rmtree(work, ignore_errors=True)
    git(tmp_path, "clone", "-q", "--shared", "--no-checkout", str(repo), str(work))
    git(work, "checkout", "-q", ref)

    def ran(*command: str) -> bool:
        return subprocess.run(command, cwd=work, capture_output=True).returncode == 0

    found = {}
    for patch_id, patch in patches.items():
        plain = ran("git", "apply", "--check", str(patch))
        fuzzed = ran("patch", "-p1", "-F2", "--dry-run", "-s", "-i", str(patch)) if fuzz else None
        merged = ran("git", "apply", "--3way", str(patch))
        if not merged:
            git(work, "reset", "-q", "--hard")
            if fuzzed:
                ran("patch", "-p1", "-F2", "-s", "--no-backup-if-mismatch", "-i", str(patch))
        if merged or fuzzed:
            git(work, "add", "-A")
            git(work, "commit", "-q", "--allow-empty", "-m", patch_id)
        found[patch_id] = Replayed(plain, merged, fuzzed)
    return found


def git_replay(tmp_path: Path, repo: Path, patches: Path, ref: str, ids: list[str]) -> dict[str, bool]:
    """Whether ``git apply --3way`` applies each patch (``patches``/ID.patch) at ``ref`` of ``repo``, each on top
    of the ones before it."""
    found = replay(tmp_path, repo, {patch_id: patches / f"{patch_id}.patch" for patch_id in ids}, ref)
    return {patch_id: replayed.merged for patch_id, replayed in found.items()}
