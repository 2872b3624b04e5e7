"""A target of two upstreams for ``export --format series``: real git upstreams, real format-patch series."""

from __future__ import annotations

from pathlib import Path

from support.gitrepos import Project, UpstreamRepo, make_series
from support.monolith import URL, text_with, three_file_upstream

SCRIPT = "#!/bin/sh\necho run\n"


def two_upstreams(tmp_path: Path, project: Project) -> tuple[UpstreamRepo, UpstreamRepo]:
    """Target t: lib with three patches (a file changed twice, a file deleted, a new file) and
    other with one, each pinned at the commit its series was made on."""
    lib = three_file_upstream(tmp_path, "lib")
    other = three_file_upstream(tmp_path, "other")
    steps = [
        ({"src/a.py": text_with({5: "a fix"}), "src/c.py": None}, "Fix a, drop c"),
        ({"src/a.py": text_with({5: "a fix", 30: "a second fix"}), "bin/run.sh": SCRIPT}, "Fix a again"),
        ({"src/b.py": text_with({12: "b fix"})}, "Fix b"),
    ]
    upstreams = {}
    for repo, series, ids in ((lib, steps, ["drop-c", "fix-a-again", "fix-b"]), (other, steps[2:], ["fix-b"])):
        pin = repo.head()
        for patch_id, mail in zip(ids, make_series(repo, pin, series), strict=True):
            project.add_patch(repo.path.name, patch_id, mail)
        upstreams[repo.path.name] = {"git": URL.format(repo.path.name), "commit": pin, "patches": ids}
    project.manifest("t", upstreams)
    return lib, other


def sources(*repos: UpstreamRepo) -> list[str]:
    return [w for repo in repos for w in ("--source", f"{repo.path.name}={repo.path}")]
