"""A shallow clone as a source: refused at once with one error and a hint, and no command runs more than a handful
of git processes (``sources/origin.py`` ``require_whole_history``, ``io/children.py`` ``TREE_LIMITS``). Before,
patchmgr's partial cache fetched from it, and git's lookup of the shallow commit in the answer was a lazy fetch from
the same source, which looked it up again: thousands of ``git fetch`` and ``upload-pack`` within a minute, until the
machine choked. Real repositories, a real ``git clone --depth 1``, the real CLI in a process of its own, watched
and killed at once if its git processes pass a bound."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from support.gitrepos import UpstreamRepo, plain_git
from support.processes import watched

from patchmgr.io import children

ROOT = Path(__file__).resolve().parent.parent
HANDFUL = 4  # git processes at once: a fetch over a local path is fetch and upload-pack, then index-pack
# past this many at once the watch kills the command, which would go on without end: some 300 a second before
RUNAWAY = 100


def fix(upstream: UpstreamRepo, base: str) -> bytes:
    return upstream.make_patch(base, {"lib/calc.py": "x = 2\n"}, "Fix x")


@pytest.fixture
def history(tmp_path, project) -> tuple[UpstreamRepo, list[str]]:
    """An upstream of four commits, ``lib/calc.py`` changed by none after the first, and a project whose target
    ``t`` pins the second with one patch."""
    upstream = UpstreamRepo(tmp_path / "full")
    commits = [upstream.commit({"lib/calc.py": "x = 1\n", "README": f"{n}\n"}, f"release {n}") for n in range(4)]
    project.add_patch("lib", "fix", fix(upstream, commits[1]))
    pin(project, commits[1])
    return upstream, commits


def pin(project, commit: str) -> None:
    project.manifest("t", {"lib": {"git": "https://example.invalid/lib.git", "commit": commit, "patches": ["fix"]}})


def shallow_clone(full: Path, where: Path) -> Path:
    done = plain_git(full.parent, "clone", "-q", "--depth", "1", f"file://{full}", str(where))
    assert done.returncode == 0, done.stderr
    return where


def patchmgr(project, *args: str, source: Path, most_git: int = RUNAWAY):
    command = [sys.executable, "-m", "patchmgr", *args, "--target", "t", "--root", str(project.root)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return watched([*command, "--source", f"lib={source}"], most_git=most_git, seconds=60, env=env)


def test_a_shallow_clone_given_as_a_source_is_refused_at_once(history, tmp_path, project):
    upstream, commits = history
    shallow = shallow_clone(upstream.path, tmp_path / "shallow")
    for args in (("status",), ("apply", "--into", str(tmp_path / "build"))):
        done = patchmgr(project, *args, source=shallow)
        assert done.stopped == "", f"{' '.join(args)} was stopped from outside: {done.stopped}"
        assert done.code == 1, done.out + done.err
        said = done.out + done.err
        assert f"{shallow} is a shallow clone: its history is cut off" in said, said
        assert f"hint: make it whole with `git -C {shallow} fetch --unshallow`, or give a full clone" in said, said
        assert "Traceback" not in said
        assert done.most_git <= HANDFUL, f"{' '.join(args)} ran {done.most_git} git processes at once"
    assert not (tmp_path / "build").exists()


def test_a_source_made_shallow_since_the_cache_was_filled_is_bounded(history, tmp_path, project):
    """The cache's clone fetched the pin from a full clone; the clone at that path was made again with --depth 1 (a
    CI checkout's default). Asked for the new pin, the cache's object reader fetches it lazily from there: the same
    loop, in git cat-file, where no refusal comes first. Its tree is bounded, and the source is named unusable."""
    upstream, commits = history
    source = tmp_path / "source"
    plain_git(tmp_path, "clone", "-q", str(upstream.path), str(source))
    first = patchmgr(project, "status", source=source)
    assert first.code == 0, first.out + first.err
    os.rename(source, tmp_path / "full-before")
    shallow_clone(upstream.path, source)  # its one commit is the upstream's newest
    pin(project, commits[3])
    done = patchmgr(project, "status", source=source)
    assert done.stopped == "", f"status was stopped from outside: {done.stopped}"
    assert done.code == 1, done.out + done.err
    assert "git cat-file was stopped: it had started" in done.out, done.out + done.err
    assert "hint: give a source with its whole history (in a shallow clone: git fetch --unshallow)" in done.out
    # ended once past TREE_LIMITS["git"] (12): how far past depends on how soon the watching thread runs again, a few
    # processes on a quiet machine (9 to 12 git at most, measured), more where a hundred others are runnable; the
    # watch above stops the command past RUNAWAY at once, which the old loop passed within a second
    assert done.most_git > children.TREE_LIMITS["git"] // 4, "the loop did not start: the test proves nothing"
