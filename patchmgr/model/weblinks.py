"""Web pages of an upstream's commits and pull requests, from its git URL (GitHub and GitCode forms).

``https://github.com/O/R(.git)``, ``git@github.com:O/R.git`` and ``ssh://git@github.com/O/R.git`` all name the
repository whose pages are ``https://github.com/O/R/commit/SHA`` and ``/pull/N``; on GitCode
(``gitcode.com``) a commit is ``/commit/SHA`` too and a pull request is a merge request,
``/merge_requests/N`` (what GitCode's own merge commits name as ``O/R!N``). Any other host gives no
links: nothing is guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum


class Forge(StrEnum):
    GITHUB = "github.com"
    GITCODE = "gitcode.com"


_NAME = r"[A-Za-z0-9_.-]+"
_FORMS = (
    re.compile(rf"^https://(?:[^@/]*@)?(?P<host>{_NAME})/(?P<owner>{_NAME})/(?P<repo>{_NAME}?)(?:\.git)?/?$"),
    re.compile(rf"^ssh://[^@/]+@(?P<host>{_NAME})(?::\d+)?/(?P<owner>{_NAME})/(?P<repo>{_NAME}?)(?:\.git)?/?$"),
    re.compile(rf"^[^@/:]+@(?P<host>{_NAME}):(?P<owner>{_NAME})/(?P<repo>{_NAME}?)(?:\.git)?/?$"),
)
_SHA = re.compile(r"^[0-9a-f]{7,64}$")


@dataclass(frozen=True)
class WebRepo:
    """An upstream repository's web pages."""

    forge: Forge
    owner: str
    name: str

    @property
    def url(self) -> str:
        return f"https://{self.forge.value}/{self.owner}/{self.name}"

    def commit(self, sha: str) -> str | None:
        return f"{self.url}/commit/{sha}" if _SHA.match(sha) else None

    def pull(self, number: int) -> str:
        kind = "pull" if self.forge is Forge.GITHUB else "merge_requests"
        return f"{self.url}/{kind}/{number}"


def web_repo(url: str) -> WebRepo | None:
    """The web pages of the repository ``url`` clones, when it is on GitHub or GitCode; else None."""
    for form in _FORMS:
        match = form.match(url.strip())
        if match is None:
            continue
        host = match.group("host").lower()
        forge = next((f for f in Forge if host in (f.value, f"www.{f.value}")), None)
        owner, name = match.group("owner"), match.group("repo")
        if forge is None or not name or owner in (".", "..") or name in (".", "..", ".git"):
            return None
        return WebRepo(forge, owner, name)
    return None


def first_web_repo(urls: tuple[str, ...]) -> WebRepo | None:
    """The first of an upstream's URLs (its ``git``, then its ``mirrors``) that has web pages here."""
    return next((found for url in urls if (found := web_repo(url)) is not None), None)
