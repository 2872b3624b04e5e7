"""The one ledger ``apply`` writes, for both targets: what was applied, so that ``verify`` can prove it later.

One schema, one reader and one writer for ``apply --into`` (``DIR/patchmgr-ledger.json``) and
``apply --python`` (``PREFIX/patchmgr-state/<target>/ledger.json``). Every upstream entry records
the pin, each patch's id and sha256, and the sha256 of every file the patches touched (None when
deleted); then one target-specific part: ``checkout`` (``--into``: the base commit, HEAD, the
source as a typed identity, the files the source lacked) or ``installed`` (``--python``: the distribution, where each
file is installed, its original's sha256, the RECORD and the bytecode removed). The ledgers of
older patchmgr versions (format 2, whose source is its display text; format 1 for ``--into``, the
unversioned one for ``--python``) are read too.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from patchmgr.model.errors import StateError
from patchmgr.model.records import SHA256, sha256_bytes, text_or_none, typed
from patchmgr.model.source_identity import SourceIdentity, SourceKind

if TYPE_CHECKING:
    from patchmgr.check.status import TargetStatus
    from patchmgr.model.manifest import Upstream
    from patchmgr.model.project import Project

LEDGER_NAME = "patchmgr-ledger.json"  # in DIR, for --into
_DAMAGED_HINT = "remove the ledger's folder (after putting back what it patched), then run `patchmgr apply` again"
FORMAT = 3  # 3: the checkout's source is a typed identity (2: its display text)

Series = tuple[str, list[tuple[str, str]]]  # what an upstream was applied as: the pin, and (patch id, sha256) in order


def same_plan(recorded: Callable[[str], Series | None], status: TargetStatus) -> bool:
    """Whether a ledger (``apply --into``'s or ``apply --python``'s) records exactly the pins and patch files
    that ``status`` would apply now: then a new apply has nothing to do."""
    for upstream_status in status.upstreams:
        wanted = (upstream_status.upstream.commit, [(r.patch.id, r.patch.sha256) for r in upstream_status.results])
        if recorded(upstream_status.upstream.name) != wanted:
            return False
    return True


@dataclass
class AppliedPatch:
    id: str
    sha256: str
    commit: str | None = None  # the commit it became (--into)


@dataclass
class CheckoutPart:
    """``--into`` only: where the checkout's patches sit."""

    base_commit: str  # the checkout's commit the patches sit on (the pin, or a release's import)
    head_commit: str | None
    source: SourceIdentity
    absent: list[str] = field(default_factory=list)  # files the source lacked, left out of the checkout


@dataclass
class InstalledPart:
    """``--python`` only: the distribution patched, and what revert needs to put it back."""

    dist: str
    version: str
    location: str
    editable: bool
    installed: dict[str, str]  # git path -> the installed file (absolute path)
    originals: dict[str, str | None]  # git path -> sha256 of the original (kept under originals/), None: absent
    record: str | None
    record_original: str | None  # sha256 of the RECORD before the first apply
    bytecode: dict[str, str] = field(default_factory=dict)  # removed .pyc (abs path) -> sha256, for revert

    def reinstall(self) -> str:
        return f"pip install --force-reinstall --no-deps {self.dist}=={self.version}"


@dataclass
class UpstreamLedger:
    name: str
    pin: str  # the manifest's commit when apply ran
    patches: list[AppliedPatch]
    files: dict[str, str | None]  # path -> sha256 of the patched content, None when deleted
    checkout: CheckoutPart | None = None
    env: InstalledPart | None = None

    def series(self) -> Series:
        return self.pin, [(p.id, p.sha256) for p in self.patches]

    def checkout_part(self) -> CheckoutPart:
        """The ``--into`` part: every entry of ``apply --into``'s ledger has one (``read_ledger`` refuses a ledger
        whose entry lacks it, ``build_checkout`` makes each with one)."""
        if self.checkout is None:
            raise StateError(f"the ledger is damaged ({self.name}: no checkout part)", _DAMAGED_HINT)
        return self.checkout

    def env_part(self) -> InstalledPart:
        """The ``--python`` part: every entry of ``apply --python``'s ledger has one (``read_ledger`` refuses a
        ledger whose entry lacks it, ``apply_environment`` makes each with one)."""
        if self.env is None:
            raise StateError(f"the ledger is damaged ({self.name}: no env part)", _DAMAGED_HINT)
        return self.env


@dataclass
class Ledger:
    target: str
    upstreams: list[UpstreamLedger] = field(default_factory=list)
    python: str | None = None  # the interpreter, for --python
    format: int = FORMAT

    def upstream(self, name: str) -> UpstreamLedger | None:
        return next((u for u in self.upstreams if u.name == name), None)

    def series(self, name: str) -> Series | None:
        entry = self.upstream(name)
        return None if entry is None else entry.series()

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str, where: Path, hint: str) -> Ledger:
        try:
            raw = typed(json.loads(text), dict, "the document")
            version = raw.get("format")
            if version in (2, FORMAT):  # the same entries; format 2's source is text (``_source``)
                entry = _upstream_entry
            elif version in (None, 1):  # an older patchmgr's: format 1 (--into), unversioned (--python)
                entry = _old_env_entry if "python" in raw else _old_into_entry
            else:
                raise ValueError(f"format {version!r} is not one this patchmgr reads")
            upstreams = [entry(u) for u in typed(raw["upstreams"], list, "upstreams")]
            return cls(typed(raw["target"], str, "target"), upstreams, text_or_none(raw.get("python"), "python"))
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
            why = f"no {exc}" if isinstance(exc, KeyError) else str(exc)
            raise StateError(f"{where}: the ledger is damaged ({why})", hint) from None


def read_ledger(path: Path, part: Literal["checkout", "env"], hint: str) -> Ledger | None:
    """The ledger at ``path`` (None when there is none), each entry with its ``part`` (``checkout`` or ``env``);
    a damaged one is one error naming it, with ``hint``."""
    if not path.is_file():
        return None
    ledger = Ledger.from_json(path.read_text(encoding="utf-8"), path, hint)
    for entry in ledger.upstreams:
        if getattr(entry, part) is None:
            raise StateError(f"{path}: the ledger is damaged ({entry.name}: no {part} part)", hint)
    return ledger


def read_into_ledger(into: Path) -> Ledger | None:
    """``apply --into``'s ledger in DIR."""
    return read_ledger(into / LEDGER_NAME, "checkout", "remove the folder and run `patchmgr apply` again")


def verify_recorded(
    project: Project, upstream: Upstream, entry: UpstreamLedger, where: Callable[[str], Path]
) -> tuple[list[str], list[str]]:
    """What every target's verify checks the same way: the pin moved, the series changed, and each file's bytes
    against the ledger (``where`` gives a ledger path's file). Returns the problems, and the paths whose bytes
    differ, for the target to judge (a checkout may explain some by git's attributes)."""
    name = upstream.name
    problems = []
    if entry.pin != upstream.commit:
        problems.append(f"{name}: applied for pin {entry.pin[:12]}, but the pin is now {upstream.commit[:12]}")
    problems += series_changes(name, [(p.id, p.sha256) for p in project.patches(upstream)], entry.series()[1])
    differs = []
    for path, digest in entry.files.items():
        file = where(path)
        written = written_bytes(file)
        actual = sha256_bytes(written) if written is not None else None
        if actual != digest:
            differs.append(path)
    return problems, differs


def written_bytes(file: Path) -> bytes | None:
    """What apply wrote at ``file``, as the ledger's digest was taken of it: a link's target (what git stores for
    a link; reading through it would read another file), a file's bytes, or None where neither is."""
    if file.is_symlink():
        return os.fsencode(os.readlink(file))
    return file.read_bytes() if file.is_file() else None


def series_changes(name: str, current: list[tuple[str, str]], recorded: list[tuple[str, str]]) -> list[str]:
    """How upstream ``name``'s series (patch id, sha256 in order) differs from the one apply recorded, each patch
    named: its file changed, it joined or left the series, or the same patches are in another order."""
    now, then = dict(current), dict(recorded)
    changes = [f"{name}: patch {pid} changed since apply" for pid, sha in current if then.get(pid, sha) != sha]
    changes += [f"{name}: patch {pid} was added to the series since apply" for pid, _ in current if pid not in then]
    changes += [f"{name}: patch {pid} was removed from the series since apply" for pid, _ in recorded if pid not in now]
    if not changes and current != recorded:
        order = ", ".join(pid for pid, _ in current)
        changes.append(f"{name}: the series was reordered since apply (now {order})")
    return changes


def reapply_hint(target: str, place: Path | str, only: Sequence[str] = ()) -> str:
    """What to do when a build (``place``: DIR of ``apply --into``, or the interpreter of ``apply --python``) differs
    from its ledger, or has none: apply the target there again (the upstreams ``only`` names, when given)."""
    where = f"--into {shlex.quote(str(place))}" if isinstance(place, Path) else f"--python {shlex.quote(place)}"
    upstreams = "".join(f" --upstream {shlex.quote(name)}" for name in only)
    return f"apply it again: `patchmgr apply --target {target} {where}{upstreams}`"


def _digest(value: object, what: str) -> str:
    """A sha256 the ledger names (also a file name under originals/, so nothing else is taken)."""
    text: str = typed(value, str, what)
    if not SHA256.fullmatch(text):
        raise ValueError(f"{what} {text[:80]!r} is not a sha256")
    return text


def _digest_or_none(value: object, what: str) -> str | None:
    """A sha256 (``_digest``), or None where the ledger records none (a file deleted, or absent before)."""
    return None if value is None else _digest(value, what)


def _name(raw: dict[str, object]) -> str:
    name: str = typed(raw["name"], str, "an upstream's name")
    if not name or name in (".", "..") or "/" in name or "\\" in name:
        raise ValueError(f"upstream name {name!r} is not a name")
    return name


def _patches(raw: dict[str, object], name: str) -> list[AppliedPatch]:
    patches = []
    for item in typed(raw["patches"], list, f"{name}: patches"):
        patch: dict[str, object] = typed(item, dict, f"{name}: a patch")
        patches.append(
            AppliedPatch(
                typed(patch["id"], str, f"{name}: a patch id"),
                typed(patch["sha256"], str, f"{name}: a patch sha256"),
                text_or_none(patch.get("commit"), f"{name}: a patch commit"),
            )
        )
    return patches


def _files(raw: object, name: str) -> dict[str, str | None]:
    return {
        typed(path, str, f"{name}: a file path"): _digest_or_none(digest, f"{name}: the hash of {path}")
        for path, digest in typed(raw, dict, f"{name}: files").items()
    }


def _checkout_part(raw: dict[str, object], name: str) -> CheckoutPart:
    absent = [
        typed(path, str, f"{name}: an absent path") for path in typed(raw.get("absent", []), list, f"{name}: absent")
    ]
    return CheckoutPart(
        typed(raw["base_commit"], str, f"{name}: base_commit"),
        text_or_none(raw["head_commit"], f"{name}: head_commit"),
        _source(raw["source"], name),
        absent,
    )


def _source(raw: object, name: str) -> SourceIdentity:
    """The checkout's source: a typed identity, or the display text an older patchmgr recorded."""
    if isinstance(raw, str):
        return SourceIdentity.from_text(raw)
    source: dict[str, object] = typed(raw, dict, f"{name}: source")
    return SourceIdentity(
        SourceKind(typed(source["kind"], str, f"{name}: source kind")),
        typed(source["location"], str, f"{name}: source location"),
        typed(source["cached"], bool, f"{name}: source cached"),
        text_or_none(source.get("unreachable"), f"{name}: source unreachable"),
    )


def _installed_part(raw: dict[str, object], name: str, installed: object, originals: object) -> InstalledPart:
    bytecode = {
        typed(compiled, str, f"{name}: a bytecode path"): _digest(digest, f"{name}: {compiled}")
        for compiled, digest in typed(raw.get("bytecode", {}), dict, f"{name}: bytecode").items()
    }
    return InstalledPart(
        typed(raw["dist"], str, f"{name}: dist"),
        typed(raw["version"], str, f"{name}: version"),
        typed(raw["location"], str, f"{name}: location"),
        typed(raw["editable"], bool, f"{name}: editable"),
        {
            typed(path, str, f"{name}: a file path"): typed(where, str, f"{name}: {path}: installed")
            for path, where in typed(installed, dict, f"{name}: installed").items()
        },
        {
            typed(path, str, f"{name}: a file path"): _digest_or_none(digest, f"{name}: {path}: original")
            for path, digest in typed(originals, dict, f"{name}: originals").items()
        },
        text_or_none(raw["record"], f"{name}: record"),
        _digest_or_none(raw["record_original"], f"{name}: record_original"),
        bytecode,
    )


def _upstream_entry(item: object) -> UpstreamLedger:
    raw: dict[str, object] = typed(item, dict, "an upstream entry")
    name = _name(raw)
    entry = UpstreamLedger(
        name, typed(raw["pin"], str, f"{name}: pin"), _patches(raw, name), _files(raw["files"], name)
    )
    if raw.get("checkout") is not None:
        entry.checkout = _checkout_part(typed(raw["checkout"], dict, f"{name}: checkout"), name)
    if raw.get("env") is not None:
        part: dict[str, object] = typed(raw["env"], dict, f"{name}: env")
        entry.env = _installed_part(part, name, part["installed"], part["originals"])
    if (entry.checkout is None) == (entry.env is None):
        raise ValueError(f"{name}: the entry has neither or both of checkout and env")
    if entry.env is not None and set(entry.env.installed) != set(entry.files):
        raise ValueError(f"{name}: installed does not name every file")
    return entry


def _old_into_entry(item: object) -> UpstreamLedger:
    """An ``--into`` entry of format 1: the checkout's fields beside the common ones."""
    raw: dict[str, object] = typed(item, dict, "an upstream entry")
    name = _name(raw)
    return UpstreamLedger(
        name,
        typed(raw["pin"], str, f"{name}: pin"),
        _patches(raw, name),
        _files(raw["files"], name),
        checkout=_checkout_part(raw, name),
    )


def _old_env_entry(item: object) -> UpstreamLedger:
    """An ``--python`` entry of the unversioned format: files as {installed, original, patched} each."""
    raw: dict[str, object] = typed(item, dict, "an upstream entry")
    name = _name(raw)
    installed: dict[object, object] = {}
    originals: dict[object, object] = {}
    patched: dict[object, object] = {}
    for path, entry in typed(raw["files"], dict, f"{name}: files").items():
        info: dict[str, object] = typed(entry, dict, f"{name}: the entry of {path}")
        installed[path], originals[path], patched[path] = info["installed"], info["original"], info["patched"]
    return UpstreamLedger(
        name,
        typed(raw["pin"], str, f"{name}: pin"),
        _patches(raw, name),
        _files(patched, name),
        env=_installed_part(raw, name, installed, originals),
    )
