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
out of reach, from the pinned release's files committed as the base. Each
patch's files enter the index as blobs of exactly the bytes ``status``
computed, so the upstream's .gitignore and .gitattributes change nothing that
is committed; the work tree is then written from the index as any checkout of
that commit is. A refused run or a dry run writes nothing in DIR, not even the
lock; a run that fails removes the DIR (or state folder) it made.
"""

from __future__ import annotations

import email.utils
import errno
import os
import re
import shutil
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from patchmgr.checking import TargetStatus, UpstreamStatus, check_target
from patchmgr.errors import GitError, StateError, UsageError
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
# verify's git commands must not write the checkout (``git status`` would refresh .git/index)
_READ_ONLY = {"GIT_OPTIONAL_LOCKS": "0"}
# what git says when the disk is full (its first fatal line often names only the file it could not write)
_DISK_FULL = re.compile(r"No space left on device|Out of diskspace|Disk quota exceeded|File too large", re.I)
_DISK_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
# what git says when an object of the commit is not there and no remote can provide it
_MISSING_OBJECT = re.compile(r"from promisor remote|unable to read sha1 file|unable to read [0-9a-f]{7,}"
                             r"|missing (?:blob|tree|object)|bad object|not our ref|did not send all necessary"
                             r"|is not a valid object|could not read object", re.I)
_DISK_HINT = "free some space on that disk, then run apply again"
_LACKS_HINT = "the source lacks files of that commit; use a complete clone with --source {name}=PATH_OR_URL"
_CAUSE_HINT = "fix the cause above, then run apply again"


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
    _refuse_project_folder(project, into)
    notes: list[str] = []
    with ExitStack() as stack:
        # Only a DIR that an apply already wrote has a state folder (and in it the lock and any journal
        # to recover); any other is read without a lock, so a refused run or a dry run creates nothing
        locked = (into / STATE).is_dir()
        if locked:
            stack.enter_context(locked_into(into, notes))
        existing = _existing_ledger(into, target)
        status = check_target(project, target, store, overrides, {}, only)
        if not status.ok:
            return ApplyOutcome(status, into, "refused", notes=notes)
        made = None
        if not locked and not dry_run:
            # DIR (and its state folder) is made only now; another run may have applied meanwhile
            made = _make_folder(into)  # with the state folder, removed again when this run fails
            try:
                stack.enter_context(locked_into(into, notes))
            except BaseException as exc:
                _remove_made(made, into)
                if isinstance(exc, OSError):
                    raise StateError(f"cannot lock {into / STATE}: {_detail(exc)}; nothing was changed",
                                     _DISK_HINT if _disk_full(exc, into) else _CAUSE_HINT) from None
                raise
        try:
            if not locked and not dry_run:
                existing = _existing_ledger(into, target)  # re-read under the lock
            if existing and _same_plan(existing, status) and verify_into(project, target, into, only).ok:
                return ApplyOutcome(status, into, "already-applied", existing, notes)
            works = _local_work(into, existing, status, force)
            if dry_run:
                notes += [f"would save local work of {w.name} ({w.counts()}) on a branch "
                          f"{SAVED_PREFIX}<UTC time> in {w.folder} before rebuilding it" for w in works]
                return ApplyOutcome(status, into, "dry-run", notes=notes)
            ledger = _build_and_swap(status, store, overrides, into, existing, works, notes)
        except BaseException:
            if not locked and not dry_run:
                _remove_made(made, into)  # a DIR (or state folder) this run created goes again when it fails
            raise
    return ApplyOutcome(status, into, "applied", ledger, notes)


def _refuse_project_folder(project: Project, into: Path) -> None:
    """``--into`` must not be the project root, nor inside its manifests/ or patches/ folder."""
    root = project.root.resolve()
    if into == root:
        raise UsageError(f"--into {into} is the project root itself: apply writes checkouts and its state there",
                         "give a folder of its own, for example --into build/")
    for folder in (project.manifests_dir, project.patches_dir):
        folder = folder.resolve()
        if into == folder or folder in into.parents:
            raise UsageError(f"--into {into} is inside the project's {folder.name}/ folder",
                             f"give a folder outside {folder.name}/, for example --into build/")


def _make_folder(into: Path) -> Path | None:
    """Create ``into`` (and missing parents); the topmost folder this created, or None when it existed."""
    missing = None
    folder = into
    while not folder.exists() and folder != folder.parent:
        missing = folder
        folder = folder.parent
    try:
        into.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        _remove_made(missing, into)
        raise StateError(f"cannot create {into}: {_detail(exc)}; nothing was changed",
                         _DISK_HINT if _disk_full(exc, into) else _CAUSE_HINT) from None
    return missing


def _remove_made(made: Path | None, into: Path) -> None:
    """Undo what a failed run made before writing: the state folder (when it holds nothing but the lock),
    then ``into`` and the parents up to ``made`` (the topmost folder ``_make_folder`` created), if empty."""
    state = into / STATE
    if state.is_dir() and not state.is_symlink() and all(e.name == "lock" for e in state.iterdir()):
        shutil.rmtree(state, ignore_errors=True)
    if made is None:
        return
    folder = into
    while made == folder or made in folder.parents:
        try:
            folder.rmdir()  # only an empty folder: anything else living there now stays
        except OSError:
            return
        folder = folder.parent


@contextmanager
def locked_into(into: Path, notes: list[str]) -> Iterator[None]:
    """Hold DIR's lock, after finishing or undoing an interrupted apply (which one is added to ``notes``)."""
    waited = 0.0
    while True:
        with ExitStack() as stack:
            try:
                lock = stack.enter_context(StateLock(into / STATE))
            except OSError as exc:  # a read-only or full DIR: say so, never a traceback
                raise StateError(f"cannot lock {into}: {exc.strerror or exc} ({exc.filename or into / STATE})",
                                 "give a folder patchmgr can write, or fix its file system") from None
            waited += lock.waited
            if not _lock_file_current(lock):
                continue  # a failed run removed the DIR it had made while this one waited: lock it anew
            if waited:
                notes.append(f"waited {waited:.1f}s for another patchmgr run on {into}")
            message = recover_into(into)
            if message:
                notes.append(message)
            yield
            return


def _lock_file_current(lock: StateLock) -> bool:
    """Whether the file this process locked is still the one at the lock's path."""
    handle = getattr(lock, "_handle", None)
    if handle is None:
        return True  # held already by this process (re-entered)
    try:
        return os.stat(lock.path).st_ino == os.fstat(handle.fileno()).st_ino
    except OSError:
        return False


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
        full = _disk_full(exc, staging)
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(replaced, ignore_errors=True)
        raise StateError(f"cannot build the checkouts in {staging}: {_detail(exc)}; nothing in {into} was changed",
                         _DISK_HINT if full else _CAUSE_HINT) from None
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
        full = isinstance(exc, (OSError, GitError)) and _disk_full(exc, staging)
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(replaced, ignore_errors=True)
        if not isinstance(exc, (OSError, GitError)):
            raise
        raise StateError(f"cannot save the local work of {work.name} into its new checkout: {_detail(exc)}; "
                         f"nothing in {into} was changed",
                         ("free some space on that disk" if full else "fix the cause above") +
                         ", or save that work yourself, then run apply again") from None
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


def _detail(exc: OSError | GitError) -> str:
    if isinstance(exc, GitError):
        return exc.message
    where = f" ({exc.filename})" if exc.filename else ""
    return f"{exc.strerror or exc}{where}"


def _disk_full(exc: OSError | GitError | str, folder: Path) -> bool:
    """Whether a failure while writing under ``folder`` was the disk (or the quota, or the file size limit)."""
    if isinstance(exc, OSError):
        return exc.errno in _DISK_ERRNOS
    if _DISK_FULL.search(exc if isinstance(exc, str) else exc.message):
        return True
    # git often names only the file it could not write ("failed to write commit object"): ask the disk
    probe = folder
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        stats = os.statvfs(probe)
    except OSError:
        return False
    return stats.f_bavail * stats.f_frsize < (64 << 10) or (stats.f_files and stats.f_favail == 0)


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
            files.update(_stage(repo, folder, result.patch, result.files))
            _commit(repo, result.patch)
            applied.append(AppliedPatch(result.patch.id, result.patch.sha256, repo.resolve("HEAD")))
            step()
        head = repo.resolve("HEAD")
    finally:
        repo.close()
    return UpstreamLedger(upstream.name, upstream.commit, base, head,
                          (upstream_status.source or "").removesuffix(" (cached)"), applied, files, absent)


def _stage(repo: GitRepo, folder: Path, patch: PatchFile, changes: Mapping[str, bytes | None]
           ) -> dict[str, str | None]:
    """Put the engine's bytes for one patch into the index as they are, then into the work tree.

    Each file becomes a blob of exactly the bytes ``status`` computed (``hash-object --no-filters``),
    entered in the index directly, so neither the upstream's .gitignore (a created file it ignores)
    nor its .gitattributes (``eol``, ``text``, ``working-tree-encoding``, filters) changes what is
    committed. The work tree is then written from the index with the upstream's attributes applied,
    as any checkout of that commit is. The sha256 of each file's bytes (None: deleted), for the ledger.
    """
    if not changes:
        return {}
    paths = list(changes)
    sources = {d.new_path: d.old_path for d in patch.files if d.new_path and d.old_path}
    new_modes = {d.new_path: d.new_mode for d in patch.files if d.new_path and d.new_mode}
    listed = repo.run("ls-files", "-s", "-z", "--", *paths, *[sources[p] for p in paths if p in sources],
                      env={"GIT_LITERAL_PATHSPECS": "1"}, strip=False)
    modes = {entry.split("\t", 1)[1]: entry.split()[0] for entry in listed.split("\0") if "\t" in entry}
    zero = "0" * len(repo.resolve("HEAD") or "0" * 40)
    removals, additions, digests = [], [], {}
    for path, data in changes.items():
        if data is None:
            removals.append(f"0 {zero}\t{path}\0")
            digests[path] = None
            continue
        mode = modes.get(path) or modes.get(sources.get(path, "")) or \
            ("100755" if new_modes.get(path) == "100755" else "100644")
        blob = repo.run("hash-object", "-w", "--no-filters", "--stdin", stdin=data)
        additions.append(f"{mode} {blob}\t{path}\0")
        digests[path] = sha256_bytes(data)
    repo.run("update-index", "-z", "--index-info", stdin="".join(removals + additions).encode())
    for path, data in changes.items():
        if data is None:
            target_path = folder / path
            if target_path.is_symlink() or target_path.is_file():
                target_path.unlink()
    written = [path for path, data in changes.items() if data is not None]
    if written:
        repo.run("checkout-index", "--force", "-z", "--stdin", stdin="".join(f"{p}\0" for p in written).encode())
    return digests


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
        full = any(_disk_full(error, folder) for error in errors)
        raise StateError(f"cannot fetch {upstream.name} {commit} for the checkout: {'; '.join(errors)}",
                         _DISK_HINT if full else f"pass a reachable clone with --source {upstream.name}=PATH_OR_URL")
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
        hint = _DISK_HINT if _disk_full(exc, folder) else \
            _LACKS_HINT.format(name=upstream.name) if _MISSING_OBJECT.search(exc.message) else _CAUSE_HINT
        raise StateError(f"cannot check out {upstream.name} at {commit}: {exc.message}", hint) from None
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
    # the release's files as they are, which is what status read: none left out by a .gitignore it
    # ships, none converted by its .gitattributes (info/attributes overrides the tree's own)
    info = folder / ".git" / "info"
    info.mkdir(exist_ok=True)
    (info / "attributes").write_text("* -text -eol -crlf -filter -ident -working-tree-encoding\n")
    repo.run("add", "--all", "--force")
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
    if not os.access(into / STATE, os.W_OK) or _read_only(into):
        # a read-only DIR (an image layer, a read-only mount): no run can be changing it, and nothing
        # could be recovered there, so verify reads it as it is, unless a journal says a run was cut off
        if os.path.lexists(into / STATE / "journal"):
            raise StateError(f"{into} holds an interrupted apply, and its file system is read-only",
                             "make it writable, then run verify again (it finishes or undoes that apply)")
        outcome.notes.append(f"{into} is read-only: verified without taking its lock")
        return _verify_ledger(project, target, into, only, outcome)
    with locked_into(into, outcome.notes):
        return _verify_ledger(project, target, into, only, outcome)


def _read_only(folder: Path) -> bool:
    return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)


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
        out = repo.run("status", "--porcelain=v1", "-z", "--untracked-files=no", "--no-renames", env=_READ_ONLY,
                       strip=False)
        codes = {item[3:]: item[:2] for item in out.split("\0") if len(item) > 3}
        differs = []
        for path, digest in entry.files.items():
            file = folder / path
            actual = sha256_bytes(file.read_bytes()) if file.is_file() and not file.is_symlink() else None
            if actual == digest:
                if codes.get(path) == " M":
                    # exactly the bytes apply committed, which git reads otherwise under the upstream's
                    # `text` rule (a blob with CRLF line ends): not a change
                    del codes[path]
                continue
            if path not in codes and digest is not None and actual is not None and \
                    _checked_out_from(repo, path, file, digest):
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
    cleaned = repo.run("hash-object", f"--path={path}", "--", str(file), env=_READ_ONLY)
    return cleaned == committed[1]
