"""The patch-id evidence in one pass (issue 39, item 4): which commits carry a series' patches is read from one
``git log -p`` over the range and one ``git patch-id`` for all of them, as ``git cherry`` reads its range once
(``carriers.with_patch_ids``), for ``status --against`` and for all the columns of ``matrix`` at once. Before, the
matrix ran a patch-id log per patch (now ``carriers.carrier_candidates``); each verdict is still the one
``status --against`` gives that column, and git's own ``git cherry`` agrees on which patches are carried. git's
trace counts the logs."""

from __future__ import annotations

from pathlib import Path

from support.gitrepos import git, make_series

PATCHES = 6


def patch_logs(trace: Path) -> int:
    """How many ``git log -p`` processes ran (the patch-id passes)."""
    if not trace.is_file():
        return 0
    return sum(1 for line in trace.read_text().splitlines() if "built-in: git log " in line and " -p " in line)


def carried_series(upstream, project) -> tuple[str, list[str]]:
    """``PATCHES`` patches, one file each; upstream then makes each change in a commit of its own (the same
    patch-id), tagging v1.1.0 after the first half and v1.2.0 after the rest. Returns the pin and the series
    branch (the patches as commits on the pin, for ``git cherry``)."""
    body = "".join(f"line {n}\n" for n in range(1, 13))
    pin = upstream.commit({f"src/m{n}.py": body for n in range(PATCHES)}, "files")
    steps = [({f"src/m{n}.py": body.replace("line 6\n", f"six {n}\n")}, f"Fix m{n}") for n in range(PATCHES)]
    ids = []
    for number, mail in enumerate(make_series(upstream, pin, steps)):
        ids.append(f"p{number}")
        project.add_patch("lib", ids[-1], mail)
    project.manifest("t", {"lib": {"git": "https://example.invalid/lib.git", "commit": pin, "patches": ids}})
    git(upstream.path, "checkout", "-q", "-b", "series", pin)
    for files, subject in steps:
        upstream.commit(files, subject)
    git(upstream.path, "checkout", "-q", "-")
    git(upstream.path, "reset", "-q", "--hard", pin)
    for number, (files, _subject) in enumerate(steps):
        upstream.commit({"NEWS": f"release notes {number}\n"}, f"News {number}")
        upstream.commit(files, f"Upstream fixes m{number}")
        if number + 1 in (PATCHES // 2, PATCHES):
            git(upstream.path, "tag", f"v1.{1 if number + 1 == PATCHES // 2 else 2}.0")
    return pin, ids


def test_the_matrix_reads_every_patch_id_in_one_pass(cli, upstream, project, tmp_path, monkeypatch):
    carried_series(upstream, project)
    trace = tmp_path / "matrix.trace"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    result = cli("matrix", "--target", "t", "--refs", "v1.*", "--json", "--source", f"lib={upstream.path}")
    assert result.code in (0, 1), result.out + result.err
    # one for every column's candidates, then one per column that explain_upstream searches; before, one per patch
    # besides (PATCHES + 2 here)
    assert patch_logs(trace) <= 3, trace.read_text()
    monkeypatch.delenv("GIT_TRACE")
    (doc,) = result.json["upstreams"]
    columns = [c["name"] for c in doc["columns"]]
    for tag in ("v1.1.0", "v1.2.0"):
        # git cherry: "-" for each commit of the series whose change the tag already has
        cherry = git(upstream.path, "cherry", tag, "series").splitlines()
        carried_by_git = [line.startswith("-") for line in cherry]
        at = columns.index(tag)
        cells = [row["cells"][at] for row in doc["patches"]]
        assert [cell["state"] == "upstream" for cell in cells] == carried_by_git, (tag, cells, cherry)
        against = cli(
            "status", "--target", "t", "--json", "--source", f"lib={upstream.path}", "--against", f"lib={tag}"
        )
        states = [p["state"] for p in against.json["upstreams"][0]["patches"]]
        assert [cell["state"] for cell in cells] == states, (tag, cells, states)
