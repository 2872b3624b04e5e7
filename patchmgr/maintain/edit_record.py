"""What ``patchmgr edit`` leaves in its checkout: the record (``.git/patchmgr-edit.json``) and the git notes.

The record names the target, the upstream, the pin and the patch commits that
edit (or the last export) made; while ``edit --onto`` moves the series to a new
ref it also holds the move (``onto``): the ref and its commit, the old series,
the patches still to apply, the one that stopped, and those left out. A git
note (``refs/notes/patchmgr``) on each commit names its patch, through amends
and rebases.

The record is a typed, versioned value (``EditRecord``, ``format`` 2; format 1,
written before the move kept its stop mark, is read too). Every field is checked
when it is read: a record damaged by hand or by another tool (bad JSON, a
missing key, a value of the wrong type, an unknown format) is one error saying
what is wrong and what to do, never half read. It is written atomically.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from patchmgr.io.faults import step
from patchmgr.io.files import write_atomic
from patchmgr.io.git import GitRepo, identity_env
from patchmgr.model.errors import StateError, UsageError
from patchmgr.model.manifest import PATCH_ID
from patchmgr.model.records import typed

RECORD = "patchmgr-edit.json"
NOTES_REF = "refs/notes/patchmgr"
NOTE_PREFIX = "patchmgr-patch: "
FORMAT = 2
_COMMIT = re.compile(r"^[0-9a-f]{40}(?:[0-9a-f]{24})?$")
_READABLE = (1, 2)


@dataclass
class PatchCommit:
    """One patch of the series as a commit of the checkout, with the sha256 of the patch file it came from."""

    id: str
    commit: str
    sha256: str = ""


@dataclass
class Queued:
    """A patch still to apply during a move: the sha256 of its file as the move started."""

    id: str
    sha256: str


@dataclass(frozen=True)
class Carried:
    """A patch whose change the new ref already has: ``commit`` has its patch-id."""

    id: str
    commit: str
    subject: str

    def describe(self) -> str:
        return f"upstream carries it as {self.commit[:7]} ({self.subject})"


@dataclass
class StopMark:
    """The checkout as the move left it when it stopped: the tree of its work tree, a digest of its index, and
    whether a git am was waiting. What differs at ``--abort`` is a person's work, which abort keeps."""

    tree: str
    index: str
    am: bool


@dataclass
class Move:
    """An ``edit --onto`` under way."""

    ref: str
    commit: str
    old_tip: str
    old_patches: list[PatchCommit]
    queue: list[Queued]
    current: str | None = None
    before: str | None = None
    carried: list[Carried] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    resolved: list[str] = field(default_factory=list)
    stop: StopMark | None = None


@dataclass
class EditRecord:
    target: str
    upstream: str
    pin: str
    patches: list[PatchCommit] = field(default_factory=list)
    onto: Move | None = None

    def to_bytes(self) -> bytes:
        doc = {"format": FORMAT, **asdict(self)}
        if self.onto is None:
            del doc["onto"]
        return (json.dumps(doc, indent=2) + "\n").encode("utf-8")

    def tip(self) -> str:
        """The commit the checkout's recorded work ends on: the last patch's, the move's new base, or the pin."""
        if self.patches:
            return self.patches[-1].commit
        return self.onto.commit if self.onto else self.pin

    def made_for(self) -> str:
        return f"{self.target}/{self.upstream}"


def record_path(folder: Path) -> Path:
    return folder / ".git" / RECORD


def write_record(folder: Path, record: EditRecord) -> None:
    """Replace the record atomically (a kill leaves the old one or the new one, never half)."""
    write_atomic(record_path(folder), record.to_bytes(), written=step)
    step()


def has_record(folder: Path) -> bool:
    return folder.is_dir() and record_path(folder).is_file()


def read_record(folder: Path) -> EditRecord:
    """The checkout's record, every field checked; one error when it is missing or damaged."""
    path = record_path(folder)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise StateError(
            f"{folder} was not made by `patchmgr edit` (no readable {RECORD}: {exc.strerror or exc})",
            "make one with: patchmgr edit --target T --upstream NAME --into DIR",
        ) from None
    try:
        return parse_record(json.loads(text))
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        why = f"no {exc}" if isinstance(exc, KeyError) else str(exc)
        raise UsageError(
            f"{path} is damaged ({why}); nothing was changed",
            f"restore that file, or make the checkout anew in another folder with: patchmgr edit "
            f"--target T --upstream NAME --into NEW_DIR (export from {folder} is not possible "
            "until then)",
        ) from None


def parse_record(raw: object) -> EditRecord:
    doc = typed(raw, dict, "the record")
    version = doc.get("format")
    if version not in _READABLE:
        raise ValueError(f"format {version!r} is not one this patchmgr reads ({', '.join(map(str, _READABLE))})")
    record = EditRecord(
        _text(doc["target"], "target"),
        _text(doc["upstream"], "upstream"),
        _commit(doc["pin"], "pin"),
        _patches(doc["patches"], "patches"),
    )
    onto = doc.get("onto")
    if onto is not None:
        record.onto = _move(typed(onto, dict, "onto"))
    return record


def _text(value: object, what: str) -> str:
    return typed(value, str, what)


def _commit(value: object, what: str, empty: bool = False) -> str:
    """A commit id: it reaches git's command line, so nothing else (an option, a revision expression) passes."""
    commit = _text(value, what)
    if not (_COMMIT.match(commit) or (empty and not commit)):
        raise ValueError(f"{what} {commit[:60]!r} is not a git object id")
    return commit


def _commit_or_none(value: object, what: str) -> str | None:
    return None if value is None else _commit(value, what)


def _patch_id(value: object, what: str) -> str:
    """A patch id: it names a file in the checkout, so no path or option passes."""
    patch_id = _text(value, what)
    if not PATCH_ID.match(patch_id):
        raise ValueError(f"{what} {patch_id[:60]!r} is not a patch id")
    return patch_id


def _patch_id_or_none(value: object, what: str) -> str | None:
    return None if value is None else _patch_id(value, what)


def _ids(value: object, what: str) -> list[str]:
    return [_patch_id(item, f"an item of {what}") for item in typed(value, list, what)]


def _patches(value: object, what: str) -> list[PatchCommit]:
    patches = []
    for entry in typed(value, list, what):
        typed(entry, dict, f"an entry of {what}")
        patches.append(
            PatchCommit(
                _patch_id(entry["id"], f"{what}: id"),
                _commit(entry["commit"], f"{what}: commit", empty=True),
                _text(entry.get("sha256", ""), f"{what}: sha256"),
            )
        )
    return patches


def _move(onto: dict) -> Move:
    queue = []
    for entry in typed(onto["queue"], list, "onto.queue"):
        typed(entry, dict, "an entry of onto.queue")
        queue.append(Queued(_patch_id(entry["id"], "onto.queue: id"), _text(entry["sha256"], "onto.queue: sha256")))
    carried = []
    for entry in typed(onto.get("carried", []), list, "onto.carried"):
        typed(entry, dict, "an entry of onto.carried")
        carried.append(
            Carried(
                _patch_id(entry["id"], "onto.carried: id"),
                _commit(entry["commit"], "onto.carried: commit"),
                _text(entry["subject"], "onto.carried: subject"),
            )
        )
    stop = onto.get("stop")
    if stop is not None:
        typed(stop, dict, "onto.stop")
        stop = StopMark(
            _commit(stop["tree"], "onto.stop: tree"),
            _text(stop["index"], "onto.stop: index"),
            typed(stop["am"], bool, "onto.stop: am"),
        )
    return Move(
        _text(onto["ref"], "onto.ref"),
        _commit(onto["commit"], "onto.commit"),
        _commit(onto["old_tip"], "onto.old_tip"),
        _patches(onto["old_patches"], "onto.old_patches"),
        queue,
        _patch_id_or_none(onto.get("current"), "onto.current"),
        _commit_or_none(onto.get("before"), "onto.before"),
        carried,
        _ids(onto.get("skipped", []), "onto.skipped"),
        _ids(onto.get("resolved", []), "onto.resolved"),
        stop,
    )


def add_note(repo: GitRepo, commit: str, patch_id: str) -> None:
    repo.run("notes", "--ref", NOTES_REF, "add", "-f", "-m", NOTE_PREFIX + patch_id, commit, env=identity_env())


def note_of(repo: GitRepo, commit: str) -> str | None:
    if not repo.run_ok("notes", "--ref", NOTES_REF, "show", commit):
        return None
    for line in repo.run("notes", "--ref", NOTES_REF, "show", commit).split("\n"):
        if line.startswith(NOTE_PREFIX):
            return line[len(NOTE_PREFIX) :].strip()
    return None


def checkout_base(folder: Path) -> tuple[str, str, dict[str, str]] | None:
    """What an edit checkout's patches sit on, for ``export --smoke``: the ref and commit (the one ``edit --onto``
    moved to, else the pin), and the patches the move left out (carried upstream, or skipped) with why; None while
    the move is unfinished (export refuses that and says why)."""
    record = read_record(folder)
    onto = record.onto
    if onto is None:
        return record.pin[:12], record.pin, {}
    if onto.queue or onto.current:
        return None
    left_out = {c.id: f"left out of the edit checkout: {c.describe()}" for c in onto.carried}
    left_out |= {patch: "left out of the edit checkout (edit --skip)" for patch in onto.skipped}
    return onto.ref, onto.commit, left_out
