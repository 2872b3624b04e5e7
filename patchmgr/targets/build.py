"""Building one checkout: the pinned commit (or an imported release), then one commit per patch."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from patchmgr.check.status import UpstreamStatus
from patchmgr.engine.results import CheckResult
from patchmgr.io.disk import FREE_SPACE, disk_full
from patchmgr.io.faults import step
from patchmgr.io.git import GitRepo, identity_env
from patchmgr.io.git_commits import SeriesCommit, commit_series, write_blobs
from patchmgr.model.diff import REGULAR_MODE
from patchmgr.model.errors import GitError, StateError
from patchmgr.model.mail import FIXED_DATE, commit_spec
from patchmgr.model.manifest import Upstream
from patchmgr.model.patchfile import PatchFile
from patchmgr.model.records import sha256_bytes
from patchmgr.model.text import as_bytes
from patchmgr.model.urls import without_credentials
from patchmgr.sources.release import FileKind, ReleaseSource
from patchmgr.sources.upstream import Sources
from patchmgr.targets.absent import leave_out_absent
from patchmgr.targets.cache_remote import fetch_from_cache
from patchmgr.targets.ledger import AppliedPatch, CheckoutPart, UpstreamLedger

# what git says when an object of the commit is not there and no remote can provide it
_MISSING_OBJECT = re.compile(
    r"from promisor remote|unable to read sha1 file|unable to read [0-9a-f]{7,}"
    r"|missing (?:blob|tree|object)|bad object|not our ref|did not send all necessary"
    r"|is not a valid object|could not read object",
    re.I,
)


DISK_HINT = f"{FREE_SPACE}, then run apply again"
CAUSE_HINT = "fix the cause above, then run apply again"
_LACKS_HINT = "the source lacks files of that commit; use a complete clone with --source {name}=PATH_OR_URL"


def write_hint(exc: OSError | GitError, folder: Path) -> str:
    """The hint for a write under ``folder`` that failed while apply builds checkouts: free space when the
    disk is full, else fix the cause named."""
    return DISK_HINT if disk_full(exc, folder) else CAUSE_HINT


def build_checkout(upstream_status: UpstreamStatus, sources: Sources, staging: Path, target: str) -> UpstreamLedger:
    """The checkout of one upstream of ``target`` in ``staging``, one commit per patch."""
    upstream, origin = upstream_status.upstream, upstream_status.origin
    folder = staging / upstream.name
    origin_after = None
    if origin is not None and upstream_status.release is not None:
        repo, base, absent = _import_release(upstream_status.release, folder)
    elif origin is not None and upstream_status.commit is not None:
        repo, base, absent, origin_after = _fetch_pin(upstream, upstream_status.commit, sources, folder, target)
    else:  # apply builds only upstreams whose status is available, and each of those was read from a source
        raise StateError(
            f"cannot check out {upstream.name}: no source gave a commit ({upstream_status.error or 'none was read'})",
            CAUSE_HINT,
        )
    step()
    applied = []
    files: dict[str, str | None] = {}
    try:
        results = upstream_status.results
        pin_tree = repo.tree_entries(base)
        if upstream_status.release is None:
            _fetch_blobs(repo, pin_tree, absent)
        with _checking_out(upstream, base):  # the index and the work tree, written once, at the last commit
            made = _commit_at_once(repo, results, base, {path: mode for mode, _k, _s, path in pin_tree}, files)
        head: str | None
        if made is not None:
            applied = [
                AppliedPatch(r.patch.id, r.patch.sha256, commit) for r, commit in zip(results, made, strict=True)
            ]
            head = made[-1] if made else base
        else:  # one the series' commits fast-import would not make as git commit does: one commit at a time
            files.clear()
            with _checking_out(upstream, base):
                repo.run("reset", "--quiet", "--hard", base)
            # every file of every patch written as a blob in one git process (one per file cost a process each)
            contents = [data for result in results for data in result.files.values() if data is not None]
            blobs, zero = iter(write_blobs(repo, contents)), "0" * len(base)
            for result in results:
                files.update(_stage(repo, folder, result.patch, result.files, blobs, zero))
                _commit(repo, result.patch)
                applied.append(AppliedPatch(result.patch.id, result.patch.sha256, repo.resolve("HEAD")))
                step()
            head = repo.resolve("HEAD")
        if origin_after is not None:
            sources.store.configure_remote(repo, origin_after)
    finally:
        repo.close()
    return UpstreamLedger(
        upstream.name, upstream.commit, applied, files, checkout=CheckoutPart(base, head, origin.as_recorded(), absent)
    )


def _stage(
    repo: GitRepo, folder: Path, patch: PatchFile, changes: Mapping[str, bytes | None], blobs: Iterator[str], zero: str
) -> dict[str, str | None]:
    """Put the engine's bytes for one patch into the index as they are, then into the work tree.

    Each file becomes a blob of exactly the bytes ``status`` computed (``hash-object --no-filters``: ``blobs``
    holds their ids, written for the whole series at once, in the order of the changes; ``zero`` is the null id),
    entered in the index directly, so neither the upstream's .gitignore (a created file it ignores)
    nor its .gitattributes (``eol``, ``text``, ``working-tree-encoding``, filters) changes what is
    committed. The work tree is then written from the index with the upstream's attributes applied,
    as any checkout of that commit is. The sha256 of each file's bytes (None: deleted), for the ledger.
    """
    if not changes:
        return {}
    paths = list(changes)
    sources = {d.new_path: d.old_path for d in patch.files if d.new_path and d.old_path}
    listed = repo.run(
        "ls-files",
        "-s",
        "-z",
        "--",
        *paths,
        *[sources[p] for p in paths if p in sources],
        env={"GIT_LITERAL_PATHSPECS": "1"},
        strip=False,
    )
    modes = {entry.split("\t", 1)[1]: entry.split()[0] for entry in listed.split("\0") if "\t" in entry}
    removals: list[str] = []
    additions: list[str] = []
    digests: dict[str, str | None] = {}
    for path, data in changes.items():
        if data is None:
            removals.append(f"0 {zero}\t{path}\0")
            digests[path] = None
            continue
        mode = staged_mode(path, data, patch, modes)
        blob = next(blobs)
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


def _fetch_blobs(repo: GitRepo, pin_tree: Sequence[tuple[str, str, str, str]], absent: Sequence[str]) -> None:
    """Every blob of the pin the source has, in one request: what a checkout of the pin would fetch, and the
    pre-images of the files the series changes, which a later ``git am -3`` (edit --onto) merges with once the
    origin may be out of reach. Best effort: a blob that cannot be fetched fails the checkout, which says why."""
    left_out = set(absent)
    wanted = [sha for _mode, kind, sha, path in pin_tree if kind == "blob" and path not in left_out]
    if wanted:  # a fetch asking for nothing would fetch origin's branches
        repo.fetch_objects(wanted)


def _commit_at_once(
    repo: GitRepo, results: Sequence[CheckResult], base: str, modes: dict[str, str], files: dict[str, str | None]
) -> list[str] | None:
    """The series' commits made in one fast-import (``io.git_commits``), each the object ``git commit`` makes of
    it, then the index and work tree at the last: their ids, with ``files`` filled with the sha256 of each file's
    bytes (None: deleted). ``modes``: each path's mode at the pin (nothing is checked out before the last commit).
    None, with nothing done, where fast-import cannot make one of them so."""
    modes = dict(modes)
    commits: list[SeriesCommit] = []
    digests: dict[str, str | None] = {}
    for result in results:
        changes: list[tuple[str, str, bytes | None]] = []
        staged: dict[str, str] = {}
        for path, data in result.files.items():
            if data is None:
                changes.append((path, "", None))
                digests[path] = None
                continue
            staged[path] = staged_mode(path, data, result.patch, modes)
            changes.append((path, staged[path], data))
            digests[path] = sha256_bytes(data)
        for path, data in result.files.items():  # the index after this patch: what the next one's modes read
            if data is None:
                modes.pop(path, None)
        modes.update(staged)
        spec = commit_spec(result.patch)
        commits.append(SeriesCommit(spec.name, spec.address, spec.date, spec.message, tuple(changes)))
        step()
    made = commit_series(repo, "patchmgr", base, commits)
    if made is not None:
        files.update(digests)
    return made


def staged_mode(path: str, data: bytes, patch: PatchFile, modes: Mapping[str, str]) -> str:
    """The mode a checkout gives ``path`` after ``patch`` made ``data`` of it: the mode the patch gives it (the
    engine's ``ModedBytes``: a mode change, a new executable file, a link), else its mode there (``modes``), or
    that of the file it was renamed from, else 100644."""
    sources = {d.new_path: d.old_path for d in patch.files if d.new_path and d.old_path}
    return getattr(data, "mode", None) or modes.get(path) or modes.get(sources.get(path, "")) or REGULAR_MODE


def _fetch_pin(
    upstream: Upstream, commit: str, sources: Sources, folder: Path, target: str
) -> tuple[GitRepo, str, list[str], str | None]:
    """A partial clone of the source with ``commit`` on an unborn ``patchmgr`` branch, nothing checked out yet;
    files the source lacks will stay out of the work tree. Last, the URL ``origin`` is to name once the checkout
    is written (None: it names it already).

    The checkout fetches from patchmgr's cache only when ``patchmgr fetch`` filled
    it with every blob of the commit (a blobless cache cannot serve blobs it never
    fetched); otherwise from the upstream's source itself. Either way ``origin``
    ends up naming the real upstream, so the checkout does not depend on the cache.
    """
    repo = GitRepo.init(folder, branch="patchmgr")
    errors = []
    store = sources.store
    urls = list(sources.urls(upstream))
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
        full = any(disk_full(error, folder) for error in errors)
        if full or recorded_absent is not None:  # the cache was tried first, and failed too
            repo.close()
            raise StateError(
                f"cannot fetch {upstream.name} {commit} for the checkout: {'; '.join(errors)}",
                DISK_HINT if full else f"pass a reachable clone with --source {upstream.name}=PATH_OR_URL",
            )
        try:
            fetch_from_cache(repo, store, upstream.name, commit, "; ".join(errors) or "no source URL", target)
        except BaseException:
            repo.close()
            raise
    fetched_from = repo.run("remote", "get-url", "origin")
    cached = fetched_from == str(store.repo_path(upstream.name))
    # the patterns of the pin's tree hold at the last commit too: a patch that touches an absent file is refused
    absent = leave_out_absent(repo, folder, commit, recorded_absent if cached else None)
    real = [url for url in urls if url != str(store.repo_path(upstream.name))]
    # the URL without its login: a build is what an image COPYs, and its .git/config went with it (edit --onto
    # fetches with the login again, maintain/onto.py); set once the checkout is written, whose lazy fetch of
    # the blobs goes where the fetch of the pin went (the cache, when it served it)
    if real and fetched_from != without_credentials(real[0]):
        return repo, commit, absent, without_credentials(real[0])
    return repo, commit, absent, None


@contextmanager
def _checking_out(upstream: Upstream, commit: str) -> Iterator[None]:
    """A checkout of ``upstream`` from ``commit`` on that fails for an object the source lacks says so (any other
    failure goes on as it is: the build's failure, with the hint for its cause)."""
    try:
        yield
    except GitError as exc:
        if not _MISSING_OBJECT.search(exc.message):
            raise
        raise StateError(
            f"cannot check out {upstream.name} at {commit}: {exc.message}", _LACKS_HINT.format(name=upstream.name)
        ) from None


def _import_release(source: ReleaseSource, folder: Path) -> tuple[GitRepo, str, list[str]]:
    """A git repository whose first commit is the release's files in the upstream's git layout."""
    repo = GitRepo.init(folder)
    destination = folder / (source.package_root if source.file.kind is FileKind.WHEEL else "")
    shutil.copytree(
        source.tree,
        destination,
        dirs_exist_ok=True,
        symlinks=True,
        ignore=shutil.ignore_patterns("*.dist-info", "*.data", "__pycache__"),
    )
    # the release's files as they are, which is what status read: none left out by a .gitignore it
    # ships, none converted by its .gitattributes (info/attributes overrides the tree's own)
    info = folder / ".git" / "info"
    info.mkdir(exist_ok=True)
    (info / "attributes").write_text("* -text -eol -crlf -filter -ident -working-tree-encoding\n")
    repo.run("add", "--all", "--force")
    message = (
        f"{source.project} {source.version} from {source.file.filename}\n\n"
        f"Imported by patchmgr from the package index (sha256 {source.file.sha256}),\n"
        f"because no git source of the pin was reachable.\n"
    )
    env = identity_env(date=FIXED_DATE)
    repo.run("commit", "--quiet", "--no-verify", "-F", "-", stdin=message.encode(), env=env)
    repo.run("branch", "-M", "patchmgr")
    base = repo.resolve("HEAD")
    if base is None:  # the commit just made: git failing to make it raised above
        raise StateError(f"the import of {source.project} {source.version} left no commit in {folder}", CAUSE_HINT)
    return repo, base, []


def _commit(repo: GitRepo, patch: PatchFile) -> None:
    """One commit per patch, message, author and date from the patch in whatever form it is (``model.mail``),
    so the same series gives the same ids, and edit --onto's git am makes the same commit."""
    spec = commit_spec(patch)
    env = identity_env(spec.name, spec.address, spec.date)
    repo.run("commit", "--quiet", "--no-verify", "--allow-empty", "-F", "-", stdin=as_bytes(spec.message), env=env)
