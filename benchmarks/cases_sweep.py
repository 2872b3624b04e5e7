"""The sweep: patchmgr's engine in process against the naive loop and git alone, at N consecutive commits."""

from __future__ import annotations

import json
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path

import synth
from fixtures import Bench, Row, Upstream, git, run_inner, spawn


# -- 2: the sweep ----------------------------------------------------------------------
def sweep_commits(bench: Bench, up: Upstream) -> list[str]:
    """N consecutive commits some way past the pin, where the patches have drifted: offsets, fuzz, conflicts."""
    start = bench.cfg["pin"] + bench.cfg["sweep_from"]
    return up.commits[start : start + bench.cfg["sweep"]]


def inner_sweep(bench: Bench, up: Upstream, mode: str) -> None:
    """Runs in a child process: patchmgr over the sweep, through its public functions.

    ``walk``: ``history.Walk``, the engine behind bisect, which classifies a group of
    patches again only at a commit that changed one of its files. ``series``: the
    engine's ``check_series`` at every commit, nothing kept between commits.
    """
    from patchmgr.engine.classify import check_series
    from patchmgr.history.walk import Walk
    from patchmgr.io.git_merge import merge_texts
    from patchmgr.model.project import Project
    from patchmgr.sources.store import Store
    from patchmgr.sources.upstream import GitSource, Sources

    commits = sweep_commits(bench, up)
    started, cpu = time.perf_counter(), time.process_time()
    project = Project.at(bench.project)
    upstream = project.target("bench").upstream("bench")
    patches = project.patches(upstream)
    sources = Sources(Store(bench.pm_cache), {"bench": str(up.repo)})
    sources.open_git(upstream, None)
    repo = sources.ensure_commit(upstream, commits[-1])
    walk = Walk(repo, commits[0], commits[-1], str(up.repo), patches)
    walk.prefetch(p for patch in patches for p in patch.touched_paths)
    states, checks = [], len(commits) * len(patches)
    for commit in commits:
        if mode == "walk":
            states.append([state.value for state in walk.states_at(commit)])
        else:
            results = check_series(patches, GitSource(repo, commit, str(up.repo)), merge_texts)
            states.append([r.state.value for r in results])
    if mode == "walk":
        checks = walk.checks
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    sources.store.close()
    print(
        json.dumps(
            {
                "wall": wall,
                "cpu": cpu,
                "states": states,
                "engine_checks": checks,
                "self_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                "children_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
            }
        )
    )


def check_each_commit(
    commits: list[str], patches: list[Path], to_commit: list[str], check: list[str], env: dict, cwd: Path | None = None
) -> tuple[list[list[bool]], float]:
    """Git's own way, one process each: ``to_commit COMMIT`` for every commit, then ``check PATCH`` for every
    patch there. Which checks passed (a row per commit), and the peak RSS in MB of those processes."""
    passed, peak = [], 0.0
    for commit in commits:
        peak = max(peak, spawn([*to_commit, commit], env=env, cwd=cwd)[3])
        row = []
        for patch in patches:
            code, _, _, rss = spawn([*check, str(patch)], env=env, cwd=cwd)
            row.append(code == 0)
            peak = max(peak, rss)
        passed.append(row)
    return passed, peak


def measure_sweep(bench: Bench, up: Upstream) -> None:
    commits = sweep_commits(bench, up)
    checks = len(commits) * len(up.ids)
    what = f"{len(up.ids)} patches x {len(commits)} commits"
    found = {}
    for mode, label in (
        ("walk", "patchmgr Walk, cold cache (first run fills it)"),
        ("walk", "patchmgr Walk (engine, re-checks only changed files)"),
        ("series", "patchmgr engine alone: check_series at every commit"),
    ):
        result, rss = run_inner(bench, f"sweep-{mode}", "sweep")
        found[label] = (
            bench.add(
                Row(
                    "sweep",
                    label,
                    result["wall"],
                    checks,
                    rss,
                    f"{what}; {result['engine_checks']} engine checks, CPU {result['cpu']:.2f} s; "
                    f"RSS in-process {result['self_rss_mb']:.0f} MB, git "
                    f"{result['children_rss_mb']:.0f} MB",
                )
            ),
            result["states"],
        )
    ours, states = found["patchmgr Walk (engine, re-checks only changed files)"]
    series_row, series_states = found["patchmgr engine alone: check_series at every commit"]
    same = sum(a == b for r1, r2 in zip(states, series_states, strict=True) for a, b in zip(r1, r2, strict=True))
    bench.notes.append(f"sweep: Walk and check_series give the same state in {same} of {checks} checks")
    patch_files = [bench.project / "patches" / "bench" / f"{pid}.patch" for pid in up.ids]
    counts: dict[str, int] = {}
    for row in states:
        for state in row:
            counts[state] = counts.get(state, 0) + 1
    bench.notes.append("sweep states (patchmgr): " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))

    # the naive loop: a checkout per commit, then `git apply --check` per patch
    work = bench.cache / f"naive-{bench.size}"
    if not (work / ".git").is_dir():
        shutil.rmtree(work, ignore_errors=True)
        git("clone", "-q", "--no-checkout", str(up.repo), str(work))
    git("checkout", "-q", "-f", "--detach", commits[0], cwd=work)
    env = {**os.environ, **synth.GIT_ENV}
    started = time.perf_counter()
    naive_ok, peak = check_each_commit(
        commits, patch_files, ["git", "checkout", "-q", "-f", "--detach"], ["git", "apply", "--check"], env, work
    )
    naive = bench.add(
        Row(
            "sweep",
            "naive: checkout + git apply --check",
            time.perf_counter() - started,
            checks,
            peak,
            "one checkout per commit, one process per check",
        )
    )

    # git alone: read-tree into a prepared index, then `git apply --check --cached` per patch
    with tempfile.TemporaryDirectory(prefix="pm-bench-index-") as tmp:
        genv = {**env, "GIT_DIR": str(up.repo), "GIT_INDEX_FILE": os.path.join(tmp, "index")}
        started = time.perf_counter()
        cached_ok, peak = check_each_commit(
            commits, patch_files, ["git", "read-tree"], ["git", "apply", "--check", "--cached"], genv
        )
        alone = bench.add(
            Row(
                "sweep",
                "git alone: apply --check --cached",
                time.perf_counter() - started,
                checks,
                peak,
                "read-tree per commit into one index, one process per check",
            )
        )

    ours_ok = [[state in ("clean", "offset") for state in row] for row in states]
    agree = sum(
        a == b == c
        for r1, r2, r3 in zip(ours_ok, naive_ok, cached_ok, strict=True)
        for a, b, c in zip(r1, r2, r3, strict=True)
    )
    bench.notes.append(f"sweep agreement: patchmgr clean/offset == git apply --check in {agree} of {checks} checks")
    bench.goals.append(
        (
            "sweep >= 1,000 checks/s",
            f"{ours.rate:,.0f} checks/s (check_series alone: {series_row.rate:,.0f})",
            ours.rate >= 1000,
        )
    )
    bench.goals.append(
        (
            "sweep >= 20x the naive loop",
            f"{ours.rate / naive.rate:.1f}x (check_series alone: {series_row.rate / naive.rate:.1f}x)",
            ours.rate / naive.rate >= 20,
        )
    )
    bench.goals.append(
        ("sweep faster than one git process per check", f"{ours.rate / alone.rate:.1f}x", ours.rate > alone.rate)
    )
    if agree != checks or same != checks:
        bench.goals.append(
            ("sweep agrees with git apply --check, Walk with check_series", f"{agree}/{checks}, {same}/{checks}", False)
        )
