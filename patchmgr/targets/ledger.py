"""The ledger ``apply`` writes: what was applied, so that ``verify`` can prove it later.

It records, per upstream, the base commit, each patch's sha256 and the commit
it became, and the sha256 of every file the patches touched.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from patchmgr.model.errors import StateError
from patchmgr.model.records import text_or_none, typed

if TYPE_CHECKING:
    from patchmgr.check.status import TargetStatus

LEDGER_NAME = "patchmgr-ledger.json"
FORMAT = 1

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

    def series(self, name: str) -> Series | None:
        entry = self.upstream(name)
        return None if entry is None else (entry.pin, [(p.id, p.sha256) for p in entry.patches])

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


def read_ledger(folder: Path) -> Ledger | None:
    path = folder / LEDGER_NAME
    if not path.is_file():
        return None
    return Ledger.from_json(path.read_text(encoding="utf-8"), path)
