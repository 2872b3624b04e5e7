"""git's own answer to "which release is the newest since the pin", for the tests of ``history.releases``: the
final release tags matching a pattern that descend from where the pin's line leaves the main line (``git tag
--contains`` the merge base) and that the pin does not contain (``git tag --merged``), the last in git's version
sort (``--sort=version:refname``, with ``versionsort.suffix`` for release candidates)."""

from __future__ import annotations

import re
from pathlib import Path

from support.gitrepos import git

# a final release as Megatron-LM (core_v0.19.0), MindSpeed (v2.1.0_core_r0.12.1) and openssh (V_10_0_P1) tag one:
# no rc, alpha, beta, PRE or TEST
FINAL = re.compile(r"^(core_v|v|V_)?\d+([._]\d+)+(_P\d+)?(_core_r\d+(\.\d+)+)?$")


def git_newest(
    repo: Path, pin: str, pattern: str, main: str = "main", suffixes: tuple[str, ...] = ("rc",)
) -> str | None:
    base = git(repo, "merge-base", pin, main)
    later = set(git(repo, "tag", "--contains", base, "-l", pattern).split())
    later -= set(git(repo, "tag", "--merged", pin, "-l", pattern).split())
    finals = [t for t in later if FINAL.match(t)]
    if not finals:
        return None
    config = [arg for suffix in suffixes for arg in ("-c", f"versionsort.suffix={suffix}")]
    return git(repo, *config, "tag", "-l", "--sort=version:refname", *finals).split()[-1]
