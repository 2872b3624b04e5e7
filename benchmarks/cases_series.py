"""Case: ``status`` of a series of real upstream commits against the ref they reach, beside ``git cherry``.

The series is 300 consecutive first-parent commits of a real upstream (``--series-repo`` or
$PATCHMGR_BENCH_SERIES_REPO: a git repository such as a clone of openssh-portable), made with ``git
format-patch`` and pinned at the commit before them: at the 300th commit every patch is carried by its own
commit, most of them with lines changed since. ``patchmgr status --against <the 300th>`` (warm cache) is timed
beside ``git cherry <the 300th> <series branch>`` over the same range, where the series branch holds the same
300 changes as new commits (the trees ``git am`` of the patches makes, committed with ``git commit-tree``), in
interleaved rounds of one run. The goal: at most 3x ``git cherry``. The newest window of 300 commits that
patchmgr reads is taken: no merge, no binary file, no mode but 100644 created (patchmgr refuses those).
"""

from __future__ import annotations

import os
import statistics
from pathlib import Path

from fixtures import Bench, Row, git, patchmgr, spawn

SERIES_REPO_ENV = "PATCHMGR_BENCH_SERIES_REPO"
LENGTH = 300
GOAL = 3.0  # status at most this many times git cherry over the same range
SERIES_AUTHOR = {  # who commits the series branch (the machine may have no git identity)
    "GIT_AUTHOR_NAME": "Bench Dev",
    "GIT_AUTHOR_EMAIL": "dev@bench.example",
    "GIT_COMMITTER_NAME": "Bench Dev",
    "GIT_COMMITTER_EMAIL": "dev@bench.example",
}


def series_repo(option: Path | None) -> Path | None:
    """The upstream repository the series comes from: the option, else $PATCHMGR_BENCH_SERIES_REPO."""
    chosen = option or (Path(os.environ[SERIES_REPO_ENV]) if os.environ.get(SERIES_REPO_ENV) else None)
    return chosen.expanduser() if chosen else None


def readable_window(clone: Path, length: int) -> tuple[str, str] | None:
    """(pin, ref): the newest ``length`` consecutive first-parent commits whose patches patchmgr reads."""
    log = git("log", "--first-parent", "--raw", "--numstat", "--no-renames", "--format=%x01%H %P", "HEAD", cwd=clone)
    run: list[str] = []
    for record in log.split("\x01")[1:]:
        head, *lines = record.split("\n")
        sha, *parents = head.split()
        plain = len(parents) == 1 and not any(_unreadable(line) for line in lines)
        run = [*run, sha] if plain else []
        if len(run) == length:
            return git("rev-parse", f"{run[-1]}^", cwd=clone), run[0]
    return None


def _unreadable(line: str) -> bool:
    """A ``--raw`` line that creates or changes a mode other than a plain file's, or a ``--numstat`` binary one."""
    if line.startswith(":"):
        old, new = line[1:].split()[:2]
        return new not in ("100644", "000000") or old not in ("100644", "000000")
    return line.startswith("-\t-\t")


def prepare_series(bench: Bench, repo: Path) -> tuple[Path, Path, str, str] | None:
    """The clone, the project (its patches p001..p300), the pin and the ref; built once under the cache."""
    work = bench.cache / f"series-{LENGTH}"
    clone, project = work / "upstream", work / "project"
    if not (clone / ".git").is_dir():
        work.mkdir(parents=True, exist_ok=True)
        git("clone", "-q", "--shared", "--no-checkout", str(repo), str(clone))
    window = readable_window(clone, LENGTH)
    if window is None:
        return None
    pin, ref = window
    marker = project / "window"
    if not marker.is_file() or marker.read_text() != f"{pin} {ref}\n":
        folder = project / "patches" / "up"
        if folder.is_dir():
            for old in folder.iterdir():
                old.unlink()
        folder.mkdir(parents=True, exist_ok=True)
        (project / "manifests").mkdir(exist_ok=True)
        git("format-patch", "-q", "--zero-commit", "-o", str(folder), f"{pin}..{ref}", cwd=clone)
        ids = []
        for number, mail in enumerate(sorted(folder.iterdir()), 1):
            ids.append(f"p{number:03d}")
            mail.rename(folder / f"{ids[-1]}.patch")
        listed = ", ".join(f'"{i}"' for i in ids)
        (project / "manifests" / "series.toml").write_text(
            '[target]\nname = "series"\ndescription = "300 real upstream commits as a series"\n'
            f'[upstreams.up]\ngit = "https://example.invalid/up.git"\ncommit = "{pin}"\npatches = [{listed}]\n'
        )
        # the series as git am would commit it: the same trees, new commits on top of the pin
        tip = pin
        for commit in git("rev-list", "--reverse", f"{pin}..{ref}", cwd=clone).split():
            tip = git(
                "commit-tree", "-p", tip, "-m", f"series: {commit}", f"{commit}^{{tree}}", cwd=clone, env=SERIES_AUTHOR
            )
        git("branch", "-f", "series", tip, cwd=clone)
        marker.write_text(f"{pin} {ref}\n")
    return clone, project, pin, ref


def measure_series(bench: Bench, option: Path | None) -> None:
    case = f"status, {LENGTH} real commits as a series"
    repo = series_repo(option)
    if repo is None or not (repo / "HEAD").exists() and not (repo / ".git").exists():
        note = f"skipped: no upstream repository (pass --series-repo or set {SERIES_REPO_ENV})"
        bench.add(Row(case, "patchmgr status --against the 300th commit", None, note=note))
        bench.notes.append(f"{case}: {note}")
        return
    prepared = prepare_series(bench, repo)
    if prepared is None:
        bench.add(Row(case, "patchmgr status", None, note=f"skipped: no {LENGTH} readable consecutive commits"))
        return
    clone, project, pin, ref = prepared
    args = ["status", "--target", "series", "--source", f"up={clone}", "--against", f"up={ref}", "--json"]
    code, out, _wall, _rss = patchmgr(bench, *args, root=project)  # warms the cache
    if code not in (0, 1):
        bench.add(Row(case, "patchmgr status", None, note=f"failed (exit {code}): {out.strip().splitlines()[-1:]}"))
        return
    ours, theirs, peak, cherry_peak = [], [], 0.0, 0.0
    for _ in range(bench.cfg["runs"]):  # interleaved: the machine's load falls on both alike
        code, out, wall, rss = patchmgr(bench, *args, root=project)
        ours.append(wall)
        peak = max(peak, rss)
        done, said, wall, rss = spawn(["git", "-C", str(clone), "cherry", ref, "series"])
        theirs.append(wall)
        cherry_peak = max(cherry_peak, rss)
    mine, cherry = statistics.median(ours), statistics.median(theirs)
    carried = out.count('"carrier": "')
    window = f"{pin[:12]}..{ref[:12]} of {repo.name if repo.name != 'repo' else repo.parent.name}"
    bench.add(
        Row(
            case,
            "patchmgr status --against the 300th commit (warm)",
            mine,
            LENGTH,
            peak,
            f"median of {len(ours)} (min {min(ours):.3f} s), exit {code}; {carried} carried; {window}",
        )
    )
    bench.add(
        Row(
            case,
            "git cherry <300th> <series branch>",
            cherry,
            LENGTH,
            cherry_peak,
            f"median of {len(theirs)} (min {min(theirs):.3f} s), exit {done}; "
            f"{said.count(chr(10))} commits compared; {mine / cherry:.1f}x is patchmgr's",
        )
    )
    bench.goals.append(
        (
            f"status of {LENGTH} real commits as a series <= {GOAL:g}x git cherry over the same range",
            f"{mine / cherry:.1f}x ({mine:.2f} s vs {cherry:.2f} s)",
            mine <= GOAL * cherry,
        )
    )
