"""apply --into starts a bounded number of git processes, whatever the number of patches (issue 39, item 6).

Before, an apply ran about 12 git processes per patch (a ``hash-object -w`` per file; ``ls-files``, ``update-index``,
``checkout-index``, ``commit`` and ``maintenance run --auto`` per patch). The series' objects are now written in
one batch, the commits chained, the index and the work tree written once from the last commit, and automatic
maintenance is off in patchmgr's own repositories. Counted from git's own trace (``GIT_TRACE2``: one ``start``
line per git process, children included), on real repositories and real ``git format-patch`` series.
"""

from __future__ import annotations

from pathlib import Path

from support.gitrepos import git, make_series


def series_of(upstream, project, count: int, target: str) -> tuple[str, list[Path]]:
    """``count`` patches, each changing a file of the pin, deleting one and adding one, as target ``target``; the
    last also changes a file whose name starts with a double quote (git quotes it in the patch, and so would
    fast-import read it: before, such a series was committed one patch at a time)."""
    files = {f"src/m{n:02d}.py": f"value = {n}\n" * 5 for n in range(count * 2)}
    pin = upstream.commit({**files, '"quoted" name.txt': "odd\n"}, f"pin for {target}")
    steps = [
        (
            {
                f"src/m{2 * n:02d}.py": f"value = {2 * n}\n" * 4 + "changed\n",
                f"src/m{2 * n + 1:02d}.py": None,
                f"src/new{n:02d}.py": f"new = {n}\n",
            },
            f"Change {n}",
        )
        for n in range(count)
    ]
    steps[-1][0]['"quoted" name.txt'] = "odd, changed\n"
    ids, paths = [], []
    for number, mail in enumerate(make_series(upstream, pin, steps)):
        ids.append(f"{target}-p{number:02d}")
        paths.append(project.add_patch("lib", ids[-1], mail))
    project.manifest(target, {"lib": {"git": "https://example.invalid/lib.git", "commit": pin, "patches": ids}})
    return pin, paths


def git_processes(trace: Path) -> list[str]:
    """Each git process the trace saw start: its command line (``GIT_TRACE2``'s normal format, one ``start`` event
    per process)."""
    return [line.split(" start ", 1)[1] for line in trace.read_text().splitlines() if " start " in line]


def test_apply_starts_as_many_git_processes_for_12_patches_as_for_2(cli, upstream, project, tmp_path, monkeypatch):
    counts = {}
    for count in (2, 12):
        target = f"t{count}"
        pin, patches = series_of(upstream, project, count, target)
        trace = tmp_path / f"{target}.trace"
        monkeypatch.setenv("GIT_TRACE2", str(trace))
        into = tmp_path / f"build-{count}"
        result = cli("apply", "--target", target, "--into", str(into), "--source", f"lib={upstream.path}")
        monkeypatch.delenv("GIT_TRACE2")
        assert result.code == 0, result.out + result.err
        assert cli("verify", "--target", target, "--into", str(into)).code == 0
        counts[count] = git_processes(trace)
        # the tree git am makes of the same patches on a clone at the pin
        clone = tmp_path / f"am-{count}"
        git(tmp_path, "clone", "-q", "--no-checkout", str(upstream.path), str(clone))
        git(clone, "checkout", "-q", "--detach", pin)
        git(clone, "-c", "user.name=t", "-c", "user.email=t@t.invalid", "am", "-q", *map(str, patches))
        assert git(into / "lib", "rev-parse", "HEAD^{tree}") == git(clone, "rev-parse", "HEAD^{tree}")
        assert git(into / "lib", "status", "--porcelain") == ""
    # ten more patches cost no more git processes (a per-patch cost would show 10 or more)
    assert len(counts[12]) - len(counts[2]) <= 2, (len(counts[2]), len(counts[12]), counts[12])
    assert "maintenance" not in " ".join(counts[12]), counts[12]
