"""Where a report comes from: when it was made, and from which commit of the project its manifest is.

A nightly artifact is read days later: it says the time it was made (UTC) and the last commit of the project
that changed the target's manifest, and whether the manifest had changes not committed yet. A project that
is not a git checkout says so.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from patchmgr.io.git import NO_OPTIONAL_LOCKS, GitRepo
from patchmgr.model.errors import GitError


@dataclass(frozen=True)
class Provenance:
    made: datetime  # UTC
    manifest: str  # the manifest's path, from the checkout's top (or as given, outside one)
    commit: str | None  # the last commit that changed it; None outside a checkout, or never committed
    changed: bool = False  # it differs from that commit

    @property
    def made_text(self) -> str:
        return self.made.strftime("%Y-%m-%d %H:%M UTC")


def provenance(manifest: Path, now: datetime | None = None) -> Provenance:
    """The provenance of a report made now from ``manifest`` (``SOURCE_DATE_EPOCH``, when set, is the time)."""
    if now is None:
        epoch = os.environ.get("SOURCE_DATE_EPOCH", "")
        now = datetime.fromtimestamp(int(epoch), UTC) if epoch.isdigit() else datetime.now(UTC)
    path = manifest.resolve()
    top = next((folder for folder in path.parents if (folder / ".git").exists()), None)
    if top is None:
        return Provenance(now, manifest.as_posix(), None)
    relative = path.relative_to(top).as_posix()
    try:
        with GitRepo(top) as repo:
            commit = repo.run("log", "-1", "--format=%H", "--", relative, env=NO_OPTIONAL_LOCKS) or None
            if commit is None:
                return Provenance(now, relative, None, changed=True)
            try:
                repo.run("diff", "--quiet", "HEAD", "--", relative, env=NO_OPTIONAL_LOCKS)  # exit 1: it differs
                changed = False
            except GitError:
                changed = True
    except GitError:
        return Provenance(now, relative, None)
    return Provenance(now, relative, commit, changed)
