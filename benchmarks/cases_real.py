"""Real series at real sizes (issue 38), whole CLI processes beside git (or quilt) alone, side by side in one run:

- Megatron-LM, 300 consecutive real commits as a ``git format-patch`` series: ``status`` with a cold cache beside
  a fresh clone + checkout + a ``git apply --check`` loop (each patch checked, then applied for the next one:
  the series stacks); ``apply --into`` beside a fresh clone + checkout + ``git am`` of the same patches.
- Megatron-LM, the same series as a matrix (issue 39): the pin, the 19 ``core_v0.15*`` to ``core_v0.19*`` tags
  (older ones included) and the tip, cold, beside the naive loop (a fresh clone; at each column a checkout, then
  ``git apply --check`` of each patch, applied when it passes: the series stacks); then the matrix after one
  patch's message is edited (the cache warm for every row that does not stand on it) and warm.
- openssh, Debian's 53-patch quilt series: ``apply --into`` beside ``quilt push -a`` on a fresh copy of the
  pristine tree; ``matrix`` of the series x 12 release columns, cold; and the matrix at half the patches and half
  the columns beside it, for the cost per cell (linear in patches x columns) and the peak memory.

Alone: ``python benchmarks/run.py --only real --mirrors DIR --debian-source DIR`` (minutes). Without the mirrors
(or the source package, or quilt) the cases that need them are skipped and say why.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import synth
from fixtures import Bench, Row, spawn_cpu
from real_series import RealSeries, megatron_series, openssh_series, quilt_ready

STATUS_GOAL = 2.0  # cold status at most this many times the git apply --check loop
APPLY_GOAL = 1.0  # apply at most git am's (quilt push -a's) time
MATRIX_GOAL = 30.0  # seconds, cold: 53 patches x 12 release columns
LINEAR_GOAL = 1.5  # the cost per cell of the whole matrix at most this many times the half-size one's
MATRIX_NAIVE_GOAL = 1.0  # cold matrix of the Megatron series at most this many times the naive loop
WARM_GOAL = 0.1  # warm matrix at most this many times the naive loop
MEGATRON_REFS = "core_v0.1[5-9]*"  # with --include-older: 19 tags, and the pin and the tip: 21 columns
MEMORY_GOAL = 300  # MiB, peak of every patchmgr process of these cases (git included)
ROUNDS = {"full": 3, "tiny": 1}  # interleaved rounds of each comparison ($PATCHMGR_BENCH_ROUNDS sets another)


def rounds_of(bench: Bench) -> int:
    return int(os.environ.get("PATCHMGR_BENCH_ROUNDS") or ROUNDS[bench.size])


def matrix_rounds(bench: Bench) -> int:
    """The cold matrices take tens of seconds each: one round unless asked for more."""
    return int(os.environ.get("PATCHMGR_BENCH_ROUNDS") or 1)


def measure_real(bench: Bench, mirrors: Path, debian: Path | None, apply_only: bool = False) -> None:
    """Every real case, or (``apply_only``: ``--only real-apply``) only the two apply comparisons."""
    peaks: list[tuple[float, str]] = []
    megatron = megatron_series(bench, mirrors, bench.cfg["real_patches"])
    if isinstance(megatron, str):
        skip(bench, "megatron series", megatron)
    else:
        bench.notes.append(megatron.note)
        peaks += megatron_cases(bench, megatron, apply_only)
        if not apply_only:
            peaks += megatron_matrix_cases(bench, megatron)
    openssh = openssh_series(bench, mirrors, debian)
    if isinstance(openssh, str):
        skip(bench, "openssh quilt series", openssh)
    else:
        series, pristine = openssh
        bench.notes.append(series.note)
        if series.left_out:
            bench.notes.append("openssh patches left out (patchmgr does not read them): " + "; ".join(series.left_out))
        peaks += openssh_cases(bench, series, pristine, apply_only)
    if peaks:
        worst, where = max(peaks)
        bench.goals.append(
            (f"peak memory < {MEMORY_GOAL} MiB in every real case", f"{worst:.0f} MiB ({where})", worst < MEMORY_GOAL)
        )


def skip(bench: Bench, case: str, why: str) -> None:
    bench.add(Row(case, "skipped", None, note=f"skipped: {why}"))
    print(f"  skipped {case}: {why}", flush=True)


def cold_env(bench: Bench, cache: Path) -> dict[str, str]:
    shutil.rmtree(cache, ignore_errors=True)
    return bench.env({"PATCHMGR_CACHE": str(cache)})


@dataclass
class Sample:
    """One variant's runs: wall and CPU seconds of each, and the peak RSS of them all (git included)."""

    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    peak: float = 0.0

    def add(self, wall: float, cpu: float, rss: float) -> None:
        self.walls.append(wall)
        self.cpus.append(cpu)
        self.peak = max(self.peak, rss)

    @property
    def wall(self) -> float:
        return statistics.median(self.walls)

    @property
    def cpu(self) -> float:
        return statistics.median(self.cpus)

    def row(self, case: str, variant: str, checks: int | None, note: str) -> Row:
        runs = f"median of {len(self.walls)}" + (f" (min {min(self.walls):.3f} s)" if len(self.walls) > 1 else "")
        return Row(case, variant, self.wall, checks, self.peak, f"{runs}; CPU {self.cpu:.2f} s; {note}")


def ratio_goal(bench: Bench, goal: str, mine: Sample, theirs: Sample, limit: float) -> None:
    ratio = mine.wall / theirs.wall
    met = ratio <= limit
    cpu = mine.cpu / theirs.cpu
    said = f"{ratio:.2f}x ({mine.wall:.3f} s vs {theirs.wall:.3f} s, same run; CPU {cpu:.2f}x)"
    print(f"  {'met' if met else 'NOT met'}: {goal}: {said}", flush=True)
    bench.goals.append((goal, said, met))


def checked(code: int, out: str, what: str, allowed: tuple[int, ...] = (0,)) -> None:
    if code not in allowed:
        raise RuntimeError(f"{what} failed (exit {code}): {out.strip()[-2000:]}")


def git_env() -> dict[str, str]:
    """git's environment for the baselines: the benchmark's, with a committer (``git am`` makes commits)."""
    who = {"GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@bench.invalid"}
    return {**os.environ, **synth.GIT_ENV, **who}


def run_steps(sample: Sample, steps: list[list[str]], cwd: Path | None = None, env: dict | None = None) -> None:
    """Run processes one after another, each to a zero exit, as one run of ``sample``."""
    started, peak, cpu = time.perf_counter(), 0.0, 0.0
    for args in steps:
        code, out, _wall, rss, used = spawn_cpu(args, env=env or git_env(), cwd=cwd)
        checked(code, out, " ".join(args[:4]))
        peak, cpu = max(peak, rss), cpu + used
    sample.add(time.perf_counter() - started, cpu, peak)


def run_patchmgr(bench: Bench, sample: Sample, args: list[str], root: Path, env: dict, allowed=(0,)) -> str:
    code, out, wall, rss, cpu = spawn_cpu([sys.executable, "-m", "patchmgr", *args, "--root", str(root)], env=env)
    checked(code, out, f"patchmgr {args[0]}", allowed)
    sample.add(wall, cpu, rss)
    return out


# -- Megatron-LM: a and b ---------------------------------------------------------------------------------------
def megatron_cases(bench: Bench, series: RealSeries, apply_only: bool = False) -> list[tuple[float, str]]:
    label = f"{len(series.ids)} real Megatron-LM commits"
    cache = bench.cache / "real" / "patchmgr-cache-megatron"
    status, loop, applied, am = Sample(), Sample(), Sample(), Sample()
    target = ["--target", "megatron", *series.source()]
    with tempfile.TemporaryDirectory(prefix="pm-bench-real-") as tmp:
        if apply_only:  # the cache apply starts from: what a cold status fills, made once and not measured
            run_patchmgr(bench, Sample(), ["status", *target], series.project, cold_env(bench, cache))
        for number in range(rounds_of(bench)):  # interleaved: the cold status, git's loop, apply, git am
            if apply_only:
                apply_round(bench, series, target, cache, Path(tmp), number, applied, am)
                continue
            run_patchmgr(bench, status, ["status", *target], series.project, cold_env(bench, cache))
            clone = str(Path(tmp) / f"loop{number}")
            checks = [
                step
                for patch in series.patch_files
                for step in (
                    ["git", "-C", clone, "apply", "--check", str(patch)],
                    ["git", "-C", clone, "apply", str(patch)],
                )
            ]
            run_steps(
                loop,
                [
                    ["git", "clone", "-q", "--no-checkout", str(series.repo), clone],
                    ["git", "-C", clone, "checkout", "-q", "--detach", series.pin],
                    *checks,
                ],
            )
            apply_round(bench, series, target, cache, Path(tmp), number, applied, am)
    n = len(series.ids)
    if apply_only:
        bench.add(applied.row("real: apply", f"patchmgr apply --into ({label})", None, "cache warm from a status"))
        bench.add(am.row("real: apply", "git: clone + checkout + git am", None, "one commit per patch"))
        ratio_goal(bench, f"apply of {label} <= {APPLY_GOAL:g}x git am", applied, am, APPLY_GOAL)
        return [(applied.peak, "megatron apply")]
    bench.add(status.row("real: status cold", f"patchmgr status, cold cache ({label})", n, "fetches the pin"))
    bench.add(
        loop.row(
            "real: status cold",
            "git: clone + checkout + apply --check loop",
            n,
            "each patch checked, then applied for the next (the series stacks)",
        )
    )
    bench.add(applied.row("real: apply", f"patchmgr apply --into ({label})", None, "cache warm from the status"))
    bench.add(am.row("real: apply", "git: clone + checkout + git am", None, "one commit per patch"))
    ratio_goal(bench, f"cold status of {label} <= {STATUS_GOAL:g}x a git apply --check loop", status, loop, STATUS_GOAL)
    ratio_goal(bench, f"apply of {label} <= {APPLY_GOAL:g}x git am", applied, am, APPLY_GOAL)
    return [(status.peak, "megatron status cold"), (applied.peak, "megatron apply")]


def apply_round(
    bench: Bench,
    series: RealSeries,
    target: list[str],
    cache: Path,
    tmp: Path,
    number: int,
    applied: Sample,
    am: Sample,
) -> None:
    """One round of apply beside git am: apply with the cache a status filled (the pin's trees and the series'
    files), into its own folder; then a fresh clone, a checkout of the pin and ``git am`` of the same patches."""
    into = str(tmp / f"apply{number}")
    warm = bench.env({"PATCHMGR_CACHE": str(cache)})
    run_patchmgr(bench, applied, ["apply", *target, "--into", into], series.project, warm)
    clone = str(tmp / f"am{number}")
    run_steps(
        am,
        [
            ["git", "clone", "-q", "--no-checkout", str(series.repo), clone],
            ["git", "-C", clone, "checkout", "-q", "--detach", series.pin],
            ["git", "-C", clone, "am", "-q", "--whitespace=nowarn", *map(str, series.patch_files)],
        ],
    )
    for folder in tmp.iterdir():
        shutil.rmtree(folder, ignore_errors=True)


# -- Megatron-LM: the matrix at scale (issue 39) ---------------------------------------------------------------
def megatron_matrix_cases(bench: Bench, series: RealSeries) -> list[tuple[float, str]]:
    from patchmgr.history.matrix_cache import row_keys
    from patchmgr.model.patchfile import read_patch

    cache = bench.cache / "real" / "patchmgr-cache-megatron-matrix"
    args = ["matrix", "--target", "megatron", "--refs", MEGATRON_REFS, "--include-older", "--json", *series.source()]
    cold, naive, edited, warm = Sample(), Sample(), Sample(), Sample()
    edit_at = len(series.ids) // 2
    path = series.patch_files[edit_at]
    original = path.read_bytes()
    before = [read_patch(p, "megatron", pid) for p, pid in zip(series.patch_files, series.ids, strict=True)]
    after = [*before[:edit_at], before[edit_at]]
    columns: list[str] = []
    with tempfile.TemporaryDirectory(prefix="pm-bench-matrix-") as tmp:
        for number in range(matrix_rounds(bench)):  # interleaved: patchmgr cold, the naive loop, edited, warm
            out = run_patchmgr(bench, cold, args, series.project, cold_env(bench, cache), (0, 1))
            (matrix,) = json.loads(out[out.index("{") :])["upstreams"]
            columns = [c["commit"] for c in matrix["columns"]]
            naive_loop(naive, series, columns, Path(tmp) / f"naive{number}")
            warm_env = bench.env({"PATCHMGR_CACHE": str(cache)})
            edited_data = original.replace(b"\n\n", b"\n\nEdited for the benchmark.\n\n", 1)
            try:
                path.write_bytes(edited_data)
                after[edit_at] = read_patch(path, "megatron", series.ids[edit_at])
                run_patchmgr(bench, edited, args, series.project, warm_env, (0, 1))
                run_patchmgr(bench, warm, args, series.project, warm_env, (0, 1))
            finally:
                path.write_bytes(original)
            for folder in Path(tmp).iterdir():
                shutil.rmtree(folder, ignore_errors=True)
    rows = len(series.ids)
    cells = rows * len(columns)
    affected = sum(a != b for a, b in zip(row_keys(before), row_keys([*after, *before[edit_at + 1 :]]), strict=True))
    label = f"{rows} real Megatron-LM commits x {len(columns)} columns"
    bench.add(cold.row("real: matrix megatron", f"patchmgr matrix, cold ({label})", cells, f"--refs '{MEGATRON_REFS}'"))
    bench.add(
        naive.row(
            "real: matrix megatron",
            "naive: clone, then per column checkout + apply --check loop",
            cells,
            "the series stacks",
        )
    )
    bench.add(
        edited.row(
            "real: matrix megatron",
            f"patchmgr matrix after one patch's message is edited ({series.ids[edit_at]})",
            cells,
            f"{affected} of {rows} rows stand on it",
        )
    )
    bench.add(warm.row("real: matrix megatron", "patchmgr matrix, warm", cells, "nothing changed"))
    ratio_goal(
        bench, f"cold matrix of {label} <= {MATRIX_NAIVE_GOAL:g}x the naive loop", cold, naive, MATRIX_NAIVE_GOAL
    )
    ratio_goal(bench, f"warm matrix of {label} <= {WARM_GOAL:g}x the naive loop", warm, naive, WARM_GOAL)
    # the rows that stand on the edited patch cost what they cost cold; the others what they cost warm
    allowed = warm.wall + (cold.wall - warm.wall) * affected / rows
    met = edited.wall <= allowed
    said = (
        f"{edited.wall:.3f} s against {allowed:.3f} s (warm {warm.wall:.3f} s + {affected}/{rows} of the cold "
        f"{cold.wall:.3f} s beyond it), same run"
    )
    print(f"  {'met' if met else 'NOT met'}: matrix after editing one patch: {said}", flush=True)
    bench.goals.append((f"matrix of {label} after editing one patch's message <= its affected rows' cost", said, met))
    return [(cold.peak, "megatron matrix cold"), (edited.peak, "megatron matrix edited")]


def naive_loop(sample: Sample, series: RealSeries, columns: list[str], clone: Path) -> None:
    """A fresh clone, then at each column a checkout and the series' ``git apply --check`` loop, each patch that
    passes applied for the next (one shell, so the processes are git's): one run of ``sample``."""
    script = (
        'set -e; git clone -q --no-checkout "$0" "$1"; cd "$1"; shift 2; cols="$1"; shift; '
        "for c in $cols; do git checkout -q -f --detach $c; git clean -fdqx; "
        'for p in "$@"; do if git apply --check "$p" 2>/dev/null; then git apply "$p"; fi; done; done'
    )
    args = ["bash", "-c", script, str(series.repo), str(clone), " ".join(columns), *map(str, series.patch_files)]
    code, out, wall, rss, cpu = spawn_cpu(args, env=git_env())
    checked(code, out, "the naive matrix loop")
    sample.add(wall, cpu, rss)


# -- openssh: c, d and e ------------------------------------------------------------------------------------------
def openssh_cases(
    bench: Bench, series: RealSeries, pristine: Path, apply_only: bool = False
) -> list[tuple[float, str]]:
    label = f"Debian openssh, {len(series.ids)} patches"
    cache = bench.cache / "real" / "patchmgr-cache-openssh"
    peaks = [] if apply_only else openssh_matrix(bench, series, label, cache)
    return peaks + openssh_apply(bench, series, pristine, label, cache)


def openssh_matrix(bench: Bench, series: RealSeries, label: str, cache: Path) -> list[tuple[float, str]]:
    # d and e first: the matrix cold, the whole one and the half one in turn
    half_patches = series.ids[: max(1, len(series.ids) // 2)]
    half = half_project(series, half_patches)
    whole_run, half_run = Sample(), Sample()
    sizes = {}
    for _ in range(matrix_rounds(bench)):
        for project, sample, which in ((series.project, whole_run, "whole"), (half, half_run, "half")):
            args = ["matrix", "--target", "openssh", "--refs", "V_*", "--json", *series.source()]
            if which == "half":
                args += ["--since", half_since(series)]
            out = run_patchmgr(bench, sample, args, project, cold_env(bench, cache), (0, 1))
            (matrix,) = json.loads(out[out.index("{") :])["upstreams"]
            sizes[which] = (len(matrix["columns"]), len(matrix["patches"]))
    (columns, rows), (half_columns, half_rows) = sizes["whole"], sizes["half"]
    cells, half_cells = columns * rows, half_columns * half_rows
    bench.add(whole_run.row("real: matrix", f"{label} x {columns} columns, cold", cells, "the pin among the columns"))
    bench.add(half_run.row("real: matrix", f"half: {half_rows} patches x {half_columns} columns, cold", half_cells, ""))
    whole, small = whole_run.wall, half_run.wall
    met = whole < MATRIX_GOAL
    said = f"{whole:.3f} s (CPU {whole_run.cpu:.2f} s)"
    print(f"  {'met' if met else 'NOT met'}: matrix {said} cold (goal {MATRIX_GOAL:g} s)", flush=True)
    bench.goals.append((f"matrix of {label} x {columns} columns < {MATRIX_GOAL:g} s (cold)", said, met))
    per_cell = (whole / cells) / (small / half_cells)
    per_cpu = (whole_run.cpu / cells) / (half_run.cpu / half_cells)
    linear = per_cell <= LINEAR_GOAL
    print(f"  {'met' if linear else 'NOT met'}: cost per cell, whole / half: {per_cell:.2f}x (CPU {per_cpu:.2f}x)")
    bench.goals.append(
        (
            f"matrix cost linear in patches x columns: per cell at {cells} cells <= {LINEAR_GOAL:g}x at {half_cells}",
            f"{per_cell:.2f}x ({whole / cells * 1000:.1f} ms vs {small / half_cells * 1000:.1f} ms per cell; "
            f"CPU {per_cpu:.2f}x)",
            linear,
        )
    )
    return [(whole_run.peak, "openssh matrix"), (half_run.peak, "openssh matrix, half")]


def openssh_apply(bench: Bench, series: RealSeries, pristine: Path, label: str, cache: Path) -> list[tuple[float, str]]:
    """c: apply beside quilt push -a."""
    if not quilt_ready():
        skip(bench, "real: apply quilt", "quilt is not installed (apt-get install quilt)")
        return []
    applied, quilted = Sample(), Sample()
    target = ["--target", "openssh", *series.source()]
    warm = bench.env({"PATCHMGR_CACHE": str(cache)})
    with tempfile.TemporaryDirectory(prefix="pm-bench-quilt-") as tmp:
        run_patchmgr(bench, Sample(), ["status", *target], series.project, warm, (0, 1))  # the pin in the cache
        for number in range(rounds_of(bench)):
            into = str(Path(tmp) / f"apply{number}")
            run_patchmgr(bench, applied, ["apply", *target, "--into", into], series.project, warm)
            copy = Path(tmp) / f"quilt{number}"
            quilt_env = {**git_env(), "QUILT_PATCHES": "debian/patches"}
            quilt_run(quilted, pristine, copy, quilt_env)
            for folder in Path(tmp).iterdir():
                shutil.rmtree(folder, ignore_errors=True)
    bench.add(applied.row("real: apply quilt", f"patchmgr apply --into ({label})", None, "cache warm"))
    bench.add(
        quilted.row(
            "real: apply quilt", "quilt push -a on a fresh copy of the pristine tree", None, "the copy (cp -a) counted"
        )
    )
    ratio_goal(bench, f"apply of {label} <= {APPLY_GOAL:g}x quilt push -a", applied, quilted, APPLY_GOAL)
    return [(applied.peak, "openssh apply")]


def quilt_run(sample: Sample, pristine: Path, copy: Path, env: dict) -> None:
    """A fresh copy of the pristine tree, then ``quilt push -a`` in it: one run of ``sample``."""
    started = time.perf_counter()
    code, out, _wall, rss_copy, cpu_copy = spawn_cpu(["cp", "-a", str(pristine), str(copy)], env=env)
    checked(code, out, "cp -a")
    code, out, _wall, rss, cpu = spawn_cpu(["quilt", "--quiltrc", "/dev/null", "push", "-a", "-q"], env=env, cwd=copy)
    checked(code, out, "quilt push -a")
    sample.add(time.perf_counter() - started, cpu_copy + cpu, max(rss, rss_copy))


def half_project(series: RealSeries, ids: tuple[str, ...]) -> Path:
    """A project with the first ``ids`` of the series only (the same patch files), beside the whole one."""
    from real_series import write_manifest

    half = series.project.parent / f"{series.project.name}-half"
    shutil.rmtree(half, ignore_errors=True)
    (half / "patches" / series.name).mkdir(parents=True)
    for pid in ids:
        shutil.copyfile(
            series.project / "patches" / series.name / f"{pid}.patch", half / "patches" / series.name / f"{pid}.patch"
        )
    write_manifest(half, series.name, series.pin, list(ids), {"tag-pattern": "V_*"})
    return half


def half_since(series: RealSeries) -> str:
    """The tag after which half of the twelve columns remain: the sixth release after the pin."""
    from fixtures import git
    from real_series import OPENSSH_COLUMNS, OPENSSH_PIN_TAG

    tags = git("tag", "-l", "V_*", "--sort=v:refname", cwd=series.repo).split()
    start = tags.index(OPENSSH_PIN_TAG)
    return tags[start + OPENSSH_COLUMNS // 2]
