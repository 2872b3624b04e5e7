"""Apply a target into git checkouts (``apply --into DIR``) and verify them.

Everything is checked before anything is written: if any patch of any upstream
would need more than an exact placement, nothing changes. Checkouts are built
in a staging folder and moved into place at the end, then the ledger is
written, so an existing checkout is replaced only by a complete one.
"""

from __future__ import annotations

import email.utils
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from patchmgr.checking import TargetStatus, UpstreamStatus, check_target
from patchmgr.errors import GitError, StateError
from patchmgr.gitio import GitRepo
from patchmgr.ledger import AppliedPatch, Ledger, UpstreamLedger, read_ledger, sha256_bytes, write_ledger
from patchmgr.manifest import Target
from patchmgr.patchfile import PatchFile
from patchmgr.project import Project
from patchmgr.sources import urls_for
from patchmgr.store import LOCAL_UPLOAD_PACK, Store, as_local_path

STAGING = ".patchmgr-staging"
REPLACED = ".patchmgr-replaced"
_DEFAULT_AUTHOR = ("patchmgr", "patchmgr@localhost")


@dataclass
class ApplyOutcome:
    status: TargetStatus
    into: Path
    action: str  # "applied" | "already-applied" | "refused" | "dry-run"
    ledger: Ledger | None = None

    @property
    def ok(self) -> bool:
        return self.action != "refused"


@dataclass
class VerifyOutcome:
    target: str
    into: Path
    problems: list[str] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def apply_into(project: Project, target: Target, store: Store, overrides: Mapping[str, str],
               into: Path, dry_run: bool = False) -> ApplyOutcome:
    into = into.resolve()
    existing = read_ledger(into) if into.is_dir() else None
    if existing and existing.target != target.name:
        raise StateError(f"{into} holds target {existing.target}, not {target.name}",
                         "apply each target into its own folder")
    for upstream in target.upstreams:
        folder = into / upstream.name
        if folder.exists() and not (existing and existing.upstream(upstream.name)):
            raise StateError(f"{folder} exists and was not made by patchmgr apply",
                             "choose an empty --into folder, or remove that one")
    status = check_target(project, target, store, overrides, {})
    if not status.ok:
        return ApplyOutcome(status, into, "refused")
    if existing and _same_plan(existing, status) and verify_into(project, target, into).ok:
        return ApplyOutcome(status, into, "already-applied", existing)
    if dry_run:
        return ApplyOutcome(status, into, "dry-run")
    ledger = _build_and_swap(status, store, overrides, into)
    return ApplyOutcome(status, into, "applied", ledger)


def _same_plan(ledger: Ledger, status: TargetStatus) -> bool:
    for upstream_status in status.upstreams:
        recorded = ledger.upstream(upstream_status.upstream.name)
        if recorded is None or recorded.base_commit != upstream_status.commit:
            return False
        wanted = [(r.patch.id, r.patch.sha256) for r in upstream_status.results]
        if [(p.id, p.sha256) for p in recorded.patches] != wanted:
            return False
    return len(ledger.upstreams) == len(status.upstreams)


def _build_and_swap(status: TargetStatus, store: Store, overrides: Mapping[str, str], into: Path) -> Ledger:
    staging = into / STAGING
    replaced = into / REPLACED
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    ledger = Ledger(status.target.name)
    try:
        for upstream_status in status.upstreams:
            ledger.upstreams.append(_build_checkout(upstream_status, store, overrides, staging))
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    shutil.rmtree(replaced, ignore_errors=True)
    replaced.mkdir()
    for entry in ledger.upstreams:
        current = into / entry.name
        if current.exists():
            current.rename(replaced / entry.name)
        (staging / entry.name).rename(current)
    write_ledger(into, ledger)
    shutil.rmtree(replaced, ignore_errors=True)
    shutil.rmtree(staging, ignore_errors=True)
    return ledger


def _build_checkout(upstream_status: UpstreamStatus, store: Store, overrides: Mapping[str, str],
                    staging: Path) -> UpstreamLedger:
    upstream = upstream_status.upstream
    commit = upstream_status.commit
    folder = staging / upstream.name
    repo = GitRepo.init(folder)
    cache = store.repo_path(upstream.name)
    repo.run("remote", "add", "origin", "--", str(cache))
    for key, value in (("core.repositoryformatversion", "1"), ("extensions.partialClone", "origin"),
                       ("remote.origin.promisor", "true"), ("remote.origin.partialclonefilter", "blob:none"),
                       ("remote.origin.uploadpack", LOCAL_UPLOAD_PACK)):
        repo.run("config", key, value)
    repo.run("fetch", "--quiet", "--no-tags", "--filter=blob:none", "origin", "--", commit)
    try:
        repo.run("checkout", "--quiet", "-B", "patchmgr", commit)
    except GitError as exc:
        raise StateError(f"cannot check out {upstream.name} at {commit}: {exc.message}",
                         "the source lacks some files of that commit; use a complete clone with --source") from exc
    _point_origin_upstream(repo, urls_for(upstream, overrides))
    applied = []
    files: dict[str, str | None] = {}
    for result in upstream_status.results:
        for path, data in result.files.items():
            target_path = folder / path
            if data is None:
                target_path.unlink(missing_ok=True)
                files[path] = None
            else:
                target_path.parent.mkdir(parents=True, exist_ok=True)
                target_path.write_bytes(data)
                files[path] = sha256_bytes(data)
        repo.run("add", "--all", "--", *result.files.keys())
        _commit(repo, result.patch)
        applied.append(AppliedPatch(result.patch.id, result.patch.sha256, repo.resolve("HEAD")))
    return UpstreamLedger(upstream.name, commit, repo.resolve("HEAD"), upstream_status.source or "",
                          applied, files)


def _point_origin_upstream(repo: GitRepo, urls: tuple[str, ...]) -> None:
    """After the checkout, ``origin`` names the real upstream, not patchmgr's cache."""
    if not urls:
        return
    local = as_local_path(urls[0])
    repo.run("remote", "set-url", "origin", "--", str(local.resolve()) if local else urls[0])
    if not local:
        repo.run_ok("config", "--unset", "remote.origin.uploadpack")


def _commit(repo: GitRepo, patch: PatchFile) -> None:
    name, address = _DEFAULT_AUTHOR
    if patch.author:
        parsed_name, parsed_address = email.utils.parseaddr(patch.author)
        name, address = parsed_name or name, parsed_address or address
    date = patch.date or "1970-01-01T00:00:00+00:00"
    env = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": address, "GIT_AUTHOR_DATE": date,
           "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": address, "GIT_COMMITTER_DATE": date}
    message = f"{patch.subject or patch.id}\n\n{patch.body}".strip() + "\n"
    repo.run("commit", "--quiet", "--no-verify", "--allow-empty", "-F", "-", stdin=message.encode(), env=env)


def verify_into(project: Project, target: Target, into: Path) -> VerifyOutcome:
    """Prove that ``into`` holds exactly the pinned upstreams with exactly the target's patches."""
    into = into.resolve()
    outcome = VerifyOutcome(target.name, into)
    ledger = read_ledger(into) if into.is_dir() else None
    if ledger is None:
        outcome.problems.append(f"{into} has no ledger: it was not made by `patchmgr apply`")
        return outcome
    if ledger.target != target.name:
        outcome.problems.append(f"{into} holds target {ledger.target}, not {target.name}")
        return outcome
    for upstream in target.upstreams:
        entry = ledger.upstream(upstream.name)
        if entry is None:
            outcome.problems.append(f"{upstream.name}: not in the ledger")
            continue
        outcome.problems += _verify_upstream(project, upstream, entry, into / upstream.name)
        outcome.checked.append(upstream.name)
    return outcome


def _verify_upstream(project: Project, upstream, entry: UpstreamLedger, folder: Path) -> list[str]:
    name = upstream.name
    problems = []
    if entry.base_commit != upstream.commit:
        problems.append(f"{name}: applied on {entry.base_commit[:12]}, but the pin is {upstream.commit[:12]}")
    current = [(p.id, p.sha256) for p in project.patches(upstream)]
    recorded = [(p.id, p.sha256) for p in entry.patches]
    if current != recorded:
        changed = sorted({pid for pid, _ in current} ^ {pid for pid, _ in recorded} |
                         {pid for (pid, sha) in current if (pid, sha) not in recorded})
        problems.append(f"{name}: the patch series changed since apply ({', '.join(changed)})")
    if not (folder / ".git").exists():
        return problems + [f"{name}: {folder} is missing or not a git checkout"]
    repo = GitRepo(folder)
    try:
        head = repo.resolve("HEAD")
        if head != entry.head_commit:
            problems.append(f"{name}: HEAD is {str(head)[:12]}, the ledger says {str(entry.head_commit)[:12]}")
        dirty = repo.run("status", "--porcelain", "--untracked-files=no")
        for line in dirty.splitlines():
            problems.append(f"{name}: {line[3:]} was changed after apply")
        for path, digest in entry.files.items():
            file = folder / path
            actual = sha256_bytes(file.read_bytes()) if file.is_file() else None
            if actual != digest and not re.search(re.escape(path), dirty):
                problems.append(f"{name}: {path} differs from what apply wrote")
    finally:
        repo.close()
    return problems
