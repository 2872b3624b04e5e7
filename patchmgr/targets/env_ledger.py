"""The ledger ``apply --python`` keeps in the environment: what it changed, with the original bytes kept for revert."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from patchmgr.model.records import text_or_none, typed
from patchmgr.targets.ledger import Series


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

    def series(self, name: str) -> Series | None:
        entry = self.upstream(name)
        return None if entry is None else (entry.pin, [(p["id"], p["sha256"]) for p in entry.patches])


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
