"""How an upstream's tags name its versions, and so which tags are its releases and in what order.

Upstreams tag releases their own way: ``v0.5.1``, ``0.5.1``, Megatron-LM's ``core_v0.19.0`` (``core_v0.15.0rc4`` a
release candidate), MindSpeed's ``v2.1.0_core_r0.12.1`` (MindSpeed 2.1.0 for Megatron core r0.12.1), openssh's
``V_9_9_P2`` (``_`` between the numbers, ``P2`` the second portable patch level of 9.9). A ``TagScheme`` reads the
version out of a tag: its ``pattern`` (the manifest's ``tag-pattern``, or ``matrix --refs``) keeps the tags it
matches, and the text of the pattern before its first wildcard (less any version digits in it: ``v0.5.`` of
``v0.5.*``) is the prefix in front of the version (``core_v`` of ``core_v*``); with no pattern the prefix is an
optional ``v``/``V``, ``_`` or ``-`` after it. What follows is read as a version (``parse_version``) and ordered
as one (PEP 440: 0.15.0rc4 < 0.15.0 < 0.15.1, 9.9.post1 < 9.9.post2 < 10.0.post1), never as text.
"""

from __future__ import annotations

import fnmatch
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

_PRE = {"a": "a", "alpha": "a", "test": "a", "b": "b", "beta": "b", "c": "rc", "rc": "rc", "pre": "rc", "preview": "rc"}
_VERSION = re.compile(
    r"(?P<release>\d+(?:[._]\d+)*)"
    # a release candidate: rc4, .RC3, -alpha, .beta, PRE17 (a marker standing alone, not the start of a word)
    r"(?:[._-]?(?P<pre>alpha|beta|preview|pre|rc|test|a|b|c)(?![a-z])[._-]?(?P<pre_n>\d+)?)?"
    # a patch level after the release: openssh's P1, post1, r2
    r"(?:[._-]?(?P<post>post|rev|p|r)[._-]?(?P<post_n>\d+))?"
    r"(?:[._-]?(?P<dev>dev)[._-]?(?P<dev_n>\d+)?)?"
    # anything else is a label of the release (MindSpeed's _core_r0.12.1): compared after the numbers
    r"(?:[._+-](?P<label>[a-z0-9]+(?:[._-][a-z0-9]+)*))?"
)
_DEFAULT_PREFIX = re.compile(r"[vV]?[_-]?(?=\d)")
_WILDCARD = re.compile(r"[*?\[]")
_LOOKS_RELEASED = re.compile(r"(?<![0-9])(\d+(?:[._]\d+)+)")  # two numbers or more: 0.19.0, 9_9, 24.09


def parse_version(text: str) -> Version | None:
    """The version ``text`` names (``0.19.0``, ``0.15.0rc4``, ``9_9_P2``, ``1.0.0_core_r0.6.0``), or None."""
    match = _VERSION.fullmatch(text.lower())
    if match is None:
        return None
    shown = match["release"].replace("_", ".")
    if match["pre"]:
        shown += f"{_PRE[match['pre']]}{match['pre_n'] or 0}"
    if match["post"]:
        shown += f".post{match['post_n']}"
    if match["dev"]:
        shown += f".dev{match['dev_n'] or 0}"
    if match["label"]:
        shown += "+" + re.sub(r"[_-]", ".", match["label"])
    try:
        return Version(shown)
    except InvalidVersion:
        return None


@dataclass(frozen=True)
class TagScheme:
    """The tags that ``pattern`` (a glob; None: every tag) keeps, and the version each names (see the module)."""

    pattern: str | None = None

    def matches(self, name: str) -> bool:
        return self.pattern is None or fnmatch.fnmatchcase(name, self.pattern)

    @property
    def prefix(self) -> str:
        """The text in front of the version: the pattern's lead up to its first wildcard, less version digits at
        its end (``v`` of ``v0.5.*``, ``core_v`` of ``core_v*``, ``V_`` of ``V_*``)."""
        if self.pattern is None:
            return ""
        lead = _WILDCARD.split(self.pattern, maxsplit=1)[0]
        return re.sub(r"\d[\d._-]*\Z", "", lead)

    def version(self, name: str) -> Version | None:
        """The version tag ``name`` names, or None (a tag the pattern does not keep, or no version)."""
        if not self.matches(name):
            return None
        rest = name[len(self.prefix) :] if name.startswith(self.prefix) else name
        lead = _DEFAULT_PREFIX.match(rest)
        return parse_version(rest[lead.end() :]) if lead else None

    def final(self, name: str) -> Version | None:
        """The version of a tag that names a final release (a patch level or a label too, not a pre- or
        dev-release candidate), else None."""
        version = self.version(name)
        return version if version is not None and not version.is_prerelease and not version.is_devrelease else None

    def order(self, name: str) -> tuple[int, Version, str]:
        """A tag's place among tags by version: versions in their order, then names that are no version."""
        version = self.version(name)
        return (0, version, name) if version is not None else (1, Version("0"), name)


DEFAULT_SCHEME = TagScheme()


def release_like(names: Iterable[str]) -> tuple[str | None, list[str]]:
    """Among tag names, those that look like releases (two numbers or more in them: ``core_v0.19.0``,
    ``V_10_0_P1``), the newest first (at most five), and the tag-pattern that the most of them share (the text in
    front of their version, then ``*``); (None, []) when none does."""
    prefixes: dict[str, list[str]] = {}
    for name in names:
        found = _LOOKS_RELEASED.search(name)
        if found:
            prefixes.setdefault(name[: found.start()], []).append(name)
    if not prefixes:
        return None, []
    lead, _count = Counter({p: len(tags) for p, tags in prefixes.items()}).most_common(1)[0]
    pattern = f"{lead}*" if lead else "*"
    scheme = TagScheme(pattern)
    shown = sorted(prefixes[lead], key=scheme.order, reverse=True)[:5]
    return pattern, shown
