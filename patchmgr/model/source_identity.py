"""Where an upstream's files were read from, as a value: what the ledger records and every display is made of.

A source is a git remote (by URL), a git clone on this machine (by path), a release file from the package
index, or an installed distribution (``--python``). Its location is kept with credentials masked, as it is
shown. ``cached``: the cache served it without asking the location; ``unreachable``: why the location could not
be asked (then the cache stood in for it). Two checkouts come from the same source when kind, location and
reachability agree: whether the cache or the location served the same commit does not matter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from enum import StrEnum

from patchmgr.model.urls import as_local_path

_UNREACHABLE = re.compile(r"^the cache \(source (?P<location>.*) not reachable: (?P<why>.*)\)$", re.DOTALL)


class SourceKind(StrEnum):
    GIT = "git"  # a git remote, by URL
    LOCAL = "local"  # a git clone on this machine, by path
    RELEASE = "release"  # a release file from the package index
    INSTALLED = "installed"  # an installed distribution (--python)


@dataclass(frozen=True)
class SourceIdentity:
    kind: SourceKind
    location: str  # masked URL or path; a release: "project version (PyPI file)"; installed: the distribution
    cached: bool = False
    unreachable: str | None = None

    @classmethod
    def git(cls, masked: str, cached: bool = False, unreachable: str | None = None) -> SourceIdentity:
        """A git source at ``masked`` (a URL with its credentials masked, or a path)."""
        kind = SourceKind.LOCAL if as_local_path(masked) is not None else SourceKind.GIT
        return cls(kind, masked, cached or unreachable is not None, unreachable)

    @property
    def description(self) -> str:
        """The source as every command shows it."""
        if self.kind is SourceKind.RELEASE:
            return f"release {self.location}"
        if self.kind is SourceKind.INSTALLED:
            return self.location
        if self.unreachable is not None:
            return f"the cache (source {self.location} not reachable: {self.unreachable})"
        return f"git {self.location}" + (" (cached)" if self.cached else "")

    def as_recorded(self) -> SourceIdentity:
        """The identity as a ledger records it: the place and whether it could be reached, not whether this run's
        cache served the commit (a build from the cache writes the same ledger as one from the location)."""
        return replace(self, cached=self.unreachable is not None)

    def same_source(self, other: SourceIdentity) -> bool:
        """The same place, reached the same way: the cache serving a commit its location also has does not count."""
        return (self.kind, self.location, self.unreachable) == (other.kind, other.location, other.unreachable)

    @classmethod
    def from_text(cls, text: str) -> SourceIdentity:
        """The identity an older patchmgr recorded as its display text (its ledger's ``source``, without
        ``" (cached)"``)."""
        if text.startswith("release "):
            return cls(SourceKind.RELEASE, text.removeprefix("release "))
        found = _UNREACHABLE.match(text)
        if found:
            return cls.git(found["location"], unreachable=found["why"])
        if text.startswith("git "):
            return cls.git(text.removeprefix("git "))
        raise ValueError(f"source {text[:80]!r} is not one patchmgr records")
