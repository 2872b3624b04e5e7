"""Evidence at real sizes (issue 39, items 3 to 5), on the 300 real Megatron-LM commits of ``cases_real`` (the series
pinned at the commit before them, ``real_series.megatron_series``), each beside git in one run:

- ``status --against`` the series' last commit (warm), where every patch is carried by its own commit, beside
  ``git cherry <that commit> <series branch>`` (the series branch: the same 300 trees committed anew on the pin, as
  ``git am`` would); the goal is at most 3x ``git cherry``;
- a cold ``status`` at the pin: how many git fetches it makes and how many packs it leaves in the cache (git's
  trace counts them), for a cache that a run leaves with more than ``PACK_LIMIT`` packs, too (repacked);
- ``bisect --to`` the series' last commit of the whole series: seconds per patch, and when the first answer came
  (the first ``[1/N]`` line on stderr); the goal is at most 1 s per patch and the first answer within seconds.

Alone: ``python benchmarks/run.py --only evidence --mirrors DIR`` (the mirror as ``DIR/NVIDIA+Megatron-LM/repo``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from cases_real import Sample, checked, cold_env, git_env, rounds_of, run_patchmgr, run_steps, skip
from fixtures import Bench, Row, git
from real_series import RealSeries, megatron_series

CHERRY_GOAL = 3.0  # status --against at most this many times git cherry
BISECT_GOAL = 1.0  # seconds per patch
FIRST_ANSWER_GOAL = 10.0  # seconds to the first patch's answer
SERIES_AUTHOR = {
    "GIT_AUTHOR_NAME": "Bench Dev",
    "GIT_AUTHOR_EMAIL": "dev@bench.example",
    "GIT_COMMITTER_NAME": "Bench Dev",
    "GIT_COMMITTER_EMAIL": "dev@bench.example",
}


def measure_evidence(bench: Bench, mirrors: Path) -> None:
    series = megatron_series(bench, mirrors, bench.cfg["real_patches"])
    if isinstance(series, str):
        skip(bench, "evidence", series)
        return
    bench.notes.append(series.note)
    end = last_commit(series, bench.cfg["real_patches"])
    against_cherry(bench, series, end)
    cold_fetches(bench, series, end)
    whole_bisect(bench, series, end)


def last_commit(series: RealSeries, commits: int) -> str:
    """The upstream commit of the series' last patch: the pin's first-parent descendant ``commits`` commits on (a
    commit that changed only binary files made no patch, so the patches can be fewer)."""
    line = git("rev-list", "--first-parent", "--reverse", f"{series.pin}..HEAD", cwd=series.repo).split()
    return line[commits - 1]


def series_branch(series: RealSeries, end: str) -> str:
    """The series as new commits on the pin (the trees of pin..end, committed anew), for ``git cherry``."""
    tip = series.pin
    for commit in git("rev-list", "--first-parent", "--reverse", f"{series.pin}..{end}", cwd=series.repo).split():
        tip = git(
            "commit-tree",
            "-p",
            tip,
            "-m",
            f"series: {commit}",
            f"{commit}^{{tree}}",
            cwd=series.repo,
            env=SERIES_AUTHOR,
        )
    git("update-ref", "refs/heads/bench-series", tip, cwd=series.repo)
    return "bench-series"


def against_cherry(bench: Bench, series: RealSeries, end: str) -> None:
    case = "evidence: status --against"
    cache = bench.cache / "real" / "patchmgr-cache-evidence"
    branch = series_branch(series, end)
    args = ["status", "--target", "megatron", *series.source(), "--against", f"megatron={end}", "--json"]
    warm = cold_env(bench, cache)
    run_patchmgr(bench, Sample(), args, series.project, warm, (0, 1))  # fills the cache
    ours, cherry = Sample(), Sample()
    out = ""
    for _ in range(rounds_of(bench)):
        out = run_patchmgr(bench, ours, args, series.project, warm, (0, 1))
        run_steps(cherry, [["git", "-C", str(series.repo), "cherry", end, branch]])
    carried = out.count('"carrier": "')
    n = len(series.ids)
    bench.add(
        ours.row(
            case, f"patchmgr status --against the series' last commit (warm, {n} patches)", n, f"{carried} carried"
        )
    )
    bench.add(
        cherry.row(case, "git cherry <that commit> <the series as new commits>", n, "one patch-id pass each side")
    )
    ratio = ours.wall / cherry.wall
    said = f"{ratio:.1f}x ({ours.wall:.2f} s vs {cherry.wall:.2f} s, same run; CPU {ours.cpu / cherry.cpu:.1f}x)"
    print(f"  {'met' if ratio <= CHERRY_GOAL else 'NOT met'}: status --against vs git cherry: {said}", flush=True)
    bench.goals.append(
        (f"status --against of {n} real Megatron-LM commits <= {CHERRY_GOAL:g}x git cherry", said, ratio <= CHERRY_GOAL)
    )


def cold_fetches(bench: Bench, series: RealSeries, end: str) -> None:
    """A cold status's fetches and the packs it leaves; then a cache given more than PACK_LIMIT packs by lazy
    fetches of single blobs (as a reader of the clone makes them), and the packs the next run leaves."""
    from patchmgr.sources.cache_packs import PACK_LIMIT

    case = "evidence: cold status fetches"
    cache = bench.cache / "real" / "patchmgr-cache-fetches"
    trace = bench.cache / "real" / "cold-status.trace"
    trace.unlink(missing_ok=True)
    env = {**cold_env(bench, cache), "GIT_TRACE": str(trace)}
    sample = Sample()
    run_patchmgr(bench, sample, ["status", "--target", "megatron", *series.source()], series.project, env)
    fetches = sum(1 for line in trace.read_text().splitlines() if "built-in: git fetch " in line)
    clone = cache / "git" / "megatron.git"
    packs = len(list((clone / "objects" / "pack").glob("*.pack")))
    n = len(series.ids)
    bench.add(sample.row(case, f"patchmgr status, cold cache ({n} patches)", n, f"{fetches} fetches, {packs} packs"))
    # blobs of the pin the series does not touch, read one by one: a lazy fetch and a pack each
    touched = {p for path in series.patch_files for p in touched_paths(path)}
    listing = git("ls-tree", "-r", "--format=%(objectname) %(path)", series.pin, cwd=clone).splitlines()
    others = [line.split(" ", 1)[0] for line in listing if line.split(" ", 1)[1] not in touched][: PACK_LIMIT + 8]
    for blob in others:
        subprocess.run(["git", "-C", str(clone), "cat-file", "blob", blob], capture_output=True, env=git_env())
    before = len(list((clone / "objects" / "pack").glob("*.pack")))
    again = Sample()
    # a check one commit past the pin: any run that opens the clone repacks it on its way out
    after_pin = git("rev-list", "--first-parent", "--reverse", f"{series.pin}..{end}", cwd=series.repo).split()[0]
    args = ["status", "--target", "megatron", *series.source(), "--against", f"megatron={after_pin}"]
    run_patchmgr(bench, again, args, series.project, {**env, "GIT_TRACE": os.devnull}, (0, 1))
    after = len(list((clone / "objects" / "pack").glob("*.pack")))
    bench.add(
        again.row(case, f"the next run, on a cache of {before} packs", n, f"{after} packs after (limit {PACK_LIMIT})")
    )
    bench.goals.append(
        (f"cold status of {n} patches fetches in batches, not one fetch per blob", f"{fetches} fetches", fetches <= 5)
    )
    bench.goals.append(
        (f"the cache keeps its packs few (<= {PACK_LIMIT})", f"{before} packs, then {after}", after <= PACK_LIMIT)
    )


def touched_paths(patch: Path) -> list[str]:
    return [line[6:].strip() for line in patch.read_text(errors="replace").splitlines() if line.startswith("+++ b/")]


def whole_bisect(bench: Bench, series: RealSeries, end: str) -> None:
    case = "evidence: bisect, whole series"
    cache = bench.cache / "real" / "patchmgr-cache-evidence"
    env = bench.env({"PATCHMGR_CACHE": str(cache)})
    args = [sys.executable, "-m", "patchmgr", "bisect", "--target", "megatron", "--upstream", "megatron"]
    args += [*series.source(), "--to", end, "--root", str(series.project)]
    commits = len(git("rev-list", "--first-parent", f"{series.pin}..{end}", cwd=series.repo).split())
    started = time.perf_counter()
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    first, answers = None, 0
    assert process.stderr is not None
    for line in process.stderr:
        if line.startswith("["):
            answers += 1
            first = first if first is not None else time.perf_counter() - started
    process.communicate()
    wall = time.perf_counter() - started
    checked(process.returncode, "", "patchmgr bisect", (0, 1))
    per = wall / max(answers, 1)
    first_said = f"{first:.1f} s" if first is not None else "none"
    bench.add(
        Row(
            case,
            f"patchmgr bisect --to the series' last commit ({commits} commits)",
            wall,
            answers,
            None,
            f"{answers} patches bisected, {per:.2f} s per patch; first answer after {first_said}",
        )
    )
    bench.goals.append(
        (
            f"bisect of a whole series over {commits} commits <= {BISECT_GOAL:g} s per patch",
            f"{per:.2f} s ({answers} patches in {wall:.1f} s)",
            per <= BISECT_GOAL,
        )
    )
    bench.goals.append(
        (
            f"its first answer within {FIRST_ANSWER_GOAL:g} s",
            first_said,
            first is not None and first <= FIRST_ANSWER_GOAL,
        )
    )
    shutil.rmtree(cache, ignore_errors=True)
