"""Where an upstream's files come from at a ref: a cached git clone (or, later, a release).

A ``Source`` is a ``TreeReader`` plus the facts a report needs: which commit,
and a description of where the bytes came from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from patchmgr.errors import SourceError, UsageError
from patchmgr.gitio import GitRepo
from patchmgr.manifest import Upstream, url_problem
from patchmgr.store import Store


@dataclass
class GitSource:
    repo: GitRepo
    commit: str
    location: str

    kind = "git"

    def read(self, path: str) -> bytes | None:
        return self.repo.read_path(self.commit, path)

    def read_blob(self, sha: str) -> bytes | None:
        return self.repo.read_blob(sha)

    @property
    def description(self) -> str:
        return f"git {self.location}"


def parse_source_overrides(values: list[str] | None) -> dict[str, str]:
    """``--source NAME=LOCATION`` options as a mapping; a malformed one is a usage error."""
    overrides: dict[str, str] = {}
    for value in values or []:
        name, sep, location = value.partition("=")
        if not sep or not name or not location:
            raise UsageError(f"--source {value!r} is not NAME=LOCATION",
                             "for example --source mindspeed=/srv/mirrors/MindSpeed")
        problem = url_problem(location, from_command_line=True)
        if problem:
            raise UsageError(f"--source {value!r}: {problem}", "give a URL or a local path")
        overrides[name] = location
    return overrides


def parse_against(values: list[str] | None) -> dict[str, str]:
    refs: dict[str, str] = {}
    for value in values or []:
        name, sep, ref = value.partition("=")
        if not sep or not name or not ref:
            raise UsageError(f"--against {value!r} is not NAME=REF", "for example --against mbridge=main")
        refs[name] = ref
    return refs


def urls_for(upstream: Upstream, overrides: Mapping[str, str]) -> tuple[str, ...]:
    if upstream.name in overrides:
        return (overrides[upstream.name],)
    return upstream.urls


def open_git_source(store: Store, upstream: Upstream, ref: str | None,
                    overrides: Mapping[str, str]) -> GitSource:
    """The upstream at ``ref`` (its pin when None) from the cache, fetched if need be."""
    urls = urls_for(upstream, overrides)
    if not urls:
        raise SourceError(f"{upstream.name} has no git URL", f"pass --source {upstream.name}=PATH_OR_URL")
    if ref is None:
        repo = store.ensure_commit(upstream.name, upstream.commit, urls)
        return GitSource(repo, upstream.commit, urls[0])
    repo, commit = store.resolve_ref(upstream.name, ref, urls)
    return GitSource(repo, commit, urls[0])
