"""verify of ``apply --into``: the ledger, HEAD, the base commit and every touched file's hash."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from patchmgr.io.git import NO_OPTIONAL_LOCKS, GitRepo
from patchmgr.model.errors import StateError
from patchmgr.model.manifest import Target, Upstream
from patchmgr.model.project import Project
from patchmgr.model.records import sha256_bytes
from patchmgr.targets.into_lock import STATE, locked_into
from patchmgr.targets.ledger import UpstreamLedger, read_into_ledger, reapply_hint, verify_recorded


@dataclass(frozen=True)
class VerifyOutcome:
    target: str
    into: Path
    differences: tuple[str, ...]  # what DIR holds otherwise than its ledger records (or another target's ledger)
    checked: tuple[str, ...]  # the upstreams verified
    notes: tuple[str, ...]
    unapplied: tuple[str, ...] = ()  # the upstreams asked for that no apply wrote into DIR (every one: no ledger)
    has_ledger: bool = True
    only: tuple[str, ...] = ()  # the upstreams --upstream named (none: all of them)

    @property
    def problems(self) -> tuple[str, ...]:
        """Everything verify reports (empty: DIR holds exactly what apply wrote): what DIR lacks, then what differs."""
        if not self.has_ledger:
            return (f"{self.into} has no ledger: it was not made by `patchmgr apply`",)
        return tuple(f"{name}: not applied into {self.into}" for name in self.unapplied) + self.differences

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def hint(self) -> str:
        """The next step when DIR differs: the apply that rebuilds it."""
        return reapply_hint(self.target, self.into, self.only)


def verify_into(project: Project, target: Target, into: Path, only: Sequence[str] = ()) -> VerifyOutcome:
    """Prove that ``into`` holds exactly the pinned upstreams with exactly the target's patches."""
    into = into.resolve()
    notes: list[str] = []
    if not (into / STATE).is_dir():  # no apply ever ran there: nothing to recover, and no lock to leave behind
        return _verify_ledger(project, target, into, only, notes)
    if not os.access(into / STATE, os.W_OK) or _read_only(into):
        # a read-only DIR (an image layer, a read-only mount): no run can be changing it, and nothing
        # could be recovered there, so verify reads it as it is, unless a journal says a run was cut off
        if os.path.lexists(into / STATE / "journal"):
            raise StateError(
                f"{into} holds an interrupted apply, and its file system is read-only",
                "make it writable, then run verify again (it finishes or undoes that apply)",
            )
        notes.append(f"{into} is read-only: verified without taking its lock")
        return _verify_ledger(project, target, into, only, notes)
    with locked_into(into, notes):  # notes: the interrupted apply it finished or undid first
        return _verify_ledger(project, target, into, only, notes)


def _read_only(folder: Path) -> bool:
    return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)


def _verify_ledger(
    project: Project, target: Target, into: Path, only: Sequence[str], notes: list[str]
) -> VerifyOutcome:
    differences: list[str] = []
    checked: list[str] = []
    unapplied: list[str] = []
    asked = [upstream for upstream in target.upstreams if not only or upstream.name in only]
    ledger = read_into_ledger(into) if into.is_dir() else None
    if ledger is None:
        unapplied = [upstream.name for upstream in asked]
    elif ledger.target != target.name:
        differences.append(f"{into} holds target {ledger.target}, not {target.name}")
    else:
        for upstream in asked:
            entry = ledger.upstream(upstream.name)
            if entry is None:
                unapplied.append(upstream.name)
                continue
            differences += _verify_upstream(project, upstream, entry, into / upstream.name)
            checked.append(upstream.name)
    found = (tuple(differences), tuple(checked), tuple(notes), tuple(unapplied), ledger is not None, tuple(only))
    return VerifyOutcome(target.name, into, *found)


def _verify_upstream(project: Project, upstream: Upstream, entry: UpstreamLedger, folder: Path) -> list[str]:
    """The common checks (``verify_recorded``), then HEAD, the base commit, git's view of changes."""
    name, checkout = upstream.name, entry.checkout_part()
    problems, hashes_differ = verify_recorded(project, upstream, entry, lambda path: folder / path)
    if not (folder / ".git").is_dir():
        return problems + [f"{name}: {folder} is missing or not a git checkout"]
    with GitRepo(folder) as repo:
        head = repo.resolve("HEAD")
        if head != checkout.head_commit:
            problems.append(f"{name}: HEAD is {str(head)[:12]}, the ledger says {str(checkout.head_commit)[:12]}")
        elif repo.resolve(f"HEAD~{len(entry.patches)}") != checkout.base_commit:
            problems.append(f"{name}: the patches do not sit on the base commit {checkout.base_commit[:12]}")
        out = repo.run(
            "status", "--porcelain=v1", "-z", "--untracked-files=no", "--no-renames", env=NO_OPTIONAL_LOCKS, strip=False
        )
        codes = {item[3:]: item[:2] for item in out.split("\0") if len(item) > 3}
        for path in entry.files:
            if path not in hashes_differ and codes.get(path) == " M":
                # exactly the bytes apply committed, which git reads otherwise under the upstream's
                # `text` rule (a blob with CRLF line ends): not a change
                del codes[path]
        differs = []
        for path in hashes_differ:
            digest, file = entry.files[path], folder / path
            if (
                path not in codes
                and digest is not None
                and file.is_file()
                and not file.is_symlink()
                and _checked_out_from(repo, path, file, digest)
            ):
                continue  # the committed blob, written out through the upstream's .gitattributes
            if path not in codes:
                differs.append(path)
    problems += [f"{name}: {path} was changed after apply" for path in codes]
    problems += [f"{name}: {path} differs from what apply wrote" for path in differs]
    return problems


def _checked_out_from(repo: GitRepo, path: str, file: Path, digest: str) -> bool:
    """Whether ``file`` is HEAD's blob of ``path`` (whose bytes hash to ``digest``) as git's attributes write it."""
    committed = repo.path_entries("HEAD", [path])[0]
    if committed is None or not committed[0].startswith("100"):
        return False
    blob = repo.read_blob(committed[1])
    if blob is None or sha256_bytes(blob) != digest:
        return False
    cleaned = repo.run("hash-object", f"--path={path}", "--", str(file), env=NO_OPTIONAL_LOCKS)
    return cleaned == committed[1]
