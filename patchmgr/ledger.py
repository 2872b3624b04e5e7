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
            upstreams = [
                UpstreamLedger(u["name"], u["pin"], u["base_commit"], u["head_commit"], u["source"],
                               [AppliedPatch(**p) for p in u["patches"]], dict(u["files"]),
                               list(u.get("absent", [])))
                for u in raw["upstreams"]
            ]
            return cls(raw["target"], upstreams, raw.get("format", FORMAT))
        except (ValueError, KeyError, TypeError) as exc:
            raise StateError(f"{where}: the ledger is damaged ({exc})",
                             "remove the folder and run `patchmgr apply` again") from exc


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_ledger(folder: Path) -> Ledger | None:
    path = folder / LEDGER_NAME
    if not path.is_file():
        return None
    return Ledger.from_json(path.read_text(encoding="utf-8"), path)
