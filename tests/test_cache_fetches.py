"""The cache keeps its packs few (issue 39, item 3).

The cache is a partial clone (``--filter=blob:none``) of a local source that allows filters: every blob read that
it lacks is a lazy fetch of its own, and each fetch leaves a pack that every later git process opens (at 1,400 packs
a lazy fetch took six times as long). A run that leaves more than ``PACK_LIMIT`` packs repacks the clone on its way
out, under the cache's lock (``cache_packs.keep_packs_few``). git's own trace counts the fetches."""

from __future__ import annotations

from pathlib import Path

from support.gitrepos import git, make_series

FILES = 10


def fetches(trace: Path) -> int:
    """How many git processes ran ``git fetch`` (a lazy fetch is one too: git starts ``git fetch`` for it)."""
    if not trace.is_file():
        return 0
    return sum(1 for line in trace.read_text().splitlines() if "built-in: git fetch " in line)


def fixed(body: str) -> str:
    """The patch's change: two lines far enough apart to be one hunk with context between them."""
    return body.replace("line 5\n", "five\n").replace("line 11\n", "eleven\n")


def merging_series(upstream, project) -> tuple[str, str]:
    """A pin with ``FILES`` files, one patch per file, and a ref where upstream changed each file between the
    patch's lines: the patch no longer applies as it is, and a 3-way merge with its preimage resolves it."""
    body = "".join(f"line {n}\n" for n in range(1, 17))
    pin = upstream.commit({f"src/m{n:02d}.py": body for n in range(FILES)}, "many files")
    steps = [({f"src/m{n:02d}.py": fixed(body)}, f"Fix six in m{n:02d}") for n in range(FILES)]
    ids = []
    for number, mail in enumerate(make_series(upstream, pin, steps)):
        ids.append(f"p{number}")
        project.add_patch("lib", ids[-1], mail)
    project.manifest("t", {"lib": {"git": "https://example.invalid/lib.git", "commit": pin, "patches": ids}})
    git(upstream.path, "reset", "-q", "--hard", pin)
    ref = upstream.commit({f"src/m{n:02d}.py": body.replace("line 8\n", "eight\n") for n in range(FILES)}, "Five")
    return pin, ref


def test_a_run_that_leaves_many_packs_repacks_the_cached_clone(cli, upstream, project, tmp_path, monkeypatch):
    """Each lazy fetch of a partial clone leaves a pack; past ``PACK_LIMIT`` the next run makes them one, and the
    clone still reads every blob it had without a fetch, and still fetches what it lacks."""
    from patchmgr.sources.cache_packs import PACK_LIMIT

    pin, ref = merging_series(upstream, project)
    extra = PACK_LIMIT + 8
    git(upstream.path, "checkout", "-q", "-b", "more", pin)
    other = upstream.commit({f"doc/d{n:02d}.txt": f"doc {n}\n" for n in range(extra + 1)}, "docs")
    git(upstream.path, "checkout", "-q", "-")
    args = ["status", "--target", "t", "--json", "--source", f"lib={upstream.path}"]
    assert cli(*args, "--against", f"lib={other}").code in (0, 1)
    clone = tmp_path / "cache" / "git" / "lib.git"
    blobs = git(clone, "ls-tree", "-r", "--format=%(objectname)", other, "doc").split()
    for blob in blobs[:extra]:  # read one by one, as a reader of the clone would: a lazy fetch and a pack each
        git(clone, "cat-file", "blob", blob)
    before = len(list((clone / "objects" / "pack").glob("*.pack")))
    assert before > PACK_LIMIT
    result = cli(*args, "--against", f"lib={ref}")
    assert result.code in (0, 1), result.out + result.err
    after = len(list((clone / "objects" / "pack").glob("*.pack")))
    assert after <= 2, (before, after)  # before the change: every pack stayed (before + the run's own)
    trace = tmp_path / "read.trace"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    assert [git(clone, "cat-file", "blob", blob) for blob in blobs[:extra]] == [f"doc {n}" for n in range(extra)]
    assert fetches(trace) == 0, trace.read_text()
    assert git(clone, "cat-file", "blob", blobs[extra]) == f"doc {extra}"  # still a partial clone of its source
    assert fetches(trace) == 1, trace.read_text()
