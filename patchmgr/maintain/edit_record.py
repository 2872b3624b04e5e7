"""What ``patchmgr edit`` leaves in its checkout: the record (``.git/patchmgr-edit.json``) and the git notes.

The record names the target, the upstream, the pin and the patch commits that
edit (or the last export) made; while ``edit --onto`` moves the series to a new
ref it also holds the move (``onto``): the ref and its commit, the old series,
the patches still to apply, the one that stopped, and those left out. A git
note (``refs/notes/patchmgr``) on each commit names its patch, through amends
and rebases.
"""

from __future__ import annotations

import json
from pathlib import Path

from patchmgr.io.git import GitRepo, identity_env
from patchmgr.model.errors import StateError

RECORD = "patchmgr-edit.json"
NOTES_REF = "refs/notes/patchmgr"
NOTE_PREFIX = "patchmgr-patch: "


def record_bytes(target: str, upstream: str, pin: str, patches: list[tuple[str, str, str]],
                 onto: dict | None = None) -> bytes:
    """The record of a checkout: ``patches`` as (id, commit, sha256 of the patch file)."""
    record = {"format": 1, "target": target, "upstream": upstream, "pin": pin,
              "patches": [{"id": pid, "commit": commit, "sha256": digest} for pid, commit, digest in patches]}
    if onto is not None:
        record["onto"] = onto
    return (json.dumps(record, indent=2) + "\n").encode("utf-8")


def write_record(folder: Path, target: str, upstream: str, pin: str, patches: list[tuple[str, str, str]],
                 onto: dict | None = None) -> None:
    (folder / ".git" / RECORD).write_bytes(record_bytes(target, upstream, pin, patches, onto))


def write_record_doc(folder: Path, record: dict) -> None:
    """A record read with ``read_record`` and changed, written back."""
    (folder / ".git" / RECORD).write_text(json.dumps(record, indent=2) + "\n")


def read_record(folder: Path) -> dict:
    path = folder / ".git" / RECORD
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise StateError(f"{folder} was not made by `patchmgr edit` (no readable {RECORD})",
                         "make one with: patchmgr edit --target T --upstream NAME --into DIR") from exc


def record_patches(record: dict) -> list[tuple[str, str, str]]:
    return [(p["id"], p["commit"], p.get("sha256", "")) for p in record.get("patches") or []]


def add_note(repo: GitRepo, commit: str, patch_id: str) -> None:
    repo.run("notes", "--ref", NOTES_REF, "add", "-f", "-m", NOTE_PREFIX + patch_id, commit, env=identity_env())


def note_of(repo: GitRepo, commit: str) -> str | None:
    if not repo.run_ok("notes", "--ref", NOTES_REF, "show", commit):
        return None
    for line in repo.run("notes", "--ref", NOTES_REF, "show", commit).split("\n"):
        if line.startswith(NOTE_PREFIX):
            return line[len(NOTE_PREFIX):].strip()
    return None
