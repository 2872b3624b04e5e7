"""Edit patches as commits and write them back (``patchmgr edit`` / ``patchmgr export``).

As Electron's git-import-patches/git-export-patches and gbp pq do it: ``edit``
checks the upstream out at its pin with each patch as one commit (message,
author and date from the patch); the user amends, rebases, adds or drops
commits there; ``export`` writes each commit back as a patch file in the
project's format (``git format-patch --zero-commit --full-index``) and sets
the series to the commits' order.

Export is stable: a commit that is still the one ``edit`` made leaves its
patch file untouched, and a regenerated patch equal to the file is not
rewritten. Which patch a commit is follows it through amends and rebases in
a git note (``refs/notes/patchmgr``), so the commit message stays the patch's.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from patchmgr.check.status import check_upstream
from patchmgr.io.git import GitRepo, identity_env
from patchmgr.io.journal import locked_recovery
from patchmgr.maintain import manifest_edit
from patchmgr.model.errors import GitError, SourceError, StateError, UsageError
from patchmgr.model.manifest import PATCH_ID, Target, Upstream
from patchmgr.model.patchfile import parse_patch
from patchmgr.model.project import Project
from patchmgr.model.records import sha256_bytes
from patchmgr.sources.store import Store
from patchmgr.targets.build import build_checkout
from patchmgr.targets.localwork import SAVED_PREFIX, LocalWork, find_local_work, save_local_work, utc_stamp
from patchmgr.targets.project_files import write_files

RECORD = "patchmgr-edit.json"
NOTES_REF = "refs/notes/patchmgr"
_NOTE_PREFIX = "patchmgr-patch: "


@dataclass
class EditOutcome:
    target: str
    upstream: Upstream
    into: Path
    pin: str
    commits: list[tuple[str, str]]  # (patch id, commit)
    notes: list[str] = field(default_factory=list)


@dataclass
class ExportedPatch:
    id: str
    commit: str
    action: str  # "unchanged" | "updated" | "added"
    path: Path


@dataclass
class ExportOutcome:
    upstream: Upstream
    source: Path
    patches: list[ExportedPatch] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    series_changed: bool = False
    shared: dict[str, list[str]] = field(default_factory=dict)  # removed id -> other targets keeping its file
    notes: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.series_changed or any(p.action != "unchanged" for p in self.patches)


def edit_checkout(project: Project, target: Target, name: str, store: Store, overrides: Mapping[str, str],
                  into: Path, force: bool = False) -> EditOutcome:
    """A checkout of ``name`` at its pin in ``into``, one commit per patch.

    ``into`` may be empty, or an earlier edit checkout of the same upstream: that one is rebuilt only when
    it holds nothing that export has not written back (commits, changed or untracked files, branches,
    stashes), or with ``force`` after that work is carried into the new checkout as branches.
    """
    upstream = target.upstream(name)
    into = into.resolve()
    staging = into.parent / f".{into.name}.patchmgr-edit"  # the lock, the checkout being built, the old one aside
    with locked_recovery(staging, "fix the cause (permissions, space), then run edit again",
                         leftovers=partial(_recover_edit_swap, into, staging)) as done:
        try:
            return _edit_locked(project, target, upstream, store, overrides, into, staging, force,
                                [done.message] if done.message else [])
        finally:
            shutil.rmtree(staging, ignore_errors=True)  # under the lock: a run waiting for it locks anew


def _edit_locked(project: Project, target: Target, upstream: Upstream, store: Store, overrides: Mapping[str, str],
                 into: Path, staging: Path, force: bool, notes: list[str]) -> EditOutcome:
    name = upstream.name
    work = _edit_local_work(into, target, upstream, force)
    status = check_upstream(project, upstream, store, overrides, None)
    if not status.available:
        raise SourceError(status.error or f"{name} is unavailable", status.hint)
    if status.release is not None:
        raise StateError(f"{name}: edit needs a git source of the pin, not {status.source}",
                         f"pass a clone with --source {name}=PATH_OR_URL")
    broken = [f"{r.patch.id} ({r.state.value})" for r in status.results if not r.state.applies]
    if broken:
        raise StateError(f"{name}: not every patch applies at the pin: {', '.join(broken)}",
                         "fix those patch files first; `patchmgr status` shows why")
    _clear(staging)
    try:
        entry = build_checkout(status, store, overrides, staging)
        if work:
            try:
                branches = save_local_work(work, staging / upstream.name, utc_stamp())
            except (OSError, GitError) as exc:
                detail = exc.message if isinstance(exc, GitError) else (exc.strerror or str(exc))
                raise StateError(f"cannot save the local work in {into} into its new checkout: {detail}; "
                                 "nothing was changed", "fix the cause above, or save that work yourself, "
                                 "then run edit again") from None
            notes.append(f"saved local work of {upstream.name} on {'branch' if len(branches) == 1 else 'branches'} "
                         f"{', '.join(branches)} in {into} ({work.counts()})")
        moved = into.is_dir() and any(into.iterdir())
        if moved:
            # the old checkout goes aside first; a run killed between the two renames puts it back next time
            into.rename(staging / _REPLACED)
        elif into.exists():
            into.rmdir()
        try:
            (staging / upstream.name).rename(into)
        except BaseException:
            if moved:
                (staging / _REPLACED).rename(into)
            raise
    finally:
        _clear(staging)
    commits = [(p.id, p.commit or "") for p in entry.patches]
    with GitRepo(into) as repo:
        repo.run("config", "notes.rewriteRef", NOTES_REF)  # amend and rebase carry the notes along
        for patch_id, commit in commits:
            repo.run("notes", "--ref", NOTES_REF, "add", "-f", "-m", _NOTE_PREFIX + patch_id, commit,
                     env=identity_env())
    sums = {p.id: p.sha256 for p in entry.patches}
    _write_record(into, target.name, upstream.name, upstream.commit, [(pid, c, sums[pid]) for pid, c in commits])
    return EditOutcome(target.name, upstream, into, upstream.commit, commits, notes)


_REPLACED = "replaced"


def _recover_edit_swap(into: Path, staging: Path) -> str | None:
    """Put back an old edit checkout that a killed run had moved aside and not yet replaced (this edit's own undo,
    run by ``locked_recovery``); say so."""
    message = None
    if not into.exists() and (staging / _REPLACED).is_dir():
        (staging / _REPLACED).rename(into)
        message = f"recovered {into}: an interrupted edit had moved it aside; put it back"
    _clear(staging)
    return message


def _clear(staging: Path) -> None:
    """The checkouts in ``staging`` (being built, or moved aside), not its lock."""
    for child in staging.iterdir() if staging.is_dir() else ():
        if child.name == "lock":
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink()


def _edit_local_work(into: Path, target: Target, upstream: Upstream, force: bool) -> LocalWork | None:
    """The work in an earlier edit checkout at ``into`` that rebuilding it would lose; refuses unless forced."""
    if not into.exists() or (into.is_dir() and not any(into.iterdir())):
        return None
    record = _read_record(into) if into.is_dir() and (into / ".git" / RECORD).is_file() else None
    if record is None:
        raise UsageError(f"{into} exists and is not an empty folder (nor a checkout patchmgr edit made)",
                         "choose a new folder for --into")
    if (record.get("target"), record.get("upstream")) != (target.name, upstream.name):
        raise StateError(f"{into} is an edit checkout of {record.get('target')}/{record.get('upstream')}, "
                         f"not {target.name}/{upstream.name}", "choose another folder for --into")
    patches = record.get("patches") or []
    work = find_local_work(upstream.name, into, patches[-1]["commit"] if patches else record.get("pin"))
    if work and not force:
        raise StateError(f"edit would rebuild {into} and lose work not yet exported: {work.describe()}; "
                         "nothing was changed",
                         f"write it back first with: patchmgr export --target {target.name} --upstream "
                         f"{upstream.name} --from {into} (and commit or remove other files), or run edit again "
                         f"with --force to save it on a branch {SAVED_PREFIX}<UTC time> in the new checkout")
    return work or None


def export_checkout(project: Project, target: Target, name: str, source: Path) -> ExportOutcome:
    """Write the commits of an ``edit`` checkout back as the upstream's patch files and series.

    Every patch is generated and checked, and the new manifest text validated,
    before anything is written; then the patch files, the removals, the
    manifest and the checkout's record are written in one journaled
    transaction (``project_files.write_files``): all of them, or none.
    """
    upstream = target.upstream(name)
    source = source.resolve()
    record = _read_record(source)
    if (record.get("target"), record.get("upstream")) != (target.name, upstream.name):
        raise StateError(f"{source} was made for {record.get('target')}/{record.get('upstream')}, "
                         f"not {target.name}/{upstream.name}", "export into the target and upstream it was made for")
    pin = record.get("pin")
    if pin != upstream.commit:
        raise StateError(f"{upstream.name}: the pin moved from {str(pin)[:12]} to {upstream.commit[:12]} since edit",
                         "run patchmgr edit again on the new pin and redo the change there")
    outcome = ExportOutcome(upstream, source)
    with GitRepo(source) as repo:
        commits = _commits_since(repo, pin, source)
        known = {p["commit"]: p["id"] for p in record.get("patches", [])}
        # a commit that lost its note (cherry-picked) is still its patch when the subject says so
        by_subject = {p.subject: p.id for p in reversed(project.patches(upstream)) if p.subject}
        used: set[str] = set()
        exported: list[tuple[ExportedPatch, bytes | None]] = []
        for commit, subject in commits:
            wanted = known.get(commit) or _note(repo, commit)
            if wanted is None and by_subject.get(subject) not in used:
                wanted = by_subject.get(subject)
            patch_id = _patch_id(wanted, subject, used)
            path = project.patch_path(upstream.name, patch_id)
            if commit in known and path.is_file():
                exported.append((ExportedPatch(patch_id, commit, "unchanged", path), None))
                continue
            data = repo.format_patch(commit).encode("utf-8")
            if "\ndiff --git " not in data.decode("utf-8"):
                raise StateError(f"commit {commit[:12]} ({subject}) changes nothing",
                                 "drop it (git rebase -i) or give it a change, then export again")
            parse_patch(data, path, upstream.name, patch_id)
            action = "unchanged" if path.is_file() and path.read_bytes() == data else (
                "updated" if path.is_file() else "added")
            exported.append((ExportedPatch(patch_id, commit, action, path), data))
    series = [p.id for p, _ in exported]
    outcome.patches = [p for p, _ in exported]
    outcome.removed = [pid for pid in upstream.patch_ids if pid not in series]
    outcome.series_changed = series != list(upstream.patch_ids)
    writes, expected = _export_changes(project, target, outcome, exported, series)
    sums = [(p.id, p.commit, sha256_bytes(data if data is not None else _read(p.path))) for p, data in exported]
    if not writes:  # no project file changes: only the checkout's record, which is not the project's
        try:
            _write_record(source, target.name, upstream.name, pin, sums)
        except OSError as exc:
            raise StateError(f"cannot write {exc.filename or source}: {exc.strerror or exc}",
                             "fix the cause, then export again") from None
        return outcome
    writes[source / ".git" / RECORD] = _export_record(target.name, upstream.name, pin, sums)
    write_files(project.root, writes, expected)
    return outcome


def _export_changes(project: Project, target: Target, outcome: ExportOutcome,
                    exported: list[tuple[ExportedPatch, bytes | None]], series: list[str]
                    ) -> tuple[dict[Path, bytes | None], dict[Path, bytes | None]]:
    """The project files an export writes (None: removes) and what each held; checks the new manifest."""
    upstream = outcome.upstream
    writes: dict[Path, bytes | None] = {}
    expected: dict[Path, bytes | None] = {}
    for patch, data in exported:
        if data is not None and patch.action != "unchanged":
            writes[patch.path] = data
            expected[patch.path] = _read(patch.path) if patch.path.is_file() else None
    for patch_id in outcome.removed:
        users = manifest_edit.listed_elsewhere(project, target.name, upstream.name, patch_id)
        if users:
            outcome.shared[patch_id] = users
        else:
            path = project.patch_path(upstream.name, patch_id)
            if path.is_file():
                writes[path] = None
                expected[path] = _read(path)
    if outcome.series_changed:
        data = _read(target.path)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise StateError(f"{target.path}: not UTF-8 text", "save the manifest as UTF-8") from exc
        new_text = manifest_edit.series_text(text, target.path, upstream.name, series)
        manifest_edit.check_manifest(target.path, new_text, project.patches_dir,
                                     {p for p, d in writes.items() if d is not None})
        if new_text != text:
            writes[target.path] = new_text.encode("utf-8")
            expected[target.path] = data
    return writes, expected


def _export_record(target: str, upstream: str, pin: str, patches: list[tuple[str, str, str]]) -> bytes:
    """The bytes ``_write_record`` writes, for the export's transaction."""
    record = {"format": 1, "target": target, "upstream": upstream, "pin": pin,
              "patches": [{"id": pid, "commit": commit, "sha256": digest} for pid, commit, digest in patches]}
    return (json.dumps(record, indent=2) + "\n").encode("utf-8")


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise StateError(f"cannot read {path}: {exc.strerror}", "fix its permissions, then export again") from None


def _commits_since(repo: GitRepo, pin: str, folder: Path) -> list[tuple[str, str]]:
    if repo.run("status", "--porcelain", "--untracked-files=no"):
        raise StateError(f"{folder} has uncommitted changes", "commit them (one commit per patch), then export")
    if not repo.run_ok("merge-base", "--is-ancestor", pin, "HEAD"):
        raise StateError(f"HEAD of {folder} does not sit on the pin {pin[:12]}", "rebase the commits onto the pin")
    out = repo.run("log", "--reverse", "--topo-order", "--format=%H%x00%P%x00%s", f"{pin}..HEAD")
    commits = []
    for line in out.splitlines():
        commit, parents, subject = line.split("\x00", 2)
        if len(parents.split()) > 1:
            raise StateError(f"commit {commit[:12]} is a merge; a patch series is a straight line",
                             f"rebase the commits onto {pin[:12]} without merges")
        commits.append((commit, subject))
    return commits


def _note(repo: GitRepo, commit: str) -> str | None:
    if not repo.run_ok("notes", "--ref", NOTES_REF, "show", commit):
        return None
    for line in repo.run("notes", "--ref", NOTES_REF, "show", commit).splitlines():
        if line.startswith(_NOTE_PREFIX):
            return line[len(_NOTE_PREFIX):].strip()
    return None


def _patch_id(wanted: str | None, subject: str, used: set[str]) -> str:
    """The patch id for a commit: its note's, else one made from its subject; never one already used."""
    base = wanted if wanted and PATCH_ID.match(wanted) else slug(subject)
    patch_id, number = base, 2
    while patch_id in used:
        patch_id, number = f"{base}-{number}", number + 1
    used.add(patch_id)
    return patch_id


def slug(subject: str) -> str:
    words = re.sub(r"[^a-z0-9]+", "-", subject.lower()).strip("-")
    return words[:60].rstrip("-") or "patch"


def _write_record(folder: Path, target: str, upstream: str, pin: str, patches: list[tuple[str, str, str]]) -> None:
    record = {"format": 1, "target": target, "upstream": upstream, "pin": pin,
              "patches": [{"id": pid, "commit": commit, "sha256": digest} for pid, commit, digest in patches]}
    (folder / ".git" / RECORD).write_text(json.dumps(record, indent=2) + "\n")


def _read_record(folder: Path) -> dict:
    path = folder / ".git" / RECORD
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise StateError(f"{folder} was not made by `patchmgr edit` (no readable {RECORD})",
                         "make one with: patchmgr edit --target T --upstream NAME --into DIR") from exc
