"""Shapes of names that reach git and the output: full commit ids, URLs whose passwords are never printed."""

from __future__ import annotations

import re
from pathlib import Path

FULL_SHA = re.compile(r"^[0-9a-f]{40}$")

# -- credentials never reach the output ---------------------------------------------
_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^/@\s:'\"]*):([^/\s'\"]*)@")  # to the authority's last @
# over http(s) a token is often given as the user alone (https://glpat-...@host, https://ghp_...@github.com)
_WEB_USER = re.compile(r"(?i)\b(https?://)([^/@\s:'\"]+)@")


def mask_url(text: str) -> str:
    """``text`` with the password of every URL in it masked (https://user:***@host/x), and over http(s) a user
    given without a password too (https://***@host/x): that is where a token goes."""
    if not text or "@" not in text:
        return text
    return _WEB_USER.sub(r"\1***@", _CREDENTIALS.sub(r"\1:***@", text))


def as_local_path(location: str) -> Path | None:
    """A location that names a folder on this machine, or None for a URL.

    Git's rules (``url_is_local_not_ssh``): ``scheme://...`` and ``transport::...``
    are URLs; otherwise a location with a colon before any slash is scp-like ssh
    (``git@host:org/repo.git``, ``host:repo``); the rest is a path.
    """
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", location) or "::" in location.split("/")[0]:
        return None
    colon, slash = location.find(":"), location.find("/")
    if colon >= 0 and (slash < 0 or colon < slash):
        return None
    return Path(location).expanduser()


_AUTHORITY = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<authority>[^/?#]*)(?P<rest>.*)$", re.S)


def without_credentials(url: str) -> str:
    """``url`` as a project file may hold it: no password, and over http(s) no user either (a token is often
    given as the user: ``https://glpat-...@host``); an ssh user (``ssh://git@host``) is a login, not a secret."""
    match = _AUTHORITY.match(url)
    if not match or "@" not in match["authority"]:
        return url
    userinfo, _, host = match["authority"].rpartition("@")
    user = userinfo.split(":", 1)[0]
    keep = f"{user}@" if user and "ssh" in match["scheme"].lower() else ""
    return f"{match['scheme']}{keep}{host}{match['rest']}"
