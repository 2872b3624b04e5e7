#!/usr/bin/env python3
"""patchmgr benchmarks: patchmgr against the naive loop and against git alone, in one run.

    python benchmarks/run.py                     # full size (a few minutes; the history is built once)
    python benchmarks/run.py --size tiny --results /tmp/r.md   # seconds: what CI runs

It builds (or reuses, under --cache) seeded upstream histories with git fast-import
and a patch project for them, then measures, side by side:

1. ``patchmgr status`` as a whole CLI process with a warm cache: the generated target,
   200 patches across 4 upstreams, and the real ``ascend`` target from local mirrors;
2. a sweep: P patches at each of N consecutive commits, by patchmgr's engine in
   process, by the naive loop (check out each commit, ``git apply --check`` each
   patch) and by ``git apply --check --cached`` on a prepared index, one process per
   check (what git alone costs);
3. ``patchmgr bisect`` over a 10,000-commit range;
4. ``patchmgr apply`` into a checkout and into an installed environment (a venv with
   a generated package whose files the patches touch);
5. hunk placement at scale: one generated patch of 20,000 hunks against an 80,000-line
   file whose upstream moved every hunk (``synth.big_hunks_case``), read and classified
   by patchmgr's engine in process (``read_patch`` + ``check_patch``, no git, no CLI
   start-up) beside ``git apply --check`` on the same files, in the same run. Alone:

       python benchmarks/run.py --only big-patch   # updates just its section of RESULTS.md

6. ``patchmgr matrix`` (warm): every release tag since the pin x the Megatron-Bridge patches
   from the local mirror (``--mirrors``), or, without it, the generated upstream with five
   tags; the goal is 2 s. Alone: ``python benchmarks/run.py --only matrix``.

Peak memory is the largest resident set of the measured process and every process
it waited for (``wait4``'s rusage): patchmgr's git subprocesses count too. Figures go
to stdout as a table and to --results (default benchmarks/RESULTS.md) with the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import synth  # noqa: E402

SIZES = {
    "full": dict(
        files=3000,
        commits=12000,
        hot=60,
        pin=1000,
        patches=20,
        sweep=200,
        sweep_from=2000,
        bisect=10000,
        many=200,
        other_files=1500,
        other_commits=1000,
        runs=5,
        big_lines=80_000,
        big_hunks=20_000,
    ),
    "tiny": dict(
        files=60,
        commits=140,
        hot=8,
        pin=10,
        patches=4,
        sweep=6,
        sweep_from=60,
        bisect=100,
        many=12,
        other_files=30,
        other_commits=20,
        runs=2,
        big_lines=800,
        big_hunks=200,
    ),
}
NO_NETWORK = {"PATCHMGR_INDEX_URL": "http://127.0.0.1:9/simple"}  # a release lookup fails at once
ASCEND_MIRRORS = {
    "megatron-bridge": "NVIDIA-NeMo+Megatron-Bridge",
    "mindspeed": "Ascend+MindSpeed",
    "vllm-ascend": "vllm-project+vllm-ascend",
    "mbridge": "ISEEKYAN+mbridge",
}


@dataclass
class Row:
    case: str
    variant: str
    wall: float | None
    checks: int | None = None
    rss_mb: float | None = None
    note: str = ""

    @property
    def rate(self) -> float | None:
        return self.checks / self.wall if self.checks and self.wall else None


@dataclass
class Bench:
    size: str
    cfg: dict
    cache: Path
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    goals: list[tuple[str, str, bool]] = field(default_factory=list)
    load_at_start: str = ", ".join(f"{value:.2f}" for value in os.getloadavg())

    # -- places --------------------------------------------------------------
    @property
    def project(self) -> Path:
        return self.cache / f"project-{self.size}"

    @property
    def pm_cache(self) -> Path:
        return self.cache / f"patchmgr-cache-{self.size}"

    def env(self, extra: dict | None = None) -> dict[str, str]:
        env = {**os.environ, **synth.GIT_ENV, "PATCHMGR_CACHE": str(self.pm_cache), **NO_NETWORK, **(extra or {})}
        # as installed for a user: Python keeps compiled modules (a session may have turned that off)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        return env

    def add(self, row: Row) -> Row:
        self.rows.append(row)
        rate = f"{row.rate:,.0f} checks/s" if row.rate else ""
        wall = f"{row.wall:.3f} s" if row.wall is not None else "skipped"
        print(f"  {row.case:<22} {row.variant:<44} {wall:>10} {rate:>16} {_mb(row.rss_mb):>8} {row.note}", flush=True)
        return row


# -- processes ----------------------------------------------------------------
def spawn(args: list[str], env: dict | None = None, cwd: Path | None = None) -> tuple[int, str, float, float]:
    """Run a process to its end: (exit code, output, wall seconds, peak RSS in MB of it and its children)."""
    start = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=cwd)
    out = proc.stdout.read()
    proc.stdout.close()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, out.decode("utf-8", "replace"), wall, usage.ru_maxrss / 1024


def git(*args: str, cwd: Path | None = None, env: dict | None = None) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, env={**os.environ, **synth.GIT_ENV, **(env or {})}
    )
    if done.returncode:
        raise RuntimeError(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout.strip()


def patchmgr(bench: Bench, *args: str, root: Path | None = None, env: dict | None = None):
    return spawn(
        [sys.executable, "-m", "patchmgr", *args, "--root", str(root or bench.project)], env=env or bench.env()
    )


# -- setup ----------------------------------------------------------------------
@dataclass
class Upstream:
    name: str
    repo: Path
    commits: list[str]
    pin: str
    ids: list[str]


def prepare(bench: Bench) -> dict[str, Upstream]:
    cfg = bench.cfg
    started = time.perf_counter()
    main_spec = synth.HistorySpec(1, cfg["files"], cfg["commits"], cfg["hot"])
    specs = [main_spec] + [
        synth.HistorySpec(seed, cfg["other_files"], cfg["other_commits"], cfg["hot"]) for seed in (2, 3, 4)
    ]
    repos = {}
    for spec in specs:
        path = bench.cache / "repos" / f"{spec.name}.git"
        repos[spec.seed] = (path, synth.build_history(spec, path), spec)
    built = time.perf_counter() - started
    main_repo, main_commits, _ = repos[1]
    bench.notes.append(
        f"histories ready in {built:.1f} s (git fast-import; cached under {bench.cache / 'repos'}): "
        + "; ".join(f"{s.name} ({len(repos[s.seed][1]):,} commits)" for s in specs)
    )

    shutil.rmtree(bench.project, ignore_errors=True)
    patches = bench.project / "patches"
    pin = main_commits[cfg["pin"]]
    ups = {
        "bench": Upstream(
            "bench",
            main_repo,
            main_commits,
            pin,
            synth.write_patches(main_repo, pin, "bench", cfg["patches"], 11, main_spec, patches, "fix"),
        )
    }
    git_url = "https://bench.invalid/{}.git"
    synth.write_manifest(
        bench.project / "manifests" / "bench.toml",
        "bench",
        {"bench": {"git": git_url.format("bench"), "commit": pin, "patches": ups["bench"].ids}},
    )
    synth.write_manifest(
        bench.project / "manifests" / "bench-env.toml",
        "bench-env",
        {
            "bench": {
                "git": git_url.format("bench"),
                "commit": pin,
                "version": "1.0",
                "pypi": "benchpkg",
                "package-root": "src",
                "patches": ups["bench"].ids,
            }
        },
    )
    per = cfg["many"] // 4
    many = {}
    for index, seed in enumerate((1, 2, 3, 4)):
        repo, commits, spec = repos[seed]
        name = f"up{index}"
        upin = commits[min(cfg["pin"], len(commits) - 1)]
        ups[name] = Upstream(
            name, repo, commits, upin, synth.write_patches(repo, upin, name, per, 100 + seed, spec, patches, "many")
        )
        many[name] = {"git": git_url.format(name), "commit": upin, "patches": ups[name].ids}
    synth.write_manifest(bench.project / "manifests" / "many.toml", "many", many)
    return ups


def sources(ups: dict[str, Upstream], names) -> list[str]:
    return [arg for name in names for arg in ("--source", f"{name}={ups[name].repo}")]


# -- 1 and 5: status ---------------------------------------------------------------
def measure_status(
    bench: Bench, label: str, args: list[str], checks: int, root: Path | None = None, env: dict | None = None
) -> Row | None:
    code, out, wall, rss = patchmgr(bench, "status", *args, root=root, env=env)  # warms the cache
    if code not in (0, 1):
        bench.add(Row("status", label, None, note=f"failed (exit {code}): {out.strip().splitlines()[-1:]}"))
        return None
    walls, peak = [], 0.0
    for _ in range(bench.cfg["runs"]):
        code, out, wall, rss = patchmgr(bench, "status", *args, root=root, env=env)
        walls.append(wall)
        peak = max(peak, rss)
    return bench.add(
        Row(
            "status",
            label,
            statistics.median(walls),
            checks,
            peak,
            f"median of {len(walls)} warm runs (min {min(walls):.3f} s), exit {code}",
        )
    )


def ascend_status(bench: Bench, mirrors: Path) -> Row | None:
    repos = {name: mirrors / folder / "repo" for name, folder in ASCEND_MIRRORS.items()}
    absent = [str(path) for path in repos.values() if not path.is_dir()]
    if absent:
        bench.add(
            Row("status", "ascend target (real upstreams)", None, note=f"skipped: no local mirror {', '.join(absent)}")
        )
        return None
    args = ["--target", "ascend"] + [arg for name, path in repos.items() for arg in ("--source", f"{name}={path}")]
    cache = bench.cache / "patchmgr-cache-ascend"
    # the first run may fetch the pins from the mirrors and the releases from PyPI; later runs are offline
    warm = bench.env({"PATCHMGR_CACHE": str(cache)})
    for key in NO_NETWORK:
        warm.pop(key)
    spawn([sys.executable, "-m", "patchmgr", "status", *args, "--root", str(ROOT)], env=warm)
    return measure_status(
        bench,
        "ascend target (real upstreams, 6 patches)",
        args,
        6,
        root=ROOT,
        env=bench.env({"PATCHMGR_CACHE": str(cache)}),
    )


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
    from patchmgr.io.git import merge_texts
    from patchmgr.model.project import Project
    from patchmgr.sources.store import Store
    from patchmgr.sources.upstream import GitSource, open_git_source

    commits = sweep_commits(bench, up)
    started, cpu = time.perf_counter(), time.process_time()
    project = Project.at(bench.project)
    upstream = project.target("bench").upstream("bench")
    patches = project.patches(upstream)
    store = Store(bench.pm_cache)
    overrides = {"bench": str(up.repo)}
    open_git_source(store, upstream, None, overrides)
    repo = store.ensure_commit("bench", commits[-1], (str(up.repo),))
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
    store.close()
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
        code, out, wall, rss = spawn(
            [
                sys.executable,
                str(Path(__file__).resolve()),
                "--inner",
                f"sweep-{mode}",
                "--size",
                bench.size,
                "--cache",
                str(bench.cache),
            ],
            env=bench.env(),
        )
        if code:
            raise RuntimeError(f"sweep failed: {out}")
        result = json.loads(out.strip().splitlines()[-1])
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
    same = sum(a == b for r1, r2 in zip(states, series_states) for a, b in zip(r1, r2))
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
    naive_ok, peak = [], 0.0
    started = time.perf_counter()
    for commit in commits:
        code, out, _, rss = spawn(["git", "checkout", "-q", "-f", "--detach", commit], env=env, cwd=work)
        peak = max(peak, rss)
        row = []
        for patch in patch_files:
            code, out, _, rss = spawn(["git", "apply", "--check", str(patch)], env=env, cwd=work)
            row.append(code == 0)
            peak = max(peak, rss)
        naive_ok.append(row)
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
        cached_ok, peak = [], 0.0
        started = time.perf_counter()
        for commit in commits:
            code, out, _, rss = spawn(["git", "read-tree", commit], env=genv)
            peak = max(peak, rss)
            row = []
            for patch in patch_files:
                code, out, _, rss = spawn(["git", "apply", "--check", "--cached", str(patch)], env=genv)
                row.append(code == 0)
                peak = max(peak, rss)
            cached_ok.append(row)
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
    agree = sum(a == b == c for r1, r2, r3 in zip(ours_ok, naive_ok, cached_ok) for a, b, c in zip(r1, r2, r3))
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


# -- 3: bisect -------------------------------------------------------------------------
def measure_bisect(bench: Bench, up: Upstream) -> None:
    to_index = min(bench.cfg["pin"] + bench.cfg["bisect"], len(up.commits) - 1)
    span = to_index - bench.cfg["pin"]
    base = [
        "bisect",
        "--target",
        "bench",
        "--upstream",
        "bench",
        "--to",
        up.commits[to_index],
        "--json",
        *sources({"bench": up}, ["bench"]),
    ]
    code, out, wall, rss = patchmgr(bench, *base)
    bench.add(Row("bisect", f"all patches, {span:,} commits, cold cache", wall, None, rss, f"exit {code}"))
    code, out, wall, rss = patchmgr(bench, *base)
    try:
        walked = json.loads(out[out.index("{") :])["patches"]
    except ValueError:
        raise RuntimeError(f"bisect failed: {out}")
    checked = sum(p["commits_checked"] for p in walked)
    per_patch = wall / max(len(walked), 1)
    bench.add(
        Row(
            "bisect",
            f"all {len(walked)} failing patches, {span:,} commits",
            wall,
            checked,
            rss,
            f"{per_patch:.3f} s per patch; {checked} commit checks",
        )
    )
    last = up.ids[-1]
    code, out, single, rss_one = patchmgr(bench, *base, "--patch", last)
    bench.add(
        Row("bisect", f"one patch (last of the series), {span:,} commits", single, None, rss_one, f"--patch {last}")
    )
    worst = max(per_patch, single)
    bench.goals.append((f"bisect over {span:,} commits < 2 s per patch", f"{worst:.2f} s", worst < 2))


# -- 6: matrix --------------------------------------------------------------------------
MATRIX_GOAL = 2.0  # seconds, warm: every Megatron-Bridge release tag since the pin x its patches


def measure_matrix(bench: Bench, mirrors: Path, ups: dict[str, Upstream] | None = None) -> None:
    """``patchmgr matrix`` warm: the real Megatron-Bridge mirror when it is here, else the generated upstream
    with five tags after the pin (made once, ``git tag -f``)."""
    mirror = mirrors / ASCEND_MIRRORS["megatron-bridge"] / "repo"
    if mirror.is_dir():
        args = ["--target", "ascend", "--upstream", "megatron-bridge", "--source", f"megatron-bridge={mirror}"]
        root, label = ROOT, "Megatron-Bridge: release tags since the pin x 3 patches (real mirror)"
        env = bench.env({"PATCHMGR_CACHE": str(bench.cache / "patchmgr-cache-ascend")})
    else:
        ups = ups or prepare(bench)  # --only matrix: the generated histories (cached) and their project
        up = ups["bench"]
        step = max(1, (len(up.commits) - 1 - bench.cfg["pin"]) // 5)
        for number in range(1, 6):
            git(
                "tag",
                "-f",
                f"v1.{number}.0",
                up.commits[min(bench.cfg["pin"] + number * step, len(up.commits) - 1)],
                cwd=up.repo,
            )
        args = ["--target", "bench", "--upstream", "bench", "--refs", "v1.*", *sources(ups, ["bench"])]
        root, env = bench.project, bench.env()
        label = f"generated upstream: 5 tags x {len(up.ids)} patches (no mirror here)"
    first = spawn([sys.executable, "-m", "patchmgr", "matrix", *args, "--json", "--root", str(root)], env=env)
    try:
        doc = json.loads(first[1][first[1].index("{") :])
        (matrix,) = doc["upstreams"]
    except ValueError:
        bench.add(Row("matrix", label, None, note=f"failed (exit {first[0]}): {first[1].strip()[-300:]}"))
        return
    cells = len(matrix["columns"]) * len(matrix["patches"])
    walls, peak = [], 0.0
    for _ in range(max(3, bench.cfg["runs"])):
        code, _out, wall, rss = spawn([sys.executable, "-m", "patchmgr", "matrix", *args, "--root", str(root)], env=env)
        walls.append(wall)
        peak = max(peak, rss)
    wall = statistics.median(walls)
    columns = ", ".join(c["name"] for c in matrix["columns"])
    bench.add(
        Row(
            "matrix",
            label,
            wall,
            cells,
            peak,
            f"median of {len(walls)} warm runs (min {min(walls):.3f} s), exit {code}; columns {columns}",
        )
    )
    print(f"  matrix: {wall:.3f} s warm, {wall / MATRIX_GOAL:.2f}x the {MATRIX_GOAL:g} s goal", flush=True)
    bench.goals.append(
        (
            f"matrix, {label.split(':')[0]} < {MATRIX_GOAL:g} s (warm)",
            f"{wall:.3f} s ({wall / MATRIX_GOAL:.2f}x the goal)",
            wall < MATRIX_GOAL,
        )
    )


# -- 4: apply ----------------------------------------------------------------------------
def measure_apply(bench: Bench, up: Upstream) -> None:
    src = sources({"bench": up}, ["bench"])
    with tempfile.TemporaryDirectory(prefix="pm-bench-apply-") as tmp:
        walls, peak = [], 0.0
        for run in range(2):
            code, out, wall, rss = patchmgr(bench, "apply", "--target", "bench", "--into", f"{tmp}/co{run}", *src)
            if code:
                raise RuntimeError(f"apply failed: {out}")
            walls.append(wall)
            peak = max(peak, rss)
        mine = bench.add(
            Row(
                "apply",
                f"--into a checkout ({len(up.ids)} patches)",
                min(walls),
                None,
                peak,
                f"best of {len(walls)}; each a fresh checkout of ~{bench.cfg['files']:,} files",
            )
        )
        env = {**os.environ, **synth.GIT_ENV}
        started = time.perf_counter()
        peak = 0.0
        patches = [str(bench.project / "patches" / "bench" / f"{pid}.patch") for pid in up.ids]
        for args in (
            ["git", "clone", "-q", "--no-checkout", str(up.repo), f"{tmp}/naive"],
            ["git", "-C", f"{tmp}/naive", "checkout", "-q", "--detach", up.pin],
            ["git", "-C", f"{tmp}/naive", "apply", *patches],
        ):
            code, out, _, rss = spawn(args, env=env)
            peak = max(peak, rss)
        naive = bench.add(
            Row(
                "apply",
                "naive: git clone + checkout + git apply",
                time.perf_counter() - started,
                None,
                peak,
                "no checks, no ledger, no commits",
            )
        )
        bench.notes.append(f"apply --into costs {mine.wall / naive.wall:.2f}x a plain clone + git apply")

    venv = bench.cache / f"venv-{bench.size}"
    python = make_environment(bench, up, venv)
    args = ["--target", "bench-env", "--python", str(python), *src]
    code, out, wall, rss = patchmgr(bench, "apply", *args)
    if code:
        raise RuntimeError(f"apply --python failed: {out}")
    bench.add(
        Row(
            "apply",
            f"--python: installed environment ({len(up.ids)} patches)",
            wall,
            None,
            rss,
            "journal, RECORD, bytecode, ledger",
        )
    )
    code, out, wall, rss = patchmgr(bench, "verify", "--target", "bench-env", "--python", str(python))
    bench.add(Row("apply", "verify --python", wall, None, rss, f"exit {code}"))
    code, out, wall, rss = patchmgr(bench, "revert", "--target", "bench-env", "--python", str(python))
    bench.add(Row("apply", "revert --python", wall, None, rss, f"exit {code}"))


def make_environment(bench: Bench, up: Upstream, venv: Path) -> Path:
    """A fresh venv with distribution ``benchpkg`` 1.0: the pin's files under src/ that the patches touch, and more."""
    import base64
    import hashlib

    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    listing = git("ls-tree", "-r", "--name-only", up.pin, cwd=up.repo).split()
    touched = {
        line[len("+++ b/") :]
        for pid in up.ids
        for line in (bench.project / "patches" / "bench" / f"{pid}.patch").read_text().splitlines()
        if line.startswith("+++ b/")
    }
    paths = sorted(touched | set(listing[:100]))
    record = []
    for path in paths:
        data = synth.read_file(up.repo, up.pin, path)
        relative = path[len("src/") :]
        (site / relative).parent.mkdir(parents=True, exist_ok=True)
        (site / relative).write_bytes(data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{relative},sha256={digest},{len(data)}")
    info = site / "benchpkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: benchpkg\nVersion: 1.0\n")
    (info / "INSTALLER").write_text("pip\n")
    record += [
        "benchpkg-1.0.dist-info/METADATA,,",
        "benchpkg-1.0.dist-info/INSTALLER,,",
        "benchpkg-1.0.dist-info/RECORD,,",
    ]
    (info / "RECORD").write_text("\n".join(record) + "\n")
    return python


# -- 5: one big patch ------------------------------------------------------------------------
BIG_GOAL = 2.0  # patchmgr within this factor of git apply --check


BIG_VARIANTS = {"resizing": True, "same-length": False}  # hunks that change the line count, or not


def big_patch_files(bench: Bench, variant: str) -> tuple[Path, Path]:
    """The upstream work tree (one file) and the patch of ``synth.big_hunks_case``, written once per size."""
    folder = bench.cache / f"big-patch-{bench.size}-{variant}"
    _, upstream, mail, path = synth.big_hunks_case(
        bench.cfg["big_lines"], bench.cfg["big_hunks"], resize=BIG_VARIANTS[variant]
    )
    tree, patch = folder / "tree", folder / "big.patch"
    if not (patch.is_file() and patch.read_bytes() == mail and (tree / path).read_bytes() == upstream):
        shutil.rmtree(folder, ignore_errors=True)
        (tree / path).parent.mkdir(parents=True)
        (tree / path).write_bytes(upstream)
        patch.write_bytes(mail)
    return tree, patch


def inner_big_patch(bench: Bench, variant: str) -> None:
    """Runs in a child process: read the patch and classify it against the tree, ``runs`` times."""
    from patchmgr.engine.classify import check_patch
    from patchmgr.model.patchfile import read_patch

    tree, patch_path = big_patch_files(bench, variant)

    class Files:
        def read(self, path: str) -> bytes | None:
            target = tree / path
            return target.read_bytes() if target.is_file() else None

        def read_blob(self, sha: str) -> bytes | None:
            return None

    walls, state = [], ""
    for _ in range(bench.cfg["runs"]):
        started = time.perf_counter()
        patch = read_patch(patch_path, "bench", "big")
        parsed = time.perf_counter()
        result = check_patch(patch, Files())
        walls.append((time.perf_counter() - started, parsed - started))
        state = result.state.value
    wall, parse = sorted(walls)[len(walls) // 2]
    print(
        json.dumps(
            {
                "wall": wall,
                "parse": parse,
                "min": min(w for w, _ in walls),
                "state": state,
                "hunks": len(patch.files[0].hunks),
            }
        )
    )


def measure_big_patch(bench: Bench) -> None:
    """Both variants, patchmgr then git on the same files; the goal holds for the worse ratio."""
    lines, runs = bench.cfg["big_lines"], bench.cfg["runs"]
    ratios, agree, what = [], True, ""
    for variant in BIG_VARIANTS:
        tree, patch = big_patch_files(bench, variant)
        code, out, _, rss = spawn(
            [
                sys.executable,
                str(Path(__file__).resolve()),
                "--inner",
                f"big-patch-{variant}",
                "--size",
                bench.size,
                "--cache",
                str(bench.cache),
            ],
            env=bench.env(),
        )
        if code:
            raise RuntimeError(f"big patch failed: {out}")
        mine = json.loads(out.strip().splitlines()[-1])
        what = f"{mine['hunks']:,} hunks, {patch.stat().st_size / 1e6:.1f} MB, on a {lines:,}-line file"
        case = f"big patch, {variant}"
        ours = bench.add(
            Row(
                case,
                "patchmgr: read_patch + check_patch, in-process",
                mine["wall"],
                None,
                rss,
                f"{what}; median of {runs} (min {mine['min']:.3f} s, parsing {mine['parse']:.3f} s); "
                f"state {mine['state']}",
            )
        )
        env = {**os.environ, **synth.GIT_ENV}
        walls, peak, codes = [], 0.0, set()
        for _ in range(runs):
            code, out, wall, rss = spawn(["git", "apply", "--check", str(patch)], env=env, cwd=tree)
            walls.append(wall)
            peak = max(peak, rss)
            codes.add(code)
        theirs = bench.add(
            Row(
                case,
                "git apply --check",
                statistics.median(walls),
                None,
                peak,
                f"same files, a whole process; median of {runs} (min {min(walls):.3f} s), "
                f"exit {'/'.join(map(str, codes))}",
            )
        )
        ratio = ours.wall / theirs.wall
        ratios.append((ratio, variant, ours.wall, theirs.wall))
        print(
            f"  {case}: patchmgr {ours.wall:.3f} s, git {theirs.wall:.3f} s, ratio {ratio:.2f}x "
            f"(goal <= {BIG_GOAL:g}x git)",
            flush=True,
        )
        same = (mine["state"] in ("clean", "offset")) == (codes == {0})
        agree = agree and same
        bench.notes.append(
            f"{case}: patchmgr says {mine['state']}, git apply --check exits "
            f"{'/'.join(map(str, codes))}: {'the same verdict' if same else 'DIFFERENT verdicts'}"
        )
    ratio, variant, ours_wall, git_wall = max(ratios)
    if not agree or bench.size == "full":  # at the tiny size both take milliseconds: no goal
        bench.goals.append(
            (
                f"{what}: <= {BIG_GOAL:g}x git apply --check",
                f"{ratio:.2f}x at worst ({variant}: {ours_wall:.3f} s vs {git_wall:.3f} s)",
                ratio <= BIG_GOAL and agree,
            )
        )


BIG_START = "<!-- big-patch: written by run.py --only big-patch -->"
BIG_END = "<!-- /big-patch -->"


def write_big_patch_section(bench: Bench, path: Path, facts: dict[str, str]) -> None:
    """Put this run's big-patch rows in their own section of ``path``, leaving every other line as it is."""
    goals = "\n".join(
        f"| {goal} | {measured} | {'met' if ok else '**missed**'} |" for goal, measured, ok in bench.goals
    )
    notes = "\n".join(f"- {note}" for note in bench.notes)
    section = f"""{BIG_START}
## Hunk placement at scale (run alone)

Made by `python benchmarks/run.py --size {bench.size} --only big-patch` on {facts["date"]}, patchmgr
{facts["commit"]}, {facts["nproc"]} CPUs ({facts["cpu"]}), load average {bench.load_at_start} at the start
and {facts["load"]} at the end, Python {facts["python"]}, git {facts["git"]}. Both rows come from this one run.

| goal | measured | |
|---|---|---|
{goals}

{table(bench)}

{notes}
{BIG_END}
"""
    text = path.read_text() if path.is_file() else "# patchmgr benchmark results\n"
    if BIG_START in text and BIG_END in text:
        before, rest = text.split(BIG_START, 1)
        text = before + section.rstrip("\n") + rest.split(BIG_END, 1)[1]
    elif KEPT in text:
        before, after = text.split(KEPT, 1)
        text = before + section + "\n" + KEPT + after
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text)


MATRIX_START = "<!-- matrix: written by run.py --only matrix -->"
MATRIX_END = "<!-- /matrix -->"


def write_matrix_section(bench: Bench, path: Path, facts: dict[str, str]) -> None:
    """This run's matrix row in its own section of ``path`` (before the hand-written part); the rest is kept."""
    goals = "\n".join(
        f"| {goal} | {measured} | {'met' if ok else '**missed**'} |" for goal, measured, ok in bench.goals
    )
    section = f"""{MATRIX_START}
## Compatibility matrix (run alone)

Made by `python benchmarks/run.py --only matrix` on {facts["date"]}, patchmgr {facts["commit"]}, {facts["nproc"]}
CPUs ({facts["cpu"]}), load average {bench.load_at_start} at the start and {facts["load"]} at the end, Python
{facts["python"]}, git {facts["git"]}. Checks: cells (columns x patches).

| goal | measured | |
|---|---|---|
{goals}

{table(bench)}
{MATRIX_END}
"""
    text = path.read_text() if path.is_file() else "# patchmgr benchmark results\n"
    if MATRIX_START in text and MATRIX_END in text:
        before, rest = text.split(MATRIX_START, 1)
        text = before + section.rstrip("\n") + rest.split(MATRIX_END, 1)[1]
    elif KEPT in text:
        before, after = text.split(KEPT, 1)
        text = before + section + "\n" + KEPT + after
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text)


# -- report --------------------------------------------------------------------------------
def machine() -> dict[str, str]:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor() or "unknown",
    )
    mem = next(
        (line.split()[1] for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal")), "0"
    )
    commit = git("rev-parse", "HEAD", cwd=ROOT)
    dirty = git("status", "--porcelain", "--", "patchmgr", cwd=ROOT)
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    return {
        "nproc": str(os.cpu_count()),
        "cpu": cpu,
        "ram": f"{int(mem) / 1024 / 1024:.1f} GiB",
        "load": load,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "commit": commit[:12] + (" (with uncommitted changes in patchmgr/)" if dirty else ""),
        "python": platform.python_version(),
        "git": git("--version").removeprefix("git version "),
    }


def table(bench: Bench) -> str:
    lines = [
        "| case | variant | wall | checks | checks/s | peak RSS | vs patchmgr | note |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    ours = {row.case: row for row in bench.rows if row.variant.startswith("patchmgr Walk (")}
    for row in bench.rows:
        wall = f"{row.wall:.3f} s" if row.wall is not None else "—"
        rate = f"{row.rate:,.0f}" if row.rate else ""
        ratio = ""
        mine = ours.get(row.case)
        if mine and row is not mine and row.rate and mine.rate:
            ratio = f"{mine.rate / row.rate:.1f}x slower"
        lines.append(
            f"| {row.case} | {row.variant} | {wall} | {row.checks or ''} | {rate} | {_mb(row.rss_mb)} "
            f"| {ratio} | {row.note} |"
        )
    return "\n".join(lines)


KEPT = "<!-- kept by run.py: what follows is written by hand -->"


def write_results(bench: Bench, path: Path, facts: dict[str, str]) -> None:
    goals = "\n".join(
        f"| {goal} | {measured} | {'met' if ok else '**missed**'} |" for goal, measured, ok in bench.goals
    )
    notes = "\n".join(f"- {note}" for note in bench.notes)
    text = f"""# patchmgr benchmark results

Made by `python benchmarks/run.py --size {bench.size}` (see its docstring for what each case does).

| machine | |
|---|---|
| CPUs (nproc) | {facts["nproc"]} |
| CPU model | {facts["cpu"]} |
| RAM | {facts["ram"]} |
| load average at the end (1, 5, 15 min) | {facts["load"]} (at the start: {bench.load_at_start}) |
| date | {facts["date"]} |
| patchmgr commit | {facts["commit"]} |
| Python / git | {facts["python"]} / {facts["git"]} |
| size | {bench.size}: {json.dumps(bench.cfg)} |

## Goals

| goal | measured | |
|---|---|---|
{goals}

## Figures

Wall times are whole CLI processes unless the variant says in-process; peak RSS is the
largest resident set of the process and of every process it started (git included).

{table(bench)}

## Notes

{notes}
"""
    previous = path.read_text() if path.is_file() else ""
    if BIG_START in previous and BIG_END in previous:  # a run of --only big-patch keeps its own section
        text += "\n" + previous[previous.index(BIG_START) : previous.index(BIG_END) + len(BIG_END)] + "\n"
    if MATRIX_START in previous and MATRIX_END in previous:  # so does a run of --only matrix
        text += "\n" + previous[previous.index(MATRIX_START) : previous.index(MATRIX_END) + len(MATRIX_END)] + "\n"
    if KEPT in previous:  # the profile history below the marker survives a new run
        text += "\n" + previous[previous.index(KEPT) :]
    path.write_text(text)


def _mb(value: float | None) -> str:
    return f"{value:.0f} MB" if value else ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="patchmgr benchmarks (see the module docstring)")
    parser.add_argument("--size", choices=sorted(SIZES), default="full")
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "patchmgr-bench",
        help="where generated histories, clones and environments are kept between runs",
    )
    parser.add_argument("--results", type=Path, default=HERE / "RESULTS.md")
    parser.add_argument(
        "--mirrors",
        type=Path,
        default=Path(os.environ.get("PATCHMGR_MIRRORS", "~/src/mirrors")).expanduser(),
        help="folder of local mirrors of the ascend upstreams (OWNER+NAME/repo); "
        "default $PATCHMGR_MIRRORS or ~/src/mirrors",
    )
    parser.add_argument(
        "--only",
        choices=["big-patch", "matrix"],
        help="run one case alone (big-patch: needs no generated history); its section of "
        "--results is updated, the rest of the file is kept",
    )
    parser.add_argument("--inner", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    bench = Bench(args.size, SIZES[args.size], args.cache.resolve())
    bench.cache.mkdir(parents=True, exist_ok=True)
    if args.inner in ("sweep-walk", "sweep-series"):
        ups = _known_upstreams(bench)
        inner_sweep(bench, ups["bench"], args.inner.removeprefix("sweep-"))
        return 0
    if args.inner and args.inner.startswith("big-patch-"):
        inner_big_patch(bench, args.inner.removeprefix("big-patch-"))
        return 0
    if args.only == "big-patch":
        print(f"patchmgr benchmarks, size {args.size}, case big-patch alone, cache {bench.cache}", flush=True)
        measure_big_patch(bench)
        return report(bench, args.results, write_big_patch_section)
    if args.only == "matrix":
        print(f"patchmgr benchmarks, size {args.size}, case matrix alone, cache {bench.cache}", flush=True)
        measure_matrix(bench, args.mirrors)
        return report(bench, args.results, write_matrix_section)

    print(f"patchmgr benchmarks, size {args.size}, cache {bench.cache}", flush=True)
    ups = prepare(bench)
    (bench.cache / f"upstreams-{args.size}.json").write_text(
        json.dumps({name: {"repo": str(u.repo), "pin": u.pin, "ids": u.ids} for name, u in ups.items()})
    )
    shutil.rmtree(bench.pm_cache, ignore_errors=True)  # every run starts cold, then measures warm
    bench_up = ups["bench"]
    measure_status(
        bench,
        f"generated target ({len(bench_up.ids)} patches)",
        ["--target", "bench", *sources(ups, ["bench"])],
        len(bench_up.ids),
    )
    ascend = ascend_status(bench, args.mirrors)
    if ascend:
        bench.goals.append(
            ("status of the ascend target < 0.5 s (warm, offline)", f"{ascend.wall:.3f} s", ascend.wall < 0.5)
        )
    else:
        bench.notes.append("the ascend target was not measured: its mirrors are not on this machine")
    many = measure_status(
        bench,
        f"{bench.cfg['many']} patches across 4 upstreams",
        ["--target", "many", *sources(ups, ["up0", "up1", "up2", "up3"])],
        bench.cfg["many"],
    )
    if many:
        bench.goals.append((f"status of {bench.cfg['many']} patches < 3 s", f"{many.wall:.3f} s", many.wall < 3))
    measure_sweep(bench, bench_up)
    measure_bisect(bench, bench_up)
    measure_matrix(bench, args.mirrors, ups)
    measure_apply(bench, bench_up)
    measure_big_patch(bench)
    patchmgr_rows = [
        r for r in bench.rows if r.rss_mb and not r.variant.startswith(("naive", "git alone", "git apply"))
    ]
    worst = max(patchmgr_rows, key=lambda r: r.rss_mb)
    bench.goals.append(
        (
            "peak memory < 200 MB in every case",
            f"{_mb(worst.rss_mb)} ({worst.case}: {worst.variant})",
            worst.rss_mb < 200,
        )
    )
    return report(bench, args.results, write_results)


def report(bench: Bench, results: Path, write) -> int:
    """Print the table and the goals, then ``write`` them into ``results`` with the machine's facts."""
    facts = machine()
    print()
    print(table(bench))
    print()
    for goal, measured, ok in bench.goals:
        print(f"{'met   ' if ok else 'MISSED'} {goal}: {measured}")
    results.parent.mkdir(parents=True, exist_ok=True)
    write(bench, results, facts)
    print(f"\nwrote {results}")
    return 0


def _known_upstreams(bench: Bench) -> dict[str, Upstream]:
    saved = json.loads((bench.cache / f"upstreams-{bench.size}.json").read_text())
    result = {}
    for name, entry in saved.items():
        repo = Path(entry["repo"])
        commits = (repo / "bench-commits.txt").read_text().split()
        result[name] = Upstream(name, repo, commits, entry["pin"], entry["ids"])
    return result


if __name__ == "__main__":
    sys.exit(main())
