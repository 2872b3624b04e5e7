"""Apply a target into git checkouts (``apply --into DIR``) and verify them.

Everything is checked before anything is written: if any patch of any upstream
would need more than an exact placement, nothing changes. Checkouts are built
in a staging folder, then moved into place and the ledger written through a
journal (``patchmgr.journal``): a run killed at any point leaves DIR as it was
or fully applied once the next command that reads DIR has recovered it. A lock
on DIR keeps two runs from interleaving. A checkout holding local work (commits
beyond the ledger's, changed or untracked files, other branches, stashes) is
not rebuilt: the run refuses, or with ``force`` carries that work into the new
checkout as branches first (``patchmgr.localwork``).

A checkout starts from the pinned commit (through the cache) or, when git is
out of reach, from the pinned release's files committed as the base.
"""

from __future__ import annotations

import email.utils
import os
import shutil
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from patchmgr.checking import TargetStatus, UpstreamStatus, check_target
from patchmgr.errors import GitError, StateError
from patchmgr.gitio import GitRepo
from patchmgr.journal import StateLock, apply_transaction, recover, step
from patchmgr.ledger import LEDGER_NAME, AppliedPatch, Ledger, UpstreamLedger, read_ledger, sha256_bytes
from patchmgr.localwork import SAVED_PREFIX, LocalWork, find_local_work, save_local_work, utc_stamp
from patchmgr.manifest import Target, Upstream
from patchmgr.patchfile import PatchFile
from patchmgr.project import Project
from patchmgr.releases import ReleaseSource
from patchmgr.sources import GitSource, urls_for
from patchmgr.store import Store, as_local_path

STATE = ".patchmgr-state"  # in DIR: the lock, the journal, and the checkouts being built or replaced
STAGING = "staging"
REPLACED = "replaced"
_DEFAULT_AUTHOR = ("patchmgr", "patchmgr@localhost")
_FIXED_DATE = "1970-01-01T00:00:00+00:00"


@dataclass
class ApplyOutcome:
    status: TargetStatus
    into: Path
    action: str  # "applied" | "already-applied" | "refused" | "dry-run"
    ledger: Ledger | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.action != "refused"


@dataclass
class VerifyOutcome:
    target: str
    into: Path
    problems: list[str] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def apply_into(project: Project, target: Target, store: Store, overrides: Mapping[str, str],
               into: Path, dry_run: bool = False, only: Sequence[str] = (), force: bool = False) -> ApplyOutcome:
    into = into.resolve()
    notes: list[str] = []
    with ExitStack() as stack:
        locked = into.is_dir()
        if locked:
            stack.enter_context(locked_into(into, notes))
        existing = _existing_ledger(into, target)
        status = check_target(project, target, store, overrides, {}, only)
        if not status.ok:
            return ApplyOutcome(status, into, "refused", notes=notes)
        if not locked and not dry_run:
            # DIR is made only now, so a refused run leaves no trace; another run may have applied meanwhile
            into.mkdir(parents=True, exist_ok=True)
            stack.enter_context(locked_into(into, notes))
            existing = _existing_ledger(into, target)
        if existing and _same_plan(existing, status) and verify_into(project, target, into, only).ok:
            return ApplyOutcome(status, into, "already-applied", existing, notes)
        works = _local_work(into, existing, status, force)
        if dry_run:
            notes += [f"would save local work of {w.name} ({w.counts()}) on a branch {SAVED_PREFIX}<UTC time> "
                      f"in {w.folder} before rebuilding it" for w in works]
            return ApplyOutcome(status, into, "dry-run", notes=notes)
        ledger = _build_and_swap(status, store, overrides, into, existing, works, notes)
    return ApplyOutcome(status, into, "applied", ledger, notes)


@contextmanager
def locked_into(into: Path, notes: list[str]) -> Iterator[None]:
    """Hold DIR's lock, after finishing or undoing an interrupted apply (which one is added to ``notes``)."""
    with StateLock(into / STATE) as lock:
        if lock.waited:
            notes.append(f"waited {lock.waited:.1f}s for another patchmgr run on {into}")
        message = recover_into(into)
        if message:
            notes.append(message)
        yield


def recover_into(into: Path) -> str | None:
    """Finish or undo an apply into ``into`` that was killed; say which. Only under DIR's lock."""
    state = into / STATE
    message = recover(state)
    if message is None and (state / STAGING).exists():
        message = "an interrupted run had not started changing it; removed its unfinished checkouts"
    shutil.rmtree(state / STAGING, ignore_errors=True)
    shutil.rmtree(state / REPLACED, ignore_errors=True)
    return f"recovered {into}: {message}" if message else None


def _existing_ledger(into: Path, target: Target) -> Ledger | None:
    existing = read_ledger(into) if into.is_dir() else None
    if existing and existing.target != target.name:
        raise StateError(f"{into} holds target {existing.target}, not {target.name}",
                         "apply each target into its own folder")
    for upstream in target.upstreams:
        folder = into / upstream.name
        if folder.exists() and not (existing and existing.upstream(upstream.name)):
            raise StateError(f"{folder} exists and was not made by patchmgr apply",
                             "choose an empty --into folder, or remove that one")
    return existing


def _local_work(into: Path, existing: Ledger | None, status: TargetStatus, force: bool) -> list[LocalWork]:
    """The local work in each checkout this run would rebuild; refuses (changing nothing) unless ``force``."""
    found = []
    for upstream_status in status.upstreams:
        name = upstream_status.upstream.name
        entry = existing.upstream(name) if existing else None
        if entry is None or not os.path.lexists(into / name):
            continue
        work = find_local_work(name, into / name, entry.head_commit or entry.base_commit)
        if work:
            found.append(work)
    if found and (not force or any(w.not_a_checkout for w in found)):
        folders = ", ".join(str(w.folder) for w in found)
        hint = (f"move that work out of the checkout first (push or copy the commits and files elsewhere), or run "
                f"the same apply again with --force to save it on a branch {SAVED_PREFIX}<UTC time> in the new "
                "checkout")
        if any(w.not_a_checkout for w in found):
            hint = "move the files you want to keep out of that folder, then run apply again"
        raise StateError(f"apply would rebuild {folders} and lose local work: "
                         f"{'; '.join(w.describe() for w in found)}; nothing was changed", hint)
    return found


def _same_plan(ledger: Ledger, status: TargetStatus) -> bool:
    for upstream_status in status.upstreams:
        recorded = ledger.upstream(upstream_status.upstream.name)
        if recorded is None or recorded.pin != upstream_status.upstream.commit:
            return False
        if recorded.source != upstream_status.source.removesuffix(" (cached)"):
            return False
        wanted = [(r.patch.id, r.patch.sha256) for r in upstream_status.results]
        if [(p.id, p.sha256) for p in recorded.patches] != wanted:
            return False
    return True


def _build_and_swap(status: TargetStatus, store: Store, overrides: Mapping[str, str], into: Path,
                    existing: Ledger | None, works: Sequence[LocalWork] = (), notes: list[str] | None = None) -> Ledger:
    """Build every checkout in staging, then swap them in and write the ledger as one journaled transaction.

    The local ``works`` found in the checkouts being replaced are carried into the new ones as branches
    before the swap (``patchmgr.localwork``), so discarding the old folders loses none of it.
    """
    state = into / STATE
    staging = state / STAGING
    replaced = state / REPLACED
    built: list[UpstreamLedger] = []
    try:
        staging.mkdir(parents=True)
        replaced.mkdir()
        for upstream_status in status.upstreams:
            built.append(_build_checkout(upstream_status, store, overrides, staging))
    except (OSError, GitError) as exc:
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(replaced, ignore_errors=True)
        detail = exc.message if isinstance(exc, GitError) else (exc.strerror or str(exc))
        raise StateError(f"cannot build the checkouts in {staging}: {detail}; nothing in {into} was changed",
                         "free some space on that disk (or fix the cause above), then run apply again") from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(replaced, ignore_errors=True)
        raise
    saved: list[tuple[LocalWork, list[str]]] = []
    stamp = utc_stamp()
    try:
        for work in works:
            saved.append((work, save_local_work(work, staging / work.name, stamp)))
    except BaseException as exc:
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(replaced, ignore_errors=True)
        if not isinstance(exc, (OSError, GitError)):
            raise
        detail = exc.message if isinstance(exc, GitError) else (exc.strerror or str(exc))
        raise StateError(f"cannot save the local work of {work.name} into its new checkout: {detail}; "
                         f"nothing in {into} was changed",
                         "free some space on that disk (or fix the cause above), or save that work yourself, "
                         "then run apply again") from None
    moves: list[tuple[Path, Path]] = []
    for entry in built:
        current = into / entry.name
        if os.path.lexists(current):
            moves.append((current, replaced / entry.name))
        moves.append((staging / entry.name, current))
    rebuilt = {entry.name for entry in built}
    kept = [u for u in (existing.upstreams if existing else []) if u.name not in rebuilt]
    ledger = Ledger(status.target.name, sorted(kept + built, key=lambda u: u.name))
    apply_transaction(state, {into / LEDGER_NAME: ledger.to_json().encode("utf-8")}, moves, [staging, replaced])
    for work, branches in saved:
        if notes is not None and branches:
            notes.append(f"saved local work of {work.name} on {'branch' if len(branches) == 1 else 'branches'} "
                         f"{', '.join(branches)} in {work.folder} ({work.counts()})")
    return ledger


def _build_checkout(upstream_status: UpstreamStatus, store: Store, overrides: Mapping[str, str],
                    staging: Path) -> UpstreamLedger:
    upstream = upstream_status.upstream
    folder = staging / upstream.name
    source = upstream_status.reader
    if isinstance(source, ReleaseSource):
        repo, base, absent = _import_release(source, folder)
    else:
        assert isinstance(source, GitSource)
        repo, base, absent = _checkout_pin(upstream, source.commit, store, overrides, folder)
    step()
    applied = []
    files: dict[str, str | None] = {}
    try:
        for result in upstream_status.results:
            for path, data in result.files.items():
                files[path] = _write(folder, path, data)
            repo.run("add", "--all", "--", *result.files.keys())
            _commit(repo, result.patch)
            applied.append(AppliedPatch(result.patch.id, result.patch.sha256, repo.resolve("HEAD")))
            step()
        head = repo.resolve("HEAD")
    finally:
        repo.close()
    return UpstreamLedger(upstream.name, upstream.commit, base, head,
                          (upstream_status.source or "").removesuffix(" (cached)"), applied, files, absent)


def _write(folder: Path, path: str, data: bytes | None) -> str | None:
    target_path = folder / path
    if data is None:
        target_path.unlink(missing_ok=True)
        return None
    target_path.parent.mkdir(parents=True, exist_ok=True)
    target_path.write_bytes(data)
    return sha256_bytes(data)


def _checkout_pin(upstream: Upstream, commit: str, store: Store, overrides: Mapping[str, str],
                  folder: Path) -> tuple[GitRepo, str, list[str]]:
    """A partial clone of the source at ``commit``; files the source lacks stay out of the work tree.

    The checkout fetches from patchmgr's cache only when ``patchmgr fetch`` filled
    it with every blob of the commit (a blobless cache cannot serve blobs it never
    fetched); otherwise from the upstream's source itself. Either way ``origin``
    ends up naming the real upstream, so the checkout does not depend on the cache.
    """
    repo = GitRepo.init(folder)
    errors = []
    urls = list(urls_for(upstream, overrides))
    recorded_absent = store.complete_for(upstream.name, commit)
    if recorded_absent is not None:
        # `patchmgr fetch` filled the cache: check out from it, with no network (an image's cached layer)
        urls.insert(0, str(store.repo_path(upstream.name)))
    for url in urls:
        try:
            store.configure_remote(repo, url)
            repo.run("fetch", "--quiet", "--no-tags", "--filter=blob:none", "origin", "--", commit)
            break
        except GitError as exc:
            errors.append(f"{url}: {exc.message}")
    else:
        repo.close()
        raise StateError(f"cannot fetch {upstream.name} {commit} for the checkout: {'; '.join(errors)}",
                         f"pass a reachable clone with --source {upstream.name}=PATH_OR_URL")
    origin = repo.run("remote", "get-url", "origin")
    absent = recorded_absent if origin == str(store.repo_path(upstream.name)) else \
        _absent_in_local_source(origin, commit)
    if absent:
        # A mirror without its large files: keep those paths in the index (so commits
        # and `git status` stay exact) but out of the work tree.
        repo.run("config", "core.sparseCheckout", "true")
        patterns = ["/*"] + ["!/" + path for path in absent]
        (folder / ".git" / "info").mkdir(exist_ok=True)
        (folder / ".git" / "info" / "sparse-checkout").write_text("\n".join(patterns) + "\n")
    try:
        repo.run("checkout", "--quiet", "-B", "patchmgr", commit)
    except GitError as exc:
        repo.close()
        raise StateError(f"cannot check out {upstream.name} at {commit}: {exc.message}",
                         "the source lacks files of that commit; use a complete clone with --source") from exc
    real = [url for url in urls if url != str(store.repo_path(upstream.name))]
    if real and repo.run("remote", "get-url", "origin") != real[0]:
        store.configure_remote(repo, real[0])
    return repo, commit, absent


def _absent_in_local_source(url: str, commit: str) -> list[str]:
    local = as_local_path(url)
    if local is None or not local.exists():
        return []
    with GitRepo(local) as source:
        return source.missing_blobs(commit)


def _import_release(source: ReleaseSource, folder: Path) -> tuple[GitRepo, str, list[str]]:
    """A git repository whose first commit is the release's files in the upstream's git layout."""
    repo = GitRepo.init(folder)
    destination = folder / (source.package_root if source.file.kind == "wheel" else "")
    shutil.copytree(source.tree, destination, dirs_exist_ok=True, symlinks=True,
                    ignore=shutil.ignore_patterns("*.dist-info", "*.data", "__pycache__"))
    repo.run("add", "--all")
    message = (f"{source.project} {source.version} from {source.file.filename}\n\n"
               f"Imported by patchmgr from the package index (sha256 {source.file.sha256}),\n"
               f"because no git source of the pin was reachable.\n")
    env = _identity_env(*_DEFAULT_AUTHOR, _FIXED_DATE)
    repo.run("commit", "--quiet", "--no-verify", "-F", "-", stdin=message.encode(), env=env)
    repo.run("branch", "-M", "patchmgr")
    return repo, repo.resolve("HEAD"), []


def _identity_env(name: str, address: str, date: str) -> dict[str, str]:
    return {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": address, "GIT_AUTHOR_DATE": date,
            "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": address, "GIT_COMMITTER_DATE": date}


def _commit(repo: GitRepo, patch: PatchFile) -> None:
    """One commit per patch, author and date from the patch, so the same series gives the same ids."""
    name, address = _DEFAULT_AUTHOR
    if patch.author:
        parsed_name, parsed_address = email.utils.parseaddr(patch.author)
        name, address = parsed_name or name, parsed_address or address
    message = f"{patch.subject or patch.id}\n\n{patch.body}".strip() + "\n"
    env = _identity_env(name, address, patch.date or _FIXED_DATE)
    repo.run("commit", "--quiet", "--no-verify", "--allow-empty", "-F", "-", stdin=message.encode(), env=env)


def verify_into(project: Project, target: Target, into: Path, only: Sequence[str] = ()) -> VerifyOutcome:
    """Prove that ``into`` holds exactly the pinned upstreams with exactly the target's patches."""
    into = into.resolve()
    outcome = VerifyOutcome(target.name, into)
    if not (into / STATE).is_dir():  # no apply ever ran there: nothing to recover, and no lock to leave behind
        return _verify_ledger(project, target, into, only, outcome)
    with locked_into(into, outcome.notes):
        return _verify_ledger(project, target, into, only, outcome)


def _verify_ledger(project: Project, target: Target, into: Path, only: Sequence[str],
                   outcome: VerifyOutcome) -> VerifyOutcome:
    ledger = read_ledger(into) if into.is_dir() else None
    if ledger is None:
        outcome.problems.append(f"{into} has no ledger: it was not made by `patchmgr apply`")
        return outcome
    if ledger.target != target.name:
        outcome.problems.append(f"{into} holds target {ledger.target}, not {target.name}")
        return outcome
    for upstream in target.upstreams:
        if only and upstream.name not in only:
            continue
        entry = ledger.upstream(upstream.name)
        if entry is None:
            outcome.problems.append(f"{upstream.name}: not applied into {into}")
            continue
        outcome.problems += _verify_upstream(project, upstream, entry, into / upstream.name)
        outcome.checked.append(upstream.name)
    return outcome


def _verify_upstream(project: Project, upstream: Upstream, entry: UpstreamLedger, folder: Path) -> list[str]:
    name = upstream.name
    problems = []
    if entry.pin != upstream.commit:
        problems.append(f"{name}: applied for pin {entry.pin[:12]}, but the pin is now {upstream.commit[:12]}")
    current = [(p.id, p.sha256) for p in project.patches(upstream)]
    recorded = [(p.id, p.sha256) for p in entry.patches]
    if current != recorded:
        changed = sorted({pid for pid, _ in current} ^ {pid for pid, _ in recorded}
                         | {pid for pid, sha in current if (pid, sha) not in recorded})
        problems.append(f"{name}: the patch series changed since apply ({', '.join(changed)})")
    if not (folder / ".git").is_dir():
        return problems + [f"{name}: {folder} is missing or not a git checkout"]
    with GitRepo(folder) as repo:
        head = repo.resolve("HEAD")
        if head != entry.head_commit:
            problems.append(f"{name}: HEAD is {str(head)[:12]}, the ledger says {str(entry.head_commit)[:12]}")
        elif repo.resolve(f"HEAD~{len(entry.patches)}") != entry.base_commit:
            problems.append(f"{name}: the patches do not sit on the base commit {entry.base_commit[:12]}")
        changed = [line[3:] for line in repo.run("status", "--porcelain", "--untracked-files=no").splitlines()]
    problems += [f"{name}: {path} was changed after apply" for path in changed]
    for path, digest in entry.files.items():
        file = folder / path
        actual = sha256_bytes(file.read_bytes()) if file.is_file() else None
        if actual != digest and path not in changed:
            problems.append(f"{name}: {path} differs from what apply wrote")
    return problems
