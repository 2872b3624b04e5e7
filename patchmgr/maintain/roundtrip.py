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

import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from packaging.version import InvalidVersion, Version

from patchmgr.check.status import check_upstream
from patchmgr.engine.classify import check_patch
from patchmgr.engine.results import State
from patchmgr.io.git import GitRepo
from patchmgr.io.journal import locked_recovery
from patchmgr.maintain import manifest_edit
from patchmgr.maintain.edit_record import (NOTES_REF, RECORD, add_note, note_of, read_record, record_bytes,
                                           write_record)
from patchmgr.maintain.export_form import file_form
from patchmgr.maintain.onto import MAILS, OntoOutcome, plan_onto, start_onto
from patchmgr.maintain.rangediff import RangeDiff, range_diff
from patchmgr.model.dep3_edit import set_last_update
from patchmgr.model.errors import GitError, SourceError, StateError, UsageError
from patchmgr.model.manifest import PATCH_ID, Target, Upstream
from patchmgr.model.patchfile import parse_patch
from patchmgr.model.project import Project
from patchmgr.model.records import sha256_bytes
from patchmgr.sources.store import Store
from patchmgr.sources.upstream import GitSource, release_version
from patchmgr.targets.absent import absent_note
from patchmgr.targets.build import build_checkout
from patchmgr.targets.localwork import SAVED_PREFIX, LocalWork, find_local_work, save_local_work, utc_stamp
from patchmgr.targets.project_files import write_files

__all__ = ["NOTES_REF", "RECORD", "edit_checkout", "edit_onto", "export_checkout"]


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
    moved: tuple[str, str, str] | None = None  # (old pin, new base, ref): from an edit --onto checkout
    old_version: str | None = None
    new_version: str | None = None  # None: the version line stays
    dropped: dict[str, str] = field(default_factory=dict)  # removed id -> why (upstream carries it as ...)
    carriers: dict[str, str] = field(default_factory=dict)  # removed id -> the upstream commit with its patch-id
    range_diff: RangeDiff | None = None  # the old series against the new one
    # patch id -> its GuardResults on the checkout's HEAD, after writing (maintain/export_guards.py)
    guards: dict[str, list] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return self.series_changed or bool(self.moved) or any(p.action != "unchanged" for p in self.patches)


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
    if entry.checkout and entry.checkout.absent:
        notes.append(absent_note(upstream.name, upstream.commit[:12], entry.checkout.absent))
    commits = [(p.id, p.commit or "") for p in entry.patches]
    with GitRepo(into) as repo:
        repo.run("config", "notes.rewriteRef", NOTES_REF)  # amend and rebase carry the notes along
        for patch_id, commit in commits:
            add_note(repo, commit, patch_id)
    sums = {p.id: p.sha256 for p in entry.patches}
    write_record(into, target.name, upstream.name, upstream.commit, [(pid, c, sums[pid]) for pid, c in commits])
    return EditOutcome(target.name, upstream, into, upstream.commit, commits, notes)


def edit_onto(project: Project, target: Target, name: str, store: Store, overrides: Mapping[str, str],
              into: Path, ref: str, force: bool = False) -> OntoOutcome:
    """``edit`` at the pin, then the series moved onto ``ref`` there as far as it applies (``maintain.onto``).

    The ref is resolved, and the patches it already carries found, before anything is written: a ref the
    upstream does not have is bad input and leaves ``into`` as it was.
    """
    upstream = target.upstream(name)
    plan = plan_onto(project, upstream, store, overrides, ref)
    edited = edit_checkout(project, target, name, store, overrides, into, force)
    outcome = start_onto(edited.into, project, upstream, plan)
    outcome.notes[:0] = edited.notes
    return outcome


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
    record = read_record(into) if into.is_dir() and (into / ".git" / RECORD).is_file() else None
    if record is None:
        raise UsageError(f"{into} exists and is not an empty folder (nor a checkout patchmgr edit made)",
                         "choose a new folder for --into")
    if (record.get("target"), record.get("upstream")) != (target.name, upstream.name):
        raise StateError(f"{into} is an edit checkout of {record.get('target')}/{record.get('upstream')}, "
                         f"not {target.name}/{upstream.name}", "choose another folder for --into")
    patches = record.get("patches") or []
    # during a move (edit --onto) not yet exported, every commit on the new base is work: none is written back
    onto_base = (record.get("onto") or {}).get("commit")
    work = find_local_work(upstream.name, into, onto_base or (patches[-1]["commit"] if patches else record.get("pin")))
    if work and not force:
        raise StateError(f"edit would rebuild {into} and lose work not yet exported: {work.describe()}; "
                         "nothing was changed",
                         f"write it back first with: patchmgr export --target {target.name} --upstream "
                         f"{upstream.name} --from {into} (and commit or remove other files), or run edit again "
                         f"with --force to save it on a branch {SAVED_PREFIX}<UTC time> in the new checkout"
                         + (f"; a move to {record['onto'].get('ref')} is under way there: finish it with patchmgr "
                            f"edit --continue/--skip/--abort --into {into}" if record.get("onto") else ""))
    return work or None


def export_checkout(project: Project, target: Target, name: str, source: Path, version: str | None = None
                    ) -> ExportOutcome:
    """Write the commits of an ``edit`` checkout back as the upstream's patch files and series.

    From a checkout that ``edit --onto REF`` moved, the pin (and version) moves
    to the new base too, patches that upstream carries leave the series with
    their commit named, and ``Last-Update`` of each changed patch becomes today.
    Every patch is generated and checked, and the new manifest text validated,
    before anything is written; then the patch files, the removals, the
    manifest and the checkout's record are written in one journaled
    transaction (``project_files.write_files``): all of them, or none.
    """
    upstream = target.upstream(name)
    source = source.resolve()
    record = read_record(source)
    if (record.get("target"), record.get("upstream")) != (target.name, upstream.name):
        raise StateError(f"{source} was made for {record.get('target')}/{record.get('upstream')}, "
                         f"not {target.name}/{upstream.name}", "export into the target and upstream it was made for")
    pin = record.get("pin")
    if pin != upstream.commit:
        raise StateError(f"{upstream.name}: the pin moved from {str(pin)[:12]} to {upstream.commit[:12]} since edit",
                         "run patchmgr edit again on the new pin and redo the change there")
    onto = record.get("onto")
    outcome = ExportOutcome(upstream, source)
    _new_version(outcome, onto, version)
    with GitRepo(source) as repo:
        _refuse_unfinished(repo, source, onto)
        base = onto["commit"] if onto else pin
        commits = _commits_since(repo, base, source)
        known = {p["commit"]: p for p in record.get("patches", [])}
        # a commit that lost its note (cherry-picked) is still its patch when the subject says so
        by_subject = {p.subject: p.id for p in reversed(project.patches(upstream)) if p.subject}
        used: set[str] = set()
        exported: list[tuple[ExportedPatch, bytes | None]] = []
        for commit, subject in commits:
            entry = known.get(commit)
            wanted = entry["id"] if entry else note_of(repo, commit)
            if wanted is None and by_subject.get(subject) not in used:
                wanted = by_subject.get(subject)
            patch_id = _patch_id(wanted, subject, used)
            path = project.patch_path(upstream.name, patch_id)
            if entry and entry["id"] == patch_id and path.is_file() and (
                    not onto or _file_makes(repo, commit, path, entry, upstream.name, patch_id)):
                exported.append((ExportedPatch(patch_id, commit, "unchanged", path), None))
                continue
            data = repo.format_patch(commit).encode("utf-8")
            if "\ndiff --git " not in data.decode("utf-8"):
                raise StateError(f"commit {commit[:12]} ({subject}) changes nothing",
                                 "drop it (git rebase -i) or give it a change, then export again")
            data = file_form(repo, record, commit, patch_id, path, data)  # a plain DEP-3 diff stays one
            parse_patch(data, path, upstream.name, patch_id)
            if path.is_file() and path.read_bytes() == data:
                exported.append((ExportedPatch(patch_id, commit, "unchanged", path), data))
                continue
            data = set_last_update(data)
            parse_patch(data, path, upstream.name, patch_id)
            exported.append((ExportedPatch(patch_id, commit, "updated" if path.is_file() else "added", path), data))
        series = [p.id for p, _ in exported]
        outcome.patches = [p for p, _ in exported]
        outcome.removed = [pid for pid in upstream.patch_ids if pid not in series]
        outcome.series_changed = series != list(upstream.patch_ids)
        if onto:
            outcome.moved = (pin, base, onto["ref"])
            carried = {c["id"]: c for c in onto.get("carried") or []}
            for patch_id in outcome.removed:
                if patch_id in carried:
                    c = carried[patch_id]
                    outcome.dropped[patch_id] = f"upstream carries it as {c['commit'][:7]} ({c['subject']})"
                    outcome.carriers[patch_id] = c["commit"]
                elif patch_id in (onto.get("skipped") or []):
                    outcome.dropped[patch_id] = f"skipped during edit --onto {onto['ref']}"
        old_tip = onto["old_tip"] if onto else (record.get("patches") or [{}])[-1].get("commit")
        if outcome.changed and old_tip and old_tip != pin:
            outcome.range_diff = range_diff(repo, f"{pin}..{old_tip}", f"{base}..HEAD")
    writes, expected = _export_changes(project, target, outcome, exported, series)
    sums = [(p.id, p.commit, sha256_bytes(data if data is not None else _read(p.path))) for p, data in exported]
    if not writes:  # no project file changes: only the checkout's record, which is not the project's
        try:
            write_record(source, target.name, upstream.name, base, sums)
        except OSError as exc:
            raise StateError(f"cannot write {exc.filename or source}: {exc.strerror or exc}",
                             "fix the cause, then export again") from None
        return outcome
    writes[source / ".git" / RECORD] = record_bytes(target.name, upstream.name, base, sums)
    write_files(project.root, writes, expected)
    if onto:
        shutil.rmtree(source / ".git" / MAILS, ignore_errors=True)
    return outcome


def _new_version(outcome: ExportOutcome, onto: dict | None, version: str | None) -> None:
    """The version the pin moves to (``--version``, else the ref's tag), or a note why it stays."""
    upstream = outcome.upstream
    if version is not None:
        try:
            Version(version)
        except InvalidVersion:
            raise UsageError(f"--version {version!r} is not a PEP 440 version; nothing was written",
                             "give the upstream's release version at the new ref, e.g. --version 0.5.0") from None
        if not onto:
            raise UsageError("--version goes with an export from an edit --onto checkout (the pin moves there); "
                             "nothing was written", "leave --version out, or move the series with edit --onto REF")
    if not onto:
        return
    outcome.old_version = upstream.version
    guessed = version or release_version(upstream, onto["ref"])
    if version is not None or (upstream.version and guessed):
        outcome.new_version = guessed
    elif upstream.version:
        outcome.notes.append(f"version stays {upstream.version}: {onto['ref']} names no release version; pass "
                             "--version X.Y.Z if it changed")


def _refuse_unfinished(repo: GitRepo, source: Path, onto: dict | None) -> None:
    if repo.am_in_progress() or (onto and (onto.get("queue") or onto.get("current"))):
        waiting = (onto or {}).get("current") or ((onto or {}).get("queue") or [{}])[0].get("id")
        what = f"the move to {onto['ref']} stopped at {waiting}" if onto and waiting else "a git am is in progress"
        raise StateError(f"{source}: {what}; export writes nothing until it is finished",
                         f"resolve the conflicts, git add them, then patchmgr edit --continue --into {source} "
                         f"(or --skip, or --abort), then export again")


def _file_makes(repo: GitRepo, commit: str, path: Path, entry: dict, upstream: str, patch_id: str) -> bool:
    """Whether the patch file, still as edit --onto applied it, applies exactly (``clean``) on ``commit``'s
    parent: then the commit is the file's change there, and the file stays byte for byte."""
    data = _read(path)
    if sha256_bytes(data) != entry.get("sha256"):
        return False
    parents = repo.commit_info(commit).parents
    if len(parents) != 1:
        return False
    patch = parse_patch(data, path, upstream, patch_id)
    return check_patch(patch, GitSource(repo, parents[0], str(repo.path))).state is State.CLEAN


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
    if outcome.series_changed or outcome.moved:
        data = _read(target.path)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise StateError(f"{target.path}: not UTF-8 text", "save the manifest as UTF-8") from exc
        new_text = manifest_edit.series_text(text, target.path, upstream.name, series)
        if outcome.moved:
            _old, base, ref = outcome.moved
            new_text = manifest_edit.pin_text(new_text, target.path, upstream.name, base, ref, outcome.new_version)
        manifest_edit.check_manifest(target.path, new_text, project.patches_dir,
                                     {p for p, d in writes.items() if d is not None})
        if new_text != text:
            writes[target.path] = new_text.encode("utf-8")
            expected[target.path] = data
    return writes, expected


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
    commits = []
    for info in repo.log_commits("--reverse", "--topo-order", f"{pin}..HEAD"):
        if len(info.parents) > 1:
            raise StateError(f"commit {info.sha[:12]} is a merge; a patch series is a straight line",
                             f"rebase the commits onto {pin[:12]} without merges")
        commits.append((info.sha, info.subject))
    return commits


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
