"""What an import found and did: the pieces of each upstream, and the outcome the command reports."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path

from patchmgr.engine.results import State
from patchmgr.maintain.importing.pin import Base
from patchmgr.maintain.importing.prove import Proof
from patchmgr.maintain.importing.write import write_import
from patchmgr.model.project import Project


class ImportAction(StrEnum):
    PLANNED = "planned"
    IMPORTED = "imported"
    DRY_RUN = "dry-run"
    REFUSED = "refused"


@dataclass
class Piece:
    id: str
    label: str
    state: State  # at the pin
    imported: bool
    path: str | None = None  # the patch file written, relative to the project root
    evidence: str | None = None
    carrier: str | None = None
    detail: str = ""
    at_given_pin: str | None = None  # what it is at a pin that was given and rejected (the base pinned instead)


@dataclass
class UpstreamImport:
    name: str
    source: str  # the monolithic patch, as named
    git: str
    base: Base
    pin: str
    pieces: list[Piece] = field(default_factory=list)
    proofs: list[Proof] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def proven(self) -> bool:
        return bool(self.proofs) and all(p.ok for p in self.proofs)


@dataclass
class ImportOutcome:
    target: str
    upstreams: list[UpstreamImport]
    action: ImportAction = ImportAction.PLANNED
    notes: list[str] = field(default_factory=list)
    writes: dict[Path, bytes | None] = field(default_factory=dict, repr=False)
    expected: dict[Path, bytes | None] = field(default_factory=dict, repr=False)

    @property
    def ok(self) -> bool:
        return self.action is not ImportAction.REFUSED and all(u.proven for u in self.upstreams)


def finish_import(project: Project, outcome: ImportOutcome, dry_run: bool) -> ImportOutcome:
    """A planned import carried out (its files written in one transaction) or, with ``dry_run``, shown as a dry
    run: a new outcome; one that is not planned (refused) is returned as it is."""
    if outcome.action is not ImportAction.PLANNED:
        return outcome
    if dry_run:
        return replace(outcome, action=ImportAction.DRY_RUN)
    write_import(project, outcome.writes, outcome.expected)
    return replace(outcome, action=ImportAction.IMPORTED)
