"""bisect of a whole series (issue 39, item 5): the patches share one walk and one patch-id pass, and each patch's
answer is printed on stderr as soon as it is found, with how far the run is (plain text off a terminal), before the
table at the end. git is the oracle: the first commit of the first-parent line where ``git apply --check`` of the
patch fails."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from support.commands import move_args
from support.gitrepos import git
from support.scenes import lines_with, setup

PATCHES = 4


def first_failing_commit(repo: Path, base: str, to: str, patch: Path, index: Path) -> str | None:
    """git's answer: the first commit after ``base`` on ``to``'s first-parent line where the patch no longer applies
    (``git apply --check --cached`` against that commit's tree, read into a scratch index)."""
    env = {**os.environ, "GIT_INDEX_FILE": str(index)}
    for commit in git(repo, "rev-list", "--first-parent", "--reverse", f"{base}..{to}").split():
        subprocess.run(["git", "-C", str(repo), "read-tree", commit], env=env, check=True)
        checked = subprocess.run(
            ["git", "-C", str(repo), "apply", "--check", "--cached", str(patch)], env=env, capture_output=True
        )
        if checked.returncode != 0:
            return commit
    return None


def test_each_patch_answer_is_printed_as_it_is_found(cli, project, upstream, tmp_path):
    pin = upstream.head()
    lines = [10 + 6 * n for n in range(PATCHES)]
    patches = {
        f"fix{n}": upstream.make_patch(pin, {"src/mod.py": lines_with({line: f"fixed {line}"})}, f"Fix {line}")
        for n, line in enumerate(lines)
    }
    setup(project, upstream, patches)
    for line in reversed(lines):  # upstream rewrites each patch's line, the last patch's first
        upstream.commit({"README": f"docs {line}\n"}, f"docs {line}")
        current = upstream.read("src/mod.py").splitlines(keepends=True)
        current[line - 1] = f"rewritten {line}\n"
        upstream.commit({"src/mod.py": "".join(current)}, f"rewrite line {line}")
    result = cli(*move_args("bisect", upstream))
    assert result.code == 1, result.out + result.err
    answers = [line for line in result.err.splitlines() if line.startswith("[")]
    assert len(answers) == PATCHES, result.err
    for done, (patch_id, answer) in enumerate(zip(patches, answers, strict=True), 1):
        oracle = first_failing_commit(
            upstream.path, pin, "main", project.root / "patches" / "lib" / f"{patch_id}.patch", tmp_path / "index"
        )
        assert oracle is not None
        assert answer.startswith(f"[{done}/{PATCHES}] {patch_id}: conflict from {oracle[:12]} "), (answer, oracle)
    assert "\x1b[" not in result.err  # plain text off a terminal
