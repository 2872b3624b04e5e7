"""The pull requests and commits a patch names, and whether a ref has them (``history.backports``): as JSON, and
as one line each for tables and reports."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from patchmgr.history.backports import Landed


def landed_json(landed: Landed) -> dict:
    reference = landed.reference
    return {
        "pr": reference.number,
        "commit": reference.commit,
        "role": reference.role.value,
        "repository": reference.repository,
        "named_in": reference.named_in,
        "state": landed.presence.value,
        "landed_as": {"commit": landed.commit, "subject": landed.subject} if landed.commit else None,
        "reason": landed.reason or None,
    }


def backport_lines(marks: Sequence[Landed], at: str) -> list[str]:
    """``backport PR #37 (commit 74093e34cea4) at main: there, 74093e34cea4 'Merge pull request #37 …'``."""
    return [f"backport {mark.text(at)}" for mark in marks]
