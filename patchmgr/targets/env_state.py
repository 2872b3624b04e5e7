"""An installed environment under patchmgr's lock: its state folder, ledger, and edits made since apply."""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path

from patchmgr.check.status import TargetStatus
from patchmgr.io.files import require_real_folder
from patchmgr.io.journal import JOURNAL, Recovered, locked_recovery
from patchmgr.model.errors import StateError
from patchmgr.model.manifest import Target, Upstream
from patchmgr.model.records import sha256_bytes
from patchmgr.sources.environment import Environment, probe
from patchmgr.targets.actions import ApplyAction
from patchmgr.targets.ledger import Ledger, UpstreamLedger, read_ledger, reapply_hint


class EnvAction(StrEnum):
    """What ``verify`` or ``revert`` with ``--python`` did (``apply``'s is an ``ApplyAction``)."""

    REVERTED = "reverted"
    NOTHING_TO_REVERT = "nothing-to-revert"
    VERIFIED = "verified"
    DIFFERS = "differs"


@dataclass
class EnvOutcome:
    target: str
    python: str
    action: ApplyAction | EnvAction
    status: TargetStatus | None = None
    notes: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    # verify's findings: what the environment holds otherwise than its ledger records, the upstreams asked for
    # that no apply patched there, whether it has a ledger of the target at all, and the upstreams asked for
    # when --upstream left some out (for the hint's apply)
    differences: list[str] = field(default_factory=list)
    unapplied: list[str] = field(default_factory=list)
    has_ledger: bool = True
    only: tuple[str, ...] = ()

    @property
    def problems(self) -> list[str]:
        """Everything verify reports (empty: the environment holds exactly what apply wrote)."""
        if not self.has_ledger:
            return [f"no patchmgr ledger for target {self.target} in {self.python}'s environment"]
        return [f"{name}: not applied in this environment" for name in self.unapplied] + self.differences

    @property
    def hint(self) -> str:
        """The next step when the environment differs: the apply that patches it again."""
        return reapply_hint(self.target, self.python, self.only)

    @property
    def ok(self) -> bool:
        return self.action not in (ApplyAction.REFUSED, EnvAction.DIFFERS)


class EnvState:
    """Where patchmgr keeps its ledger and the original bytes for one target in one environment."""

    def __init__(self, environment: Environment, target: str) -> None:
        self.root = environment.state_dir
        self.folder = self.root / target
        self.ledger_path = self.folder / "ledger.json"

    def backup_path(self, upstream: str, key: str) -> Path:
        return self.folder / "originals" / upstream / key

    def read_ledger(self) -> Ledger | None:
        # every command reads the ledger first: a link anywhere in the state folder stops it here
        require_real_folder(self.root, walk=True)
        return read_ledger(self.ledger_path, "env", f"reinstall the distributions, then remove {self.folder}")

    def originals(self, entry: UpstreamLedger | None) -> dict[str, bytes | None]:
        if entry is None:
            return {}
        return {
            path: None if digest is None else self.saved(entry, digest, path)
            for path, digest in entry.env_part().originals.items()
        }

    def saved(self, entry: UpstreamLedger, digest: str, what: str) -> bytes:
        """The original bytes of ``what`` (a file of ``entry``'s distribution) that apply kept, checked."""
        backup = self.backup_path(entry.name, digest)
        hint = (
            f"reinstall the distribution to get its files back ({entry.env_part().reinstall()}), then remove "
            f"{self.folder}"
        )
        try:
            data = backup.read_bytes()
        except FileNotFoundError:
            raise StateError(
                f"the saved original of {what} ({entry.name}) is gone: {backup} was removed", hint
            ) from None
        except OSError as exc:
            raise StateError(
                f"the saved original of {what} ({entry.name}) cannot be read: {backup}: {exc.strerror or exc}", hint
            ) from None
        if sha256_bytes(data) != digest:
            raise StateError(
                f"the saved original of {what} ({entry.name}) is damaged: {backup} no longer has the bytes apply kept",
                hint,
            )
        return data


_WRITE_HINT = "make the environment writable (or work on a writable copy of it), then run again"


@contextmanager
def locked_environment(environment: Environment, writing: bool) -> Iterator[Recovered]:
    """The environment's lock (one patchmgr at a time), an interrupted run finished or undone under it
    (``locked_recovery``), or the real cause when the lock cannot be taken.

    An environment on a read-only file system (or one this user may not write)
    cannot be changed by any run, so a command that only reads it (status, a
    dry run) goes on without the lock; one that writes is refused before it
    changes anything, naming the cause.
    """

    def lock_error(exc: OSError) -> StateError | None:
        journal = environment.state_dir / JOURNAL
        if not writing and exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM) and not os.path.lexists(journal):
            return None
        return StateError(
            f"cannot write {exc.filename or environment.state_dir}: {exc.strerror or exc}; nothing was changed",
            _WRITE_HINT,
        )

    with locked_recovery(environment.state_dir, _WRITE_HINT, lock_error=lock_error) as done:
        yield done


def open_environment(python: str, target: Target, only: Sequence[str]) -> tuple[Environment, list[Upstream]]:
    """The environment of ``python`` (probed once), and the target's upstreams a command works on (``only``)."""
    upstreams = [u for u in target.upstreams if not only or u.name in only]
    return probe(python, upstreams), upstreams


def environment_files(writes: Mapping[Path, bytes | None], environment: Environment) -> list[str]:
    """The distribution files written or removed (not patchmgr's own state)."""
    return sorted(str(path) for path in writes if environment.state_dir not in path.parents)


def _edited(entries: list[UpstreamLedger]) -> list[tuple[UpstreamLedger, str, Path, bytes | None]]:
    """Files patchmgr wrote whose bytes are no longer what it wrote: someone edited (or removed) them since."""
    found = []
    for entry in entries:
        for path, patched in entry.files.items():
            installed = Path(entry.env_part().installed[path])
            data = installed.read_bytes() if installed.is_file() else None
            if (None if data is None else sha256_bytes(data)) != patched:
                found.append((entry, path, installed, data))
    return found


def keep_edits(
    state: EnvState, entries: list[UpstreamLedger], force: bool, verb: str, dry_run: bool = False
) -> tuple[dict[Path, bytes], str | None]:
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
        raise StateError(
            f"{_files(len(edited))} that patchmgr patched changed since apply ({listed}); {verb} would "
            "overwrite them, so nothing was changed",
            f"keep your edits elsewhere, or run again with --force to save them under {saved_root}/<UTC time>/ first",
        )
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    folder, number = saved_root / stamp, 1
    while folder.exists():
        number += 1
        folder = saved_root / f"{stamp}-{number}"
    writes: dict[Path, bytes] = {}
    manifest = {}
    for entry, path, installed, data in edited:
        key = f"{entry.name}/{path}"
        manifest[key] = {
            "installed": str(installed),
            "sha256": None if data is None else sha256_bytes(data),
            "patched": entry.files[path],
        }
        if data is not None:
            writes[folder / entry.name / path] = data
    writes[folder / "manifest.json"] = json.dumps(manifest, indent=2, sort_keys=True).encode() + b"\n"
    if dry_run:
        return {}, f"--force would save {_files(len(edited))} changed since apply ({listed}) under {folder}/ first"
    return writes, (
        f"saved {_files(len(edited))} changed since apply ({listed}) under {folder}/ before the {verb} "
        "(manifest.json there names where each was; a removed file has sha256 null)"
    )


def _files(number: int) -> str:
    return f"{number} file" + ("" if number == 1 else "s")
