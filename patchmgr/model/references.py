"""The pull requests and commits a patch names: what it backports, and what that needs first.

Read from its DEP-3 fields (``Origin``, ``Bug``, ``Upstream-Status``, ``Applied-Upstream``: pull-request and
merge-request URLs of GitHub, GitCode and GitLab, commit URLs, and ``commit <id>`` after one of them or where the
field says the commit is upstream's) and from
``(#NNNN)`` in its subject. A reference that the text before it calls a prerequisite (``with its prerequisite
<url>``) is one; a ``commit <id>`` right after a pull request is that pull request's commit; a patch that names
one pull request and one commit in the same role names one change. ``history.backports`` says whether each is
in a ref's history.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from enum import StrEnum

from patchmgr.model.manifest import Upstream
from patchmgr.model.patchfile import PatchFile

FIELDS = ("Origin", "Upstream-Status", "Bug", "Applied-Upstream")

# a URL runs to a space, a comma, a bracket or a quote; gitweb's ";a=commit;h=SHA" keeps its semicolons, and a
# sentence's full stop or semicolon after it is not part of it
_URL = re.compile(r"https?://[^\s,()<>\"']+")
_URL_END = ".;:"
_PULL = re.compile(
    r"^/([^/]+)/([^/]+?)(?:\.git)?/(?:-/)?(?:pull|pulls|merge_requests|merge-requests)/(\d+)(?:[/#?].*)?$"
)
# GitHub /owner/name/commit/SHA, GitLab /group/sub/name/-/commit/SHA (any depth of groups)
_COMMIT_URL = re.compile(
    r"^/((?:[^/]+/)*?[^/]+)/([^/]+?)(?:\.git)?/(?:-/)?(?:pull/\d+/)?commits?/([0-9a-fA-F]{7,40})(?:[/#?].*)?$"
)
# cgit /path/name.git/commit/?id=SHA (also ?h=branch&id=SHA), and its /patch/ and /diff/ pages of a commit
_CGIT_URL = re.compile(
    r"^/(?:(.*)/)?([^/]+?)(?:\.git)?/(?:commit|patch|diff)/?\?(?:.*&)?id=([0-9a-fA-F]{7,40})(?:[&#].*)?$"
)
# gitweb ?p=name.git;a=commit;h=SHA (a=commitdiff, a=patch; or h= alone, which names a commit there)
_GITWEB_URL = re.compile(r"[?;&]p=(?:[^;&]*/)?([^;&/]+?)(?:\.git)?(?:[;&].*)?$")
_GITWEB_COMMIT = re.compile(r"[?;&]h=([0-9a-fA-F]{7,40})(?:[;&#]|$)")
_GITWEB_ACTION = re.compile(r"[?;&]a=([a-z_]+)")
_BARE_COMMIT = re.compile(r"\bcommit(?:\s+|:)([0-9a-f]{7,40})\b")  # "commit SHA", DEP-3's "commit:SHA"
_SUBJECT_PR = re.compile(r"\(#(\d+)\)")
_PREREQUISITE = re.compile(r"(?i)\b(?:prerequisites?|requires|depends on|on top of|needs)\b")


class Role(StrEnum):
    BACKPORT = "backport"  # the change the patch carries (backports, or was submitted as)
    PREREQUISITE = "prerequisite"  # what that change needs first, as the patch says


@dataclass(frozen=True)
class Reference:
    """A pull request (``number``) and/or a commit (``commit``, 7 to 40 hex digits) that a patch names."""

    role: Role
    number: int | None = None
    commit: str | None = None
    repository: str | None = None  # "owner/name" of the URL; None: the patch's own upstream (a subject's (#N))
    named_in: str = ""  # the field that names it first ("Origin", "Subject")

    @property
    def label(self) -> str:
        """``PR #37 (commit 74093e34cea4)``, ``PR #6131``, ``commit 85323c5cc888``."""
        commit = f"commit {self.commit[:12]}" if self.commit else ""
        if self.number is None:
            return commit
        return f"PR #{self.number}" + (f" ({commit})" if commit else "")

    @property
    def title(self) -> str:
        """The label, with its role when it is a prerequisite: ``PR #4888 (prerequisite)``."""
        return self.label + (" (prerequisite)" if self.role is Role.PREREQUISITE else "")


def patch_references(patch: PatchFile) -> tuple[Reference, ...]:
    """Every pull request and commit ``patch`` names, each once, in the order first named."""
    found: list[Reference] = []
    for name in FIELDS:
        for value in patch.field_values(name):
            found += _in_text(value, name)
    found += [Reference(Role.BACKPORT, int(n), named_in="Subject") for n in _SUBJECT_PR.findall(patch.subject)]
    return _merged(found)


def same_repository(reference: Reference, upstream: Upstream) -> bool:
    """Whether ``reference`` names ``upstream``'s own repository: no URL (a subject's ``(#N)``, a bare commit), or
    a URL whose repository name is one of its sources' (an owner may be renamed: verl-project/verl is
    volcengine/verl)."""
    if reference.repository is None:
        return True
    name = reference.repository.rpartition("/")[2].lower()
    return any(url.rstrip("/").removesuffix(".git").rpartition("/")[2].lower() == name for url in upstream.urls)


def _in_text(value: str, field: str) -> list[Reference]:
    marks = sorted(
        [(m.start(), m.end(), m.group()) for m in _URL.finditer(value)]
        + [(m.start(), m.end(), m.group(1)) for m in _BARE_COMMIT.finditer(value)]
    )
    found: list[Reference] = []
    end = 0
    for start, stop, text in marks:
        before, end = value[end:start], stop
        if text.startswith("http"):
            reference = _from_url(text, field)
            if reference is not None and _PREREQUISITE.search(before):
                reference = replace(reference, role=Role.PREREQUISITE)
        elif found and found[-1].commit is None and not before.strip(" ,:") and field != "Bug":
            # "…/pull/4888, commit 7af85da…": the pull request's own commit
            found[-1] = replace(found[-1], commit=text.lower())
            continue
        elif not _upstream_commit(value, field):
            continue  # "Origin: commit <id>" of a local clone (add), "made against <id>" (import): no upstream change
        else:
            role = Role.PREREQUISITE if _PREREQUISITE.search(before) else Role.BACKPORT
            reference = Reference(role, commit=text.lower(), named_in=field)
        if reference is not None:
            found.append(reference)
    return found


def _upstream_commit(value: str, field: str) -> bool:
    """Whether a bare ``commit <id>`` in ``field`` names an upstream change: in Upstream-Status (Backport,
    Accepted) or Applied-Upstream, or in an Origin that says it is upstream's (``upstream, commit …``, ``backport,
    commit …``); elsewhere the id is a commit of the author's own clone or the base a patch was made on."""
    return field in ("Upstream-Status", "Applied-Upstream") or value.lstrip().lower().startswith(
        ("upstream", "backport")
    )


def _from_url(url: str, field: str) -> Reference | None:
    url = url.rstrip(_URL_END)
    path = "/" + url.split("://", 1)[1].partition("/")[2]
    pull = _PULL.match(path)
    if pull:
        return Reference(
            Role.BACKPORT, int(pull.group(3)), repository=f"{pull.group(1)}/{pull.group(2)}", named_in=field
        )
    commit = _COMMIT_URL.match(path)
    if commit:
        repository = f"{commit.group(1)}/{commit.group(2)}"
        return Reference(Role.BACKPORT, commit=commit.group(3).lower(), repository=repository, named_in=field)
    named = _web_commit(path)
    if named is not None:
        repository, sha = named
        return Reference(Role.BACKPORT, commit=sha.lower(), repository=repository, named_in=field)
    return None  # an issue, a mailing-list post: nothing a ref's history can hold


def _web_commit(path: str) -> tuple[str, str] | None:
    """(repository, commit) of a cgit or gitweb commit page: ``/openssh.git/commit/?id=SHA``,
    ``/?p=glibc.git;a=commit;h=SHA``. The repository is its path as the web server names it."""
    cgit = _CGIT_URL.match(path)
    if cgit:
        return "/".join(part for part in (cgit.group(1), cgit.group(2)) if part), cgit.group(3)
    gitweb, commit = _GITWEB_URL.search(path), _GITWEB_COMMIT.search(path)
    action = _GITWEB_ACTION.search(path)
    if gitweb and commit and (action is None or action.group(1) in ("commit", "commitdiff", "patch")):
        return gitweb.group(1), commit.group(1)
    return None


def _merged(found: list[Reference]) -> tuple[Reference, ...]:
    """Each change once: the same number or commit named again is the first naming; one pull request and one
    commit alone in the same role are one change (``Origin: <commit URL>`` and ``Upstream-Status: Backport
    <pull request URL>``)."""
    kept: list[Reference] = []
    for reference in found:
        same = next((i for i, k in enumerate(kept) if _same(k, reference)), None)
        if same is None:
            kept.append(reference)
        elif kept[same].commit is None and reference.commit is not None:
            kept[same] = replace(kept[same], commit=reference.commit)
    for role in Role:
        pulls = [i for i, k in enumerate(kept) if k.role is role and k.number is not None]
        commits = [i for i, k in enumerate(kept) if k.role is role and k.number is None]
        if len(pulls) == 1 and len(commits) == 1 and kept[pulls[0]].commit is None:
            kept[pulls[0]] = replace(kept[pulls[0]], commit=kept[commits[0]].commit)
            del kept[commits[0]]
    return tuple(kept)


def _same(a: Reference, b: Reference) -> bool:
    if a.number is not None and a.number == b.number:
        return True
    return bool(a.commit and b.commit and (a.commit.startswith(b.commit) or b.commit.startswith(a.commit)))
