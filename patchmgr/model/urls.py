"""Shapes of values that reach git, pip, a shell and the output: full commit ids, no control characters, the
URL policy of manifests (for ``git`` keys and ``smoke-requirements`` alike), URLs whose passwords are never printed."""

from __future__ import annotations

import re
from pathlib import Path

FULL_SHA = re.compile(r"^[0-9a-f]{40}\Z")  # \Z: `$` would let a final newline through
_SCP_LIKE = re.compile(r"^(?:[A-Za-z0-9._-]+@)?[A-Za-z0-9.-]+:[^/].*$")  # git's scp-like ssh: host:path

# C0, DEL, C1 and the Unicode line and paragraph separators: each can end a line (in a shell's `read`, a .pth
# file, Python's splitlines) or move a terminal's cursor, so a value holding one forges what follows it
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def control_character(value: str) -> str | None:
    """``contains a control character (U+000A)`` for the first one in ``value``, or None."""
    found = _CONTROL.search(value)
    return f"contains a control character (U+{ord(found.group()):04X})" if found else None


NEVER_IN_A_REF = " ~^:?*[\\"  # the characters git check-ref-format refuses in a ref name, besides control ones


def ref_problem(ref: str) -> str | None:
    """Why ``ref`` is no name git takes as a branch or tag on the command line (``git check-ref-format``'s rules,
    one level allowed), or None."""
    if not ref:
        return "it is empty"
    if ref.startswith("-"):
        return "it starts with '-'"
    if "@{" in ref or ref == "@":
        return "'@{...}' (a reflog entry) and '@' are revision expressions, not refs"
    # git's own rule (check-ref-format): C0 and DEL; a C1 or U+2028 is a byte git takes in a tag's name, shown
    # escaped wherever it is printed (a manifest's values are refused them by the manifest's own check)
    control = next((c for c in ref if ord(c) < 0x20 or c == "\x7f"), None)
    if control:
        return f"it contains a control character (U+{ord(control):04X}), which no ref name may hold"
    bad = [c for c in ref if c in NEVER_IN_A_REF]
    if bad:
        return f"it holds {bad[0]!r}, which no ref name may hold"
    if ".." in ref or "//" in ref or ref.startswith("/") or ref.endswith(("/", ".")):
        return "'..', '//', a leading or trailing '/', or a trailing '.' are not allowed in a ref name"
    if any(part.startswith(".") or part.endswith(".lock") for part in ref.split("/")):
        return "a part of it starts with '.' or ends with '.lock'"
    return None


# -- credentials never reach the output ---------------------------------------------
_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^/@\s:'\"]*):([^/\s'\"]*)@")  # to the authority's last @
# over http(s) a token is often given as the user alone (https://glpat-...@host, https://ghp_...@github.com)
_WEB_USER = re.compile(r"(?i)\b(https?://)([^/@\s:'\"]+)@")
# or as the user beside a password that stands in for none: empty, or GitHub's documented x-oauth-basic
_WEB_USER_BESIDE_NO_PASSWORD = re.compile(r"(?i)\b(https?://)[^/@\s:'\"]+:(?:x-oauth-basic)?@")
# a query parameter named like a secret (https://host/lib.git?private_token=..., &api_key=..., X-Amz-Signature=...),
# after ``?``, ``&`` or the ``&amp;`` that HTML and XML write for ``&``, or ``#`` (OAuth's implicit grant gives
# ``#access_token=...``)
_SECRET_NAME = r"(?:[a-z0-9_.-]*[_.-])?(?:token|key|apikey|password|passwd|secret|signature|sig|credential|auth)"
# its value: to the next parameter, the URL's end, or a ``,``, ``;`` or ``)`` that ends the sentence around it
_SECRET_PARAMETER = re.compile(
    rf"(?i)((?:[?&#]|&amp;){_SECRET_NAME}=)((?:[^&#\s'\"<>,;)]|[,;)]++(?=[^&#\s'\"<>,;)]))*)"
)
# an HTTP header that carries credentials, as git's http.extraheader or curl's -H give it
_AUTH_HEADER = re.compile(
    r"(?i)\b((?:proxy-)?authorization:\s*(?:(?:basic|bearer|token|digest|negotiate)\s+)?|"
    r"(?:private|job|deploy)-token:\s*|x-api-key:\s*)([^\s'\",;]+)"
)


def mask_url(text: str) -> str:
    """``text`` with every credential in it masked as ``***``: the one finder of credentials that every output
    and every written file goes through (``render/outside.py``, ``io/files.write_output``).

    The password of every URL (https://user:***@host/x); over http(s) a user given without a password too
    (https://***@host/x): that is where a token goes, and so is a user beside an empty password or GitHub's
    ``x-oauth-basic`` (https://***:***@host/x); the value of every query parameter named like a secret
    (``token``, ``private_token``, ``access_token``, ``key``, ``api_key``, ``password``, ``secret``,
    ``X-Amz-Signature``...: https://host/x?private_token=***); and the credentials of an ``Authorization:``
    header (``Authorization: Bearer ***``) and of GitLab's ``PRIVATE-TOKEN:``. An ssh user (``ssh://git@host``,
    ``git@host:org/r``) is a login, not a secret, and stays."""
    if not text:
        return text
    if "=" in text:
        text = _SECRET_PARAMETER.sub(r"\1***", text)
    if ":" in text:
        text = _AUTH_HEADER.sub(r"\1***", text)
    if "@" not in text:
        return text
    text = _WEB_USER_BESIDE_NO_PASSWORD.sub(r"\1***:***@", text)
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
    url = _without_secret_parameters(url)
    match = _AUTHORITY.match(url)
    if not match or "@" not in match["authority"]:
        return url
    userinfo, _, host = match["authority"].rpartition("@")
    user = userinfo.split(":", 1)[0]
    keep = f"{user}@" if user and "ssh" in match["scheme"].lower() else ""
    return f"{match['scheme']}{keep}{host}{match['rest']}"


def _without_secret_parameters(url: str) -> str:
    """``url`` less every query parameter named like a secret (the ``?`` kept only while parameters remain)."""
    path, mark, query = url.partition("?")
    if not mark:
        return url
    query, hash_mark, fragment = query.partition("#")
    kept = [part for part in query.split("&") if not _SECRET_PARAMETER.match("?" + part)]
    return path + ("?" + "&".join(kept) if kept else "") + hash_mark + fragment


def _host_looks_like_option(url: str) -> bool:
    """Whether the host (or user@host) git would hand to ssh starts with ``-`` once brackets are removed:
    ``ssh://-oProxyCommand=...``, ``ssh://git@[-oProxyCommand=...]:22/y``, ``[-oProxyCommand=...]:y``
    (CVE-2017-1000117). The authority of a ``scheme://`` URL, or what precedes the first ``/`` of an scp-like
    one, is split at each ``@`` and ``[``: no piece may start with ``-``."""
    scheme = re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://([^/?#]*)", url)
    authority = scheme.group(1) if scheme else url.split("/", 1)[0]
    return any(piece.lstrip().startswith("-") for piece in re.split(r"[@\[]", authority))


_SCHEME_AUTHORITY = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://(?P<authority>[^/?#]*)")


def authority_problem(url: str) -> str | None:
    """Why the host and port of a ``scheme://`` URL cannot be read (as ``urllib.parse`` reads them, which raises
    on an unclosed ``[``: ``https://user:token@[bad/x``), or None; any other location has none to read."""
    found = _SCHEME_AUTHORITY.match(url)
    if found is None:
        return None
    authority = found["authority"]
    if ("[" in authority) != ("]" in authority):
        return "is not a URL: its host has an unclosed '[' or ']'"
    host = authority.rpartition("@")[2]
    port = host.rpartition("]")[2] if host.startswith("[") else host
    if ":" in port:
        digits = port.rpartition(":")[2]
        if digits and not (digits.isascii() and digits.isdigit() and int(digits) <= 65535):
            return "is not a URL: its port is not a number from 0 to 65535"
    return None


def url_problem(url: str, from_command_line: bool = False) -> str | None:
    """Why ``url`` may not be given to git, or None.

    URLs in manifests are data from many hands: transports that run commands
    (``ext::``) or read arbitrary local files (``file::``/``file://``) are only
    accepted from the command line, and nothing that git could read as an
    option is accepted at all.
    """
    shown = mask_url(url)
    if url.startswith("-"):
        return f"{shown!r} looks like a command-line option"
    control = control_character(url)
    if control:
        return control
    lowered = url.lower()
    # ssh://-oProxyCommand=... (CVE-2017-1000117): a host that ssh would read as an option
    if _host_looks_like_option(url):
        return f"{shown!r} names a host that looks like a command-line option"
    authority = authority_problem(url)
    if authority:
        return f"{shown!r} {authority}"
    if lowered.startswith("ext::"):
        return "the ext:: transport runs commands and is refused"
    if "::" in url.split("/")[0] and not from_command_line:
        return f"the {url.split('::')[0]}:: transport helper is refused in manifests"
    if re.search(r"\$\{|\$[A-Za-z_]", url):
        return f"{shown!r} holds a variable ($NAME or ${{NAME}}) that was never given a value: not a URL"
    if from_command_line:
        return None
    if re.match(r"^(https?|ssh|git)://", lowered) or _SCP_LIKE.match(url):
        return None
    return f"{shown!r} is not an https://, ssh:// or git:// URL"


# what pip takes as a local file when a requirement is a bare name that exists in its working folder
_ARCHIVE = re.compile(r"\.(whl|zip|tar|tgz|tbz|txz|tlz|tar\.(gz|bz2|xz|lz|lzma))$", re.I)
_VCS_PREFIX = re.compile(r"^(git|hg|svn|bzr)\+", re.I)
# the common shape, ``name==1.2.3`` (or ``>=``, ``<``, ``~=1.2``..., comma-separated), that packaging's parser
# accepts without a doubt: checked by this pattern alone, so a manifest like that needs no packaging import
_NUMERIC = r"[0-9]+(?:\.[0-9]+)*"
_PLAIN_SPECIFIER = rf"(?:(?:==|!=|<=|>=|<|>){_NUMERIC}|~={_NUMERIC}\.[0-9]+)"
_PLAIN_REQUIREMENT = re.compile(
    rf"^(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?){_PLAIN_SPECIFIER}(?:,{_PLAIN_SPECIFIER})*\Z"
)


def requirement_problem(value: str) -> str | None:
    """Why ``value`` may not be handed to pip as a smoke requirement, or None.

    A requirement is data from a manifest, so it gets the manifest's URL policy: a PEP 508 name with
    a version, or a direct reference (``name @ URL``) to an https://, ssh:// or git:// URL (``git+`` and
    the other VCS prefixes included); never a pip option, a local path or a ``file:`` URL, whose tree's
    build backend would run as this user during ``smoke``."""
    control = control_character(value)
    if control:
        return control
    if value.strip().startswith("-"):
        return "is a pip option, not a requirement (options are refused)"
    plain = _PLAIN_REQUIREMENT.match(value)
    if plain and not _ARCHIVE.search(plain["name"]):
        return None  # a name and version bounds only: no URL, and a name that is no archive's
    # packaging's parser is a noticeable share of a CLI start: only a requirement beyond that shape loads it
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        requirement = Requirement(value)
    except InvalidRequirement as exc:
        return f"is not a PEP 508 requirement ({exc})"
    if _ARCHIVE.search(requirement.name):
        return f"names {requirement.name!r}, which pip would install from a local archive of that name"
    if requirement.url is None:
        return None
    url = _VCS_PREFIX.sub("", requirement.url)
    if not re.match(r"^(https?|ssh|git)://", url.lower()):  # a path, file:, or anything pip reads from this machine
        return (
            f"points at {mask_url(requirement.url)!r}, not an https://, ssh:// or git:// URL "
            "(local paths and file: URLs are refused: their build code would run as you)"
        )
    return url_problem(url)
