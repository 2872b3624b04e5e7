"""Apply a target into an installed Python environment (``--python PATH``), verify it, revert it.

All or nothing across the target, through one journaled transaction that
writes the patched files, the distributions' RECORD files (so pip's view stays
consistent) and the ledger together. Stale bytecode of changed modules is
removed. The original bytes of every touched file, and the original RECORD,
are kept so that ``revert`` restores them exactly.

Only files inside the distribution's own packages are written (other paths
of a patch are left out with a note; a ``.pth`` or a new top-level module is
refused). A file edited since apply is never overwritten by ``revert`` or a
re-``apply`` unless ``--force``, which first saves it, in the same
transaction, under ``<state>/<target>/saved/<UTC time>/``.
"""

from __future__ import annotations

import base64
import csv
import errno
import hashlib
import io
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from functools import partial
from pathlib import Path

from patchmgr.checking import TargetStatus, UpstreamStatus
from patchmgr.engine import CheckResult, Conflict, State, check_series
from patchmgr.environment import (Environment, InstalledDist, InstalledSource, Placed, place_patch, probe,
                                  require_dists)
from patchmgr.errors import PatchmgrError, StateError
from patchmgr.journal import JOURNAL, StateLock, apply_transaction, recover, require_real_folder
from patchmgr.ledger import sha256_bytes, text_or_none, typed
from patchmgr.manifest import Target, Upstream
from patchmgr.patchfile import PatchFile
from patchmgr.project import Project
from patchmgr.smoke import SmokeTree, put_back
from patchmgr.sources import open_source
from patchmgr.store import Store


@dataclass
class EnvUpstreamLedger:
    name: str
    dist: str
    version: str
    location: str
    editable: bool
    pin: str
    patches: list[dict]  # {"id", "sha256"}
    files: dict[str, dict]  # git path -> {"installed": abs path, "original": sha256|None, "patched": sha256|None}
    record: str | None
    record_original: str | None  # sha256 of the RECORD before the first apply
    bytecode: dict[str, str] = field(default_factory=dict)  # removed .pyc (abs path) -> sha256, for revert


@dataclass
class EnvLedger:
    target: str
    python: str
    upstreams: list[EnvUpstreamLedger] = field(default_factory=list)

    def upstream(self, name: str) -> EnvUpstreamLedger | None:
        return next((u for u in self.upstreams if u.name == name), None)


@dataclass
class EnvOutcome:
    target: str
    python: str
    action: str  # applied | already-applied | refused | dry-run | reverted | nothing-to-revert | verified | differs
    status: TargetStatus | None = None
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.action not in ("refused", "differs")


class EnvState:
    """Where patchmgr keeps its ledger and the original bytes for one target in one environment."""

    def __init__(self, environment: Environment, target: str) -> None:
        self.root = environment.state_dir
        self.folder = self.root / target
        self.ledger_path = self.folder / "ledger.json"

    def backup_path(self, upstream: str, key: str) -> Path:
        return self.folder / "originals" / upstream / key

    def read_ledger(self) -> EnvLedger | None:
        # every command reads the ledger first: a link anywhere in the state folder stops it here
        require_real_folder(self.root, walk=True)
        if not self.ledger_path.is_file():
            return None
        try:
            raw = typed(json.loads(self.ledger_path.read_text(encoding="utf-8")), dict, "the document")
            return EnvLedger(typed(raw["target"], str, "target"), typed(raw["python"], str, "python"),
                             [_upstream_entry(u) for u in typed(raw["upstreams"], list, "upstreams")])
        except (ValueError, KeyError, TypeError, RecursionError) as exc:
            why = f"no {exc}" if isinstance(exc, KeyError) else str(exc)
            raise StateError(f"{self.ledger_path}: the ledger is damaged ({why})",
                             f"reinstall the distributions, then remove {self.folder}") from None

    def originals(self, entry: EnvUpstreamLedger | None) -> dict[str, bytes | None]:
        if entry is None:
            return {}
        found: dict[str, bytes | None] = {}
        for path, info in entry.files.items():
            found[path] = None if info["original"] is None else self.saved(entry, info["original"], path)
        return found

    def saved(self, entry: EnvUpstreamLedger, digest: str, what: str) -> bytes:
        """The original bytes of ``what`` (a file of ``entry``'s distribution) that apply kept, checked."""
        backup = self.backup_path(entry.name, digest)
        hint = (f"reinstall the distribution to get its files back ({_reinstall(entry)}), then remove "
                f"{self.folder}")
        try:
            data = backup.read_bytes()
        except FileNotFoundError:
            raise StateError(f"the saved original of {what} ({entry.name}) is gone: {backup} was removed",
                             hint) from None
        except OSError as exc:
            raise StateError(f"the saved original of {what} ({entry.name}) cannot be read: {backup}: "
                             f"{exc.strerror or exc}", hint) from None
        if sha256_bytes(data) != digest:
            raise StateError(f"the saved original of {what} ({entry.name}) is damaged: {backup} no longer has "
                             "the bytes apply kept", hint)
        return data


def _reinstall(entry: EnvUpstreamLedger) -> str:
    return f"pip install --force-reinstall --no-deps {entry.dist}=={entry.version}"


_DIGEST = re.compile(r"[0-9a-f]{64}")


def _digest(value, what: str, none: bool = False) -> str | None:
    """A sha256 the ledger names: also a file name under originals/, so nothing else is taken."""
    if none and value is None:
        return None
    if not _DIGEST.fullmatch(typed(value, str, what)):
        raise ValueError(f"{what} {value[:80]!r} is not a sha256")
    return value


def _upstream_entry(raw) -> EnvUpstreamLedger:
    raw = typed(raw, dict, "an upstream entry")
    name = typed(raw["name"], str, "an upstream's name")
    if not name or name in (".", "..") or "/" in name or "\\" in name:
        raise ValueError(f"upstream name {name!r} is not a name")
    patches = []
    for patch in typed(raw["patches"], list, f"{name}: patches"):
        typed(patch, dict, f"{name}: a patch")
        patches.append({"id": typed(patch["id"], str, f"{name}: a patch id"),
                        "sha256": typed(patch["sha256"], str, f"{name}: a patch sha256")})
    files = {}
    for path, info in typed(raw["files"], dict, f"{name}: files").items():
        typed(info, dict, f"{name}: the entry of {path}")
        files[path] = {"installed": typed(info["installed"], str, f"{name}: {path}: installed"),
                       "original": _digest(info["original"], f"{name}: {path}: original", none=True),
                       "patched": _digest(info["patched"], f"{name}: {path}: patched", none=True)}
    bytecode = {typed(compiled, str, f"{name}: a bytecode path"): _digest(digest, f"{name}: {compiled}")
                for compiled, digest in typed(raw.get("bytecode", {}), dict, f"{name}: bytecode").items()}
    return EnvUpstreamLedger(
        name, typed(raw["dist"], str, f"{name}: dist"), typed(raw["version"], str, f"{name}: version"),
        typed(raw["location"], str, f"{name}: location"), typed(raw["editable"], bool, f"{name}: editable"),
        typed(raw["pin"], str, f"{name}: pin"), patches, files, text_or_none(raw["record"], f"{name}: record"),
        _digest(raw["record_original"], f"{name}: record_original", none=True), bytecode)


_WRITE_HINT = "make the environment writable (or work on a writable copy of it), then run again"


@contextmanager
def _locked(environment: Environment, writing: bool) -> Iterator[StateLock | None]:
    """The environment's lock (one patchmgr at a time), or the real cause when it cannot be taken.

    An environment on a read-only file system (or one this user may not write)
    cannot be changed by any run, so a command that only reads it (status, a
    dry run) goes on without the lock; one that writes is refused before it
    changes anything, naming the cause.
    """
    lock = StateLock(environment.state_dir)
    try:
        lock.__enter__()
    except OSError as exc:
        journal = environment.state_dir / JOURNAL
        if not writing and exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM) and not os.path.lexists(journal):
            yield None
            return
        raise StateError(f"cannot write {exc.filename or environment.state_dir}: {exc.strerror or exc}; nothing "
                         "was changed", _WRITE_HINT) from None
    try:
        yield lock
    finally:
        lock.__exit__(None, None, None)


def _recover(environment: Environment) -> str | None:
    """Finish or undo an interrupted run (under the lock); one error with the cause when it cannot."""
    try:
        return recover(environment.state_dir)
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        raise StateError(f"cannot finish or undo the interrupted run in {environment.state_dir} ({where}"
                         f"{exc.strerror or exc})", _WRITE_HINT) from None


def _open(python: str, target: Target, only: Sequence[str]) -> tuple[Environment, list[Upstream]]:
    upstreams = [u for u in target.upstreams if not only or u.name in only]
    return probe(python, upstreams), upstreams


def check_environment(project: Project, target: Target, store: Store, overrides: Mapping[str, str],
                      python: str, only: Sequence[str] = ()) -> tuple[TargetStatus, list[str]]:
    """Classify the patches against the installed files (seen unpatched when patchmgr patched them)."""
    environment, upstreams = _open(python, target, only)
    return _check(project, target, store, overrides, environment, upstreams)


def _check(project: Project, target: Target, store: Store, overrides: Mapping[str, str], environment: Environment,
           upstreams: list[Upstream]) -> tuple[TargetStatus, list[str]]:
    dists = require_dists(environment, upstreams)
    state = EnvState(environment, target.name)
    notes = []
    with _locked(environment, writing=False):
        message = _recover(environment)
        if message:
            notes.append(message)
        ledger = state.read_ledger()
    statuses = []
    for dist in dists:
        entry = ledger.upstream(dist.upstream.name) if ledger else None
        source = InstalledSource(dist, state.originals(entry) if entry else None)
        placed = [place_patch(dist, patch) for patch in project.patches(dist.upstream)]
        status = UpstreamStatus(dist.upstream, dist.version, None, source.description,
                                _check_placed(placed, source), reader=source)
        status.notes.append(_drift(store, dist, overrides, source, [p.patch for p in placed if not p.refused]))
        left_out = [path for p in placed for path in p.left_out]
        if left_out:
            status.notes.append(f"left out: {', '.join(dict.fromkeys(left_out))} (not part of {dist.name}'s installed "
                                "packages, so apply does not write them into this environment)")
        if entry:
            status.notes.append(f"patchmgr applied {len(entry.patches)} patches here (ledger {state.ledger_path})")
        statuses.append(status)
    return TargetStatus(target, statuses), notes


def _check_placed(placed: list[Placed], source: InstalledSource) -> list[CheckResult]:
    """The series checked in order over the files each patch writes here.

    A patch with a file that must never be written into an installed
    environment (a ``.pth``, a new top-level module) is a conflict naming that
    file, and the later patches are checked without it, so ``status`` and
    ``apply`` agree.
    """
    checked = iter(check_series([item.patch for item in placed if not item.refused], source))
    results = []
    for item in placed:
        if item.refused:
            path, why = item.refused
            results.append(CheckResult(item.patch, State.CONFLICT, conflict=Conflict(path, 0, "", why, 1)))
        else:
            results.append(next(checked))
    return results


def _drift(store: Store, dist: InstalledDist, overrides: Mapping[str, str], installed: InstalledSource,
           patches: list[PatchFile]) -> str:
    """Compare the installed originals of the touched files with the pinned commit (or release)."""
    try:
        pinned = open_source(store, dist.upstream, None, overrides)
    except PatchmgrError as exc:
        return f"drift not checked: no source of the pin ({exc.message})"
    paths = sorted({p for patch in patches for p in patch.touched_paths if dist.installed_path(p)})
    differing = [p for p in paths if installed.read(p) != pinned.read(p)]
    if differing:
        return (f"installed files differ from the pin ({pinned.description}) in {', '.join(differing)}: "
                "this installation was not built from the pinned commit")
    return f"installed files match the pin ({pinned.description}) in all {len(paths)} files the patches touch"


def apply_environment(project: Project, target: Target, store: Store, overrides: Mapping[str, str],
                      python: str, only: Sequence[str] = (), dry_run: bool = False, force: bool = False) -> EnvOutcome:
    environment, upstreams = _open(python, target, only)
    require_dists(environment, upstreams)
    state = EnvState(environment, target.name)
    # locked from the check to the last write: a second apply waits, then finds this one's result
    with _locked(environment, writing=not dry_run) as lock:
        status, notes = _check(project, target, store, overrides, environment, upstreams)
        if lock is not None and lock.waited:
            notes.insert(0, f"waited {lock.waited:.1f}s for another patchmgr run on this environment")
        outcome = EnvOutcome(target.name, python, "refused", status, notes)
        if not status.ok:
            return outcome
        ledger = state.read_ledger() or EnvLedger(target.name, python)
        if _same_plan(ledger, status) and not _verify(project, target, environment, upstreams).problems:
            outcome.action = "already-applied"
            return outcome
        names = {u.name for u in upstreams}
        saved, saved_note = _keep_edits(state, [u for u in ledger.upstreams if u.name in names], force,
                                        "apply", dry_run)
        if saved_note:
            outcome.notes.append(saved_note)
        if dry_run:
            outcome.action = "dry-run"
            return outcome
        writes, new_ledger = _plan_writes(state, ledger, status)
        apply_transaction(environment.state_dir, {**saved, **writes})
    outcome.action = "applied"
    outcome.changed = _environment_files(writes, environment)
    return outcome


def _environment_files(writes: Mapping[Path, bytes | None], environment: Environment) -> list[str]:
    """The distribution files written or removed (not patchmgr's own state)."""
    return sorted(str(path) for path in writes if environment.state_dir not in path.parents)


def _same_plan(ledger: EnvLedger, status: TargetStatus) -> bool:
    for upstream_status in status.upstreams:
        entry = ledger.upstream(upstream_status.upstream.name)
        wanted = [{"id": r.patch.id, "sha256": r.patch.sha256} for r in upstream_status.results]
        if entry is None or entry.patches != wanted or entry.pin != upstream_status.upstream.commit:
            return False
    return True


def _edited(entries: list[EnvUpstreamLedger]) -> list[tuple[EnvUpstreamLedger, str, Path, bytes | None]]:
    """Files patchmgr wrote whose bytes are no longer what it wrote: someone edited (or removed) them since."""
    found = []
    for entry in entries:
        for path, info in entry.files.items():
            installed = Path(info["installed"])
            data = installed.read_bytes() if installed.is_file() else None
            if (None if data is None else sha256_bytes(data)) != info["patched"]:
                found.append((entry, path, installed, data))
    return found


def _keep_edits(state: EnvState, entries: list[EnvUpstreamLedger], force: bool, verb: str,
                dry_run: bool = False) -> tuple[dict[Path, bytes], str | None]:
    """Refuse to overwrite files edited since apply, unless forced; forced, the writes that save them first.

    Returns the writes (for the same journaled transaction, so the copies exist
    exactly when the overwrite happened) and a note saying where they are.
    """
    edited = _edited(entries)
    if not edited:
        return {}, None
    listed = ", ".join(str(installed) for _, _, installed, _ in edited)
    saved_root = state.folder / "saved"
    if not force:
        raise StateError(f"{_files(len(edited))} that patchmgr patched changed since apply ({listed}); {verb} would "
                         "overwrite them, so nothing was changed",
                         f"keep your edits elsewhere, or run again with --force to save them under {saved_root}/"
                         "<UTC time>/ first")
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    folder, number = saved_root / stamp, 1
    while folder.exists():
        number += 1
        folder = saved_root / f"{stamp}-{number}"
    writes: dict[Path, bytes] = {}
    manifest = {}
    for entry, path, installed, data in edited:
        key = f"{entry.name}/{path}"
        manifest[key] = {"installed": str(installed), "sha256": None if data is None else sha256_bytes(data),
                         "patched": entry.files[path]["patched"]}
        if data is not None:
            writes[folder / entry.name / path] = data
    writes[folder / "manifest.json"] = json.dumps(manifest, indent=2, sort_keys=True).encode() + b"\n"
    if dry_run:
        return {}, f"--force would save {_files(len(edited))} changed since apply ({listed}) under {folder}/ first"
    return writes, (f"saved {_files(len(edited))} changed since apply ({listed}) under {folder}/ before the {verb} "
                    "(manifest.json there names where each was; a removed file has sha256 null)")


def _files(number: int) -> str:
    return f"{number} file" + ("" if number == 1 else "s")


def _plan_writes(state: EnvState, ledger: EnvLedger, status: TargetStatus
                 ) -> tuple[dict[Path, bytes | None], EnvLedger]:
    writes: dict[Path, bytes | None] = {}
    for upstream_status in status.upstreams:
        source = upstream_status.reader
        assert isinstance(source, InstalledSource)
        dist = source.dist
        old = ledger.upstream(dist.upstream.name)
        originals = state.originals(old)
        final: dict[str, bytes | None] = {}
        for result in upstream_status.results:
            final.update(result.files)
        # a path an earlier apply patched but this series no longer touches goes back to its original
        for path, data in originals.items():
            final.setdefault(path, data)
        files: dict[str, dict] = {}
        bytecode = dict(old.bytecode) if old else {}
        record_updates: dict[str, bytes | None] = {}
        for path, data in final.items():
            installed = dist.installed_path(path)
            if installed is None:
                raise StateError(f"{dist.name}: {path} is not part of the installed distribution",
                                 "the patch touches files the release does not ship")
            original = originals[path] if path in originals else source.read(path)
            original_digest = None if original is None else sha256_bytes(original)
            if original is not None:
                writes[state.backup_path(dist.upstream.name, original_digest)] = original
            writes[installed] = data
            record_updates[str(installed)] = data
            files[path] = {"installed": str(installed), "original": original_digest,
                           "patched": None if data is None else sha256_bytes(data)}
            for stale in _bytecode_of(installed):
                compiled = stale.read_bytes()
                bytecode[str(stale)] = sha256_bytes(compiled)
                writes[state.backup_path(dist.upstream.name, bytecode[str(stale)])] = compiled
                writes[stale] = None
                record_updates[str(stale)] = None
        record_original = old.record_original if old else None
        if dist.record is not None and not dist.editable:
            current = dist.record.read_bytes()
            if old is None or record_original is None:
                record_original = sha256_bytes(current)
                writes[state.backup_path(dist.upstream.name, record_original)] = current
                base = current
            else:
                base = state.saved(old, record_original, f"{dist.name}'s RECORD")
            writes[dist.record] = update_record(base, dist.location, record_updates, dist.record)
        entry = EnvUpstreamLedger(
            dist.upstream.name, dist.name, dist.version, str(dist.location), dist.editable,
            dist.upstream.commit, [{"id": r.patch.id, "sha256": r.patch.sha256} for r in upstream_status.results],
            files, str(dist.record) if dist.record else None, record_original, bytecode)
        ledger.upstreams = [u for u in ledger.upstreams if u.name != entry.name] + [entry]
    writes[state.ledger_path] = json.dumps(asdict(ledger), indent=2, sort_keys=True).encode() + b"\n"
    return writes, ledger


def _bytecode_of(source_file: Path) -> list[Path]:
    """Compiled copies of a module that could shadow its new source."""
    if source_file.suffix != ".py":
        return []
    cache = source_file.parent / "__pycache__"
    return sorted(cache.glob(f"{source_file.stem}.*.pyc")) if cache.is_dir() else []


def record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def _record_csv(record: bytes, where: Path | str) -> list[list[str]]:
    """The rows of a RECORD (UTF-8 CSV, PEP 376); a damaged one is one error naming it."""
    try:
        return list(csv.reader(io.StringIO(record.decode("utf-8"), newline="")))
    except (UnicodeDecodeError, csv.Error) as exc:
        why = "it is not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else f"it is not CSV: {exc}"
        raise StateError(f"{where} is damaged ({why}); nothing was changed",
                         "reinstall the distribution (pip install --force-reinstall --no-deps NAME==VERSION), "
                         "then run again") from None


def update_record(record: bytes, location: Path, changes: Mapping[str, bytes | None],
                  where: Path | str = "RECORD") -> bytes:
    """RECORD with the hash and size of each changed file, new files added, removed ones dropped."""
    rows = _record_csv(record, where)
    by_path = {str((location / row[0]).resolve()) if row else "": index for index, row in enumerate(rows)}
    for absolute, data in changes.items():
        key = str(Path(absolute).resolve())
        relative = str(Path(absolute).resolve().relative_to(location.resolve()))
        if data is None:
            if key in by_path:
                rows[by_path[key]] = []
            continue
        row = [relative, record_hash(data), str(len(data))]
        if key in by_path:
            rows[by_path[key]] = [rows[by_path[key]][0], row[1], row[2]]
        else:
            rows.append(row)
    out = io.StringIO()
    # keep the installer's line endings (pip writes CRLF), so unchanged rows stay byte-identical
    writer = csv.writer(out, lineterminator="\r\n" if b"\r\n" in record else "\n")
    for row in rows:
        if row:
            writer.writerow(row)
    return out.getvalue().encode("utf-8")


def verify_environment(project: Project, target: Target, python: str, only: Sequence[str] = ()) -> EnvOutcome:
    environment, upstreams = _open(python, target, only)
    return _verify(project, target, environment, upstreams)


def _verify(project: Project, target: Target, environment: Environment, upstreams: list[Upstream]) -> EnvOutcome:
    state = EnvState(environment, target.name)
    outcome = EnvOutcome(target.name, environment.python, "verified", notes=_recovered(environment))
    ledger = state.read_ledger()
    if ledger is None:
        outcome.problems.append(f"no patchmgr ledger for target {target.name} in {environment.prefix}")
    else:
        for upstream in upstreams:
            outcome.problems += _verify_upstream(project, environment, upstream, ledger.upstream(upstream.name))
    if outcome.problems:
        outcome.action = "differs"
    return outcome


def _recovered(environment: Environment) -> list[str]:
    """Finish or undo an interrupted run first (under the lock: never a transaction a live run is writing)."""
    if not (environment.state_dir / "journal").exists():
        return []
    with _locked(environment, writing=True):
        message = _recover(environment)
    return [message] if message else []


def _verify_upstream(project: Project, environment: Environment, upstream: Upstream,
                     entry: EnvUpstreamLedger | None) -> list[str]:
    if entry is None:
        return [f"{upstream.name}: not applied in this environment"]
    problems = []
    dist = environment.dists.get(upstream.name)
    if dist is None or dist.version != entry.version:
        found = dist.version if dist else "nothing"
        problems.append(f"{upstream.name}: {entry.dist} {entry.version} was patched, now {found} is installed")
    if entry.pin != upstream.commit:
        problems.append(f"{upstream.name}: patched for pin {entry.pin[:12]}, but the pin is now {upstream.commit[:12]}")
    current = [{"id": p.id, "sha256": p.sha256} for p in project.patches(upstream)]
    if current != entry.patches:
        problems.append(f"{upstream.name}: the patch series changed since apply")
    record_rows = _record_rows(Path(entry.record)) if entry.record and not entry.editable else {}
    for path, info in entry.files.items():
        installed = Path(info["installed"])
        actual = sha256_bytes(installed.read_bytes()) if installed.is_file() else None
        if actual != info["patched"]:
            problems.append(f"{upstream.name}: {installed} differs from what apply wrote")
        elif record_rows and actual is not None:
            row = record_rows.get(str(installed.resolve()))
            if row is None or len(row) < 2 or row[1] != record_hash(installed.read_bytes()):
                problems.append(f"{upstream.name}: RECORD does not match {installed}")
    return problems


def _record_rows(record: Path) -> dict[str, list[str]]:
    if not record.is_file():
        return {}
    location = record.parent.parent
    return {str((location / row[0]).resolve()): row for row in _record_csv(record.read_bytes(), record) if row}


def revert_environment(target: Target, python: str, only: Sequence[str] = (), force: bool = False) -> EnvOutcome:
    """Put back the original bytes of every file apply changed, and the original RECORD."""
    environment, upstreams = _open(python, target, only)
    state = EnvState(environment, target.name)
    outcome = EnvOutcome(target.name, python, "nothing-to-revert")
    with _locked(environment, writing=True):
        message = _recover(environment)
        if message:
            outcome.notes.append(message)
        ledger = state.read_ledger()
        if ledger is None:
            return outcome
        names = {u.name for u in upstreams}
        saved, saved_note = _keep_edits(state, [u for u in ledger.upstreams if u.name in names], force, "revert")
        if saved_note:
            outcome.notes.append(saved_note)
        writes: dict[Path, bytes | None] = dict(saved)
        for entry in ledger.upstreams:
            if entry.name not in names:
                continue
            for path, data in state.originals(entry).items():
                installed = Path(entry.files[path]["installed"])
                writes[installed] = data
                for stale in _bytecode_of(installed):
                    writes[stale] = None
            for compiled, digest in entry.bytecode.items():
                writes[Path(compiled)] = state.saved(entry, digest, compiled)
            if entry.record and entry.record_original:
                writes[Path(entry.record)] = state.saved(entry, entry.record_original, f"{entry.dist}'s RECORD")
        remaining = [u for u in ledger.upstreams if u.name not in names]
        if remaining:
            ledger.upstreams = remaining
            writes[state.ledger_path] = json.dumps(asdict(ledger), indent=2, sort_keys=True).encode() + b"\n"
        else:
            writes[state.ledger_path] = None
        apply_transaction(environment.state_dir, writes)
    outcome.action = "reverted"
    outcome.changed = _environment_files(writes, environment)
    return outcome


def environment_trees(target: Target, python: str, only: Sequence[str] = ()) -> list[SmokeTree]:
    """Each upstream's installed code for the smoke tests; unpatched means the saved originals put back."""
    environment, upstreams = _open(python, target, only)
    # like apply and status: a missing distribution, or another version than the pin, is bad input (exit 2),
    # never smoke tests run against code the manifest does not pin
    dists = require_dists(environment, upstreams)
    state = EnvState(environment, target.name)
    notes = _recovered(environment)
    ledger = state.read_ledger()
    trees = []
    for upstream, dist in zip(upstreams, dists):
        entry = ledger.upstream(upstream.name) if ledger else None
        trees.append(SmokeTree(upstream, dist.import_root,
                               unpatched=partial(_unpatched_install, dist, state.originals(entry))))
    if trees:
        trees[0].notes += notes
    return trees


@contextmanager
def _unpatched_install(dist: InstalledDist, originals: dict[str, bytes | None]) -> Iterator[Path]:
    """A copy of the installed top-level packages with the original bytes of patched files put back."""
    root = dist.import_root
    if not originals:  # patchmgr never patched it: the installed code is the unpatched code
        yield root
        return
    with tempfile.TemporaryDirectory(prefix="patchmgr-unpatched-") as tmp:
        copy = Path(tmp)
        tops = {Path(installed).relative_to(root).parts[0]
                for path in originals if (installed := dist.installed_path(path)) is not None}
        for top in sorted(tops):
            shutil.copytree(root / top, copy / top, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
        for path, data in originals.items():
            installed = dist.installed_path(path)
            if installed is not None:
                put_back(copy / installed.relative_to(root), data)
        yield copy
