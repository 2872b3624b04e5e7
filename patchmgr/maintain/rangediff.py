"""The old series against the new one, as ``git range-diff`` sees it: one pair per patch, and git's text."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum

from patchmgr.io.git import GitRepo
from patchmgr.model.errors import GitError

# "1:  1a2b3c4 = 1:  5d6e7f8 Subject", "2:  1a2b3c4 < -:  ------- Subject"
_PAIR = re.compile(r"^\s*(\d+|-):\s+([0-9a-f]+|-+)\s+([=!<>])\s+(\d+|-):\s+([0-9a-f]+|-+)\s?(.*)$")


class PairStatus(StrEnum):
    """What became of one patch between the old series and the new, by git range-diff's mark."""

    SAME = "same"
    CHANGED = "changed"
    REMOVED = "removed"
    ADDED = "added"


MEANING = {"=": PairStatus.SAME, "!": PairStatus.CHANGED, "<": PairStatus.REMOVED, ">": PairStatus.ADDED}


@dataclass(frozen=True)
class RangePair:
    old: int | None  # position in the old series (1-based), None for an added patch
    old_commit: str | None
    status: PairStatus
    new: int | None
    new_commit: str | None
    subject: str


@dataclass
class RangeDiff:
    old: str  # the old series as a range, base..tip
    new: str
    pairs: list[RangePair] = field(default_factory=list)
    text: str = ""  # git's own output, the diffs of changed patches included


def range_diff(repo: GitRepo, old: str, new: str) -> RangeDiff | None:
    """``git range-diff old new`` as values; None when git cannot compute it (the old commits are gone)."""
    try:
        text = repo.range_diff(old, new)
    except GitError:
        return None
    result = RangeDiff(old, new, text=text)
    for line in text.split("\n"):  # git's line feeds only: a subject may hold a CR
        match = _PAIR.match(line)
        if match:
            old_no, old_commit, mark, new_no, new_commit, subject = match.groups()
            result.pairs.append(
                RangePair(
                    None if old_no == "-" else int(old_no),
                    None if old_commit.startswith("-") else old_commit,
                    MEANING[mark],
                    None if new_no == "-" else int(new_no),
                    None if new_commit.startswith("-") else new_commit,
                    subject,
                )
            )
    return result
