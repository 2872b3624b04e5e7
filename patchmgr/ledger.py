"""The ledger ``apply`` writes: what was applied, so that ``verify`` can prove it later.

It records, per upstream, the base commit, each patch's sha256 and the commit
it became, and the sha256 of every file the patches touched.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from patchmgr.errors import StateError

LEDGER_NAME = "patchmgr-ledger.json"
FORMAT = 1


@dataclass
class AppliedPatch:
    id: str
    sha256: str
    commit: str | None = None


@dataclass
class UpstreamLedger:
    name: str
    pin: str  # the manifest's commit when apply ran
    base_commit: str  # the checkout's commit the patches sit on (the pin, or a release's import)
    head_commit: str | None
    source: str
    patches: list[AppliedPatch]
    files: dict[str, str | None]  # path -> sha256 of the patched content, None when deleted
    absent: list[str] = field(default_factory=list)  # files the source lacked, left out of the checkout


@dataclass
class Ledger:
    target: str
    upstreams: list[UpstreamLedger] = field(default_factory=list)
    format: int = FORMAT

    def upstream(self, name: str) -> UpstreamLedger | None:
        return next((u for u in self.upstreams if u.name == name), None)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str, where: Path) -> Ledger:
        try:
            raw = json.loads(text)
            upstreams = [_upstream_entry(u) for u in typed(raw, dict, "the document")["upstreams"]]
            return cls(typed(raw["target"], str, "target"), upstreams, raw.get("format", FORMAT))
        except (ValueError, KeyError, TypeError, RecursionError) as exc:
            raise StateError(f"{where}: the ledger is damaged ({exc})",
                             "remove the folder and run `patchmgr apply` again") from None


def typed(value, kind: type, what: str):
    """``value`` when it is a ``kind``: a ledger edited by hand or by another tool is refused, not half read.

    Raises ``TypeError`` naming ``what``; shared by every reader of patchmgr's own JSON files (the ledgers, the
    journal) and of what an interpreter answers to ``--python``.
    """
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise TypeError(f"{what} is {type(value).__name__}, not {kind.__name__}")
    return value


def text_or_none(value, what: str) -> str | None:
    return None if value is None else typed(value, str, what)


_typed, _text_or_none = typed, text_or_none  # the names they had before other modules shared them


def _upstream_entry(raw) -> UpstreamLedger:
    raw = typed(raw, dict, "an upstream entry")
    name = typed(raw["name"], str, "an upstream's name")
    patches = [AppliedPatch(typed(p, dict, f"{name}: a patch")["id"], p["sha256"], p.get("commit"))
               for p in typed(raw["patches"], list, f"{name}: patches")]
    for patch in patches:
        typed(patch.id, str, f"{name}: a patch id")
        typed(patch.sha256, str, f"{name}: a patch sha256")
        text_or_none(patch.commit, f"{name}: a patch commit")
    files = {typed(path, str, f"{name}: a file path"): text_or_none(digest, f"{name}: the hash of {path}")
             for path, digest in typed(raw["files"], dict, f"{name}: files").items()}
    absent = [typed(path, str, f"{name}: an absent path") for path in typed(raw.get("absent", []), list,
                                                                              f"{name}: absent")]
    return UpstreamLedger(name, typed(raw["pin"], str, f"{name}: pin"),
                          typed(raw["base_commit"], str, f"{name}: base_commit"),
                          text_or_none(raw["head_commit"], f"{name}: head_commit"),
                          typed(raw["source"], str, f"{name}: source"), patches, files, absent)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_ledger(folder: Path) -> Ledger | None:
    path = folder / LEDGER_NAME
    if not path.is_file():
        return None
    return Ledger.from_json(path.read_text(encoding="utf-8"), path)
