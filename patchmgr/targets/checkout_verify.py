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
from patchmgr.targets.ledger import UpstreamLedger, read_into_ledger, verify_recorded


@dataclass(frozen=True)
class VerifyOutcome:
    target: str
    into: Path
    problems: tuple[str, ...]  # empty: DIR holds exactly what apply wrote
    checked: tuple[str, ...]  # the upstreams verified
    notes: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


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
    problems: list[str] = []
    checked: list[str] = []
    ledger = read_into_ledger(into) if into.is_dir() else None
    if ledger is None:
        problems.append(f"{into} has no ledger: it was not made by `patchmgr apply`")
    elif ledger.target != target.name:
        problems.append(f"{into} holds target {ledger.target}, not {target.name}")
    else:
        for upstream in target.upstreams:
            if only and upstream.name not in only:
                continue
            entry = ledger.upstream(upstream.name)
            if entry is None:
                problems.append(f"{upstream.name}: not applied into {into}")
                continue
            problems += _verify_upstream(project, upstream, entry, into / upstream.name)
            checked.append(upstream.name)
    return VerifyOutcome(target.name, into, tuple(problems), tuple(checked), tuple(notes))


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
