"""Real series at real sizes (issue 38), whole CLI processes beside git (or quilt) alone, side by side in one run:

- Megatron-LM, 300 consecutive real commits as a ``git format-patch`` series: ``status`` with a cold cache beside
  a fresh clone + checkout + a ``git apply --check`` loop (each patch checked, then applied for the next one:
  the series stacks); ``apply --into`` beside a fresh clone + checkout + ``git am`` of the same patches.
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
import tempfile
import time
from pathlib import Path

import synth
from fixtures import Bench, Row, patchmgr, spawn
from real_series import RealSeries, fresh_copy, megatron_series, openssh_series, quilt_ready

STATUS_GOAL = 2.0  # cold status at most this many times the git apply --check loop
APPLY_GOAL = 1.0  # apply at most git am's (quilt push -a's) time
MATRIX_GOAL = 30.0  # seconds, cold: 53 patches x 12 release columns
LINEAR_GOAL = 1.5  # the cost per cell of the whole matrix at most this many times the half-size one's
MEMORY_GOAL = 300  # MiB, peak of every patchmgr process of these cases (git included)
ROUNDS = {"full": 3, "tiny": 1}  # interleaved rounds of each comparison ($PATCHMGR_BENCH_ROUNDS sets another)


def rounds_of(bench: Bench) -> int:
    return int(os.environ.get("PATCHMGR_BENCH_ROUNDS") or ROUNDS[bench.size])


def measure_real(bench: Bench, mirrors: Path, debian: Path | None) -> None:
    peaks: list[tuple[float, str]] = []
    megatron = megatron_series(bench, mirrors, bench.cfg["real_patches"])
    if isinstance(megatron, str):
        skip(bench, "megatron series", megatron)
    else:
        bench.notes.append(megatron.note)
        peaks += megatron_cases(bench, megatron)
    openssh = openssh_series(bench, mirrors, debian)
    if isinstance(openssh, str):
        skip(bench, "openssh quilt series", openssh)
    else:
        series, pristine = openssh
        bench.notes.append(series.note)
        if series.left_out:
            bench.notes.append("openssh patches left out (patchmgr does not read them): " + "; ".join(series.left_out))
        peaks += openssh_cases(bench, series, pristine)
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


def ratio_goal(bench: Bench, goal: str, mine: float, theirs: float, limit: float) -> None:
    ratio = mine / theirs
    met = ratio <= limit
    print(f"  {'met' if met else 'NOT met'}: {goal}: {ratio:.2f}x ({mine:.3f} s vs {theirs:.3f} s)", flush=True)
    bench.goals.append((goal, f"{ratio:.2f}x ({mine:.3f} s vs {theirs:.3f} s, same run)", met))


def checked(code: int, out: str, what: str, allowed: tuple[int, ...] = (0,)) -> None:
    if code not in allowed:
        raise RuntimeError(f"{what} failed (exit {code}): {out.strip()[-2000:]}")


def git_env() -> dict[str, str]:
    """git's environment for the baselines: the benchmark's, with a committer (``git am`` makes commits)."""
    who = {"GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@bench.invalid"}
    return {**os.environ, **synth.GIT_ENV, **who}


def run_steps(steps: list[list[str]], cwd: Path | None = None) -> tuple[float, float]:
    """Run processes one after another, each to a zero exit: (wall seconds of them all, peak RSS in MB)."""
    started, peak = time.perf_counter(), 0.0
    for args in steps:
        code, out, _wall, rss = spawn(args, env=git_env(), cwd=cwd)
        checked(code, out, " ".join(args[:4]))
        peak = max(peak, rss)
    return time.perf_counter() - started, peak


# -- Megatron-LM: a and b ---------------------------------------------------------------------------------------
def megatron_cases(bench: Bench, series: RealSeries) -> list[tuple[float, str]]:
    label = f"{len(series.ids)} real Megatron-LM commits"
    cache = bench.cache / "real" / "patchmgr-cache-megatron"
    rounds = rounds_of(bench)
    status, loop, peak_status, peak_loop = [], [], 0.0, 0.0
    applied, am, peak_apply, peak_am = [], [], 0.0, 0.0
    with tempfile.TemporaryDirectory(prefix="pm-bench-real-") as tmp:
        for number in range(rounds):  # interleaved: each round the cold status, then git's loop, then apply, am
            code, out, wall, rss = patchmgr(
                bench,
                "status",
                "--target",
                "megatron",
                *series.source(),
                root=series.project,
                env=cold_env(bench, cache),
            )
            checked(code, out, "cold status")
            status.append(wall)
            peak_status = max(peak_status, rss)
            clone = Path(tmp) / f"loop{number}"
            wall, rss = run_steps(
                [
                    ["git", "clone", "-q", "--no-checkout", str(series.repo), str(clone)],
                    ["git", "-C", str(clone), "checkout", "-q", "--detach", series.pin],
                    *(
                        step
                        for patch in series.patch_files
                        for step in (
                            ["git", "-C", str(clone), "apply", "--check", str(patch)],
                            ["git", "-C", str(clone), "apply", str(patch)],
                        )
                    ),
                ]
            )
            loop.append(wall)
            peak_loop = max(peak_loop, rss)
            # apply with the cache the status filled (the pin's files fetched), into a folder of its own
            code, out, wall, rss = patchmgr(
                bench,
                "apply",
                "--target",
                "megatron",
                "--into",
                str(Path(tmp) / f"apply{number}"),
                *series.source(),
                root=series.project,
                env=bench.env({"PATCHMGR_CACHE": str(cache)}),
            )
            checked(code, out, "apply")
            applied.append(wall)
            peak_apply = max(peak_apply, rss)
            clone = Path(tmp) / f"am{number}"
            wall, rss = run_steps(
                [
                    ["git", "clone", "-q", "--no-checkout", str(series.repo), str(clone)],
                    ["git", "-C", str(clone), "checkout", "-q", "--detach", series.pin],
                    ["git", "-C", str(clone), "am", "-q", "--whitespace=nowarn", *map(str, series.patch_files)],
                ]
            )
            am.append(wall)
            peak_am = max(peak_am, rss)
            for folder in Path(tmp).iterdir():
                shutil.rmtree(folder, ignore_errors=True)
    median = statistics.median
    of = f"median of {rounds}, interleaved"
    bench.add(
        Row(
            "real: status cold",
            f"patchmgr status, cold cache ({label})",
            median(status),
            len(series.ids),
            peak_status,
            f"{of}; fetches the pin from the clone",
        )
    )
    bench.add(
        Row(
            "real: status cold",
            "git: clone + checkout + apply --check loop",
            median(loop),
            len(series.ids),
            peak_loop,
            f"{of}; each patch checked, then applied for the next",
        )
    )
    bench.add(
        Row(
            "real: apply",
            f"patchmgr apply --into ({label})",
            median(applied),
            None,
            peak_apply,
            f"{of}; cache warm from the status",
        )
    )
    bench.add(
        Row("real: apply", "git: clone + checkout + git am", median(am), None, peak_am, f"{of}; one commit per patch")
    )
    ratio_goal(
        bench,
        f"cold status of {label} <= {STATUS_GOAL:g}x a git apply --check loop",
        median(status),
        median(loop),
        STATUS_GOAL,
    )
    ratio_goal(bench, f"apply of {label} <= {APPLY_GOAL:g}x git am", median(applied), median(am), APPLY_GOAL)
    return [(peak_status, "megatron status cold"), (peak_apply, "megatron apply")]


# -- openssh: c, d and e ------------------------------------------------------------------------------------------
def openssh_cases(bench: Bench, series: RealSeries, pristine: Path) -> list[tuple[float, str]]:
    label = f"Debian openssh, {len(series.ids)} patches"
    cache = bench.cache / "real" / "patchmgr-cache-openssh"
    rounds = rounds_of(bench)
    peaks: list[tuple[float, str]] = []
    # d and e first: the matrix cold, the whole one and the half one in turn
    half_patches = series.ids[: max(1, len(series.ids) // 2)]
    half = half_project(series, half_patches)
    whole_walls, half_walls, whole_peak, half_peak, columns = [], [], 0.0, 0.0, 0
    for _ in range(rounds):
        for project, walls, which in ((series.project, whole_walls, "whole"), (half, half_walls, "half")):
            args = ["matrix", "--target", "openssh", "--refs", "V_*", "--json", *series.source()]
            if which == "half":
                args += ["--since", half_since(series)]
            code, out, wall, rss = patchmgr(bench, *args, root=project, env=cold_env(bench, cache))
            checked(code, out, f"matrix ({which})", (0, 1))
            walls.append(wall)
            doc = json.loads(out[out.index("{") :])
            (matrix,) = doc["upstreams"]
            if which == "whole":
                whole_peak, columns = max(whole_peak, rss), len(matrix["columns"])
            else:
                half_peak, half_columns = max(half_peak, rss), len(matrix["columns"])
    median = statistics.median
    whole, small = median(whole_walls), median(half_walls)
    cells, half_cells = columns * len(series.ids), half_columns * len(half_patches)
    of = f"median of {rounds} cold runs"
    bench.add(Row("real: matrix", f"{label} x {columns} columns, cold", whole, cells, whole_peak, of))
    bench.add(
        Row(
            "real: matrix",
            f"half: {len(half_patches)} patches x {half_columns} columns, cold",
            small,
            half_cells,
            half_peak,
            of,
        )
    )
    met = whole < MATRIX_GOAL
    print(f"  {'met' if met else 'NOT met'}: matrix {whole:.3f} s cold (goal {MATRIX_GOAL:g} s)", flush=True)
    bench.goals.append((f"matrix of {label} x {columns} columns < {MATRIX_GOAL:g} s (cold)", f"{whole:.3f} s", met))
    per_cell = (whole / cells) / (small / half_cells)
    linear = per_cell <= LINEAR_GOAL
    print(f"  {'met' if linear else 'NOT met'}: cost per cell, whole / half: {per_cell:.2f}x", flush=True)
    bench.goals.append(
        (
            f"matrix cost linear in patches x columns: per cell at {cells} cells <= {LINEAR_GOAL:g}x at {half_cells}",
            f"{per_cell:.2f}x ({whole / cells * 1000:.1f} ms vs {small / half_cells * 1000:.1f} ms per cell)",
            linear,
        )
    )
    peaks += [(whole_peak, "openssh matrix"), (half_peak, "openssh matrix, half")]
    # c: apply beside quilt push -a
    if not quilt_ready():
        skip(bench, "real: apply quilt", "quilt is not installed (apt-get install quilt)")
        return peaks
    applied, quilted, peak_apply, peak_quilt = [], [], 0.0, 0.0
    with tempfile.TemporaryDirectory(prefix="pm-bench-quilt-") as tmp:
        code, out, _wall, _rss = patchmgr(
            bench,
            "status",
            "--target",
            "openssh",
            *series.source(),
            root=series.project,
            env=bench.env({"PATCHMGR_CACHE": str(cache)}),
        )
        for number in range(rounds):
            code, out, wall, rss = patchmgr(
                bench,
                "apply",
                "--target",
                "openssh",
                "--into",
                str(Path(tmp) / f"apply{number}"),
                *series.source(),
                root=series.project,
                env=bench.env({"PATCHMGR_CACHE": str(cache)}),
            )
            checked(code, out, "apply (openssh)")
            applied.append(wall)
            peak_apply = max(peak_apply, rss)
            copy = Path(tmp) / f"quilt{number}"
            started = time.perf_counter()
            fresh_copy(pristine, copy)
            code, out, _wall, rss = spawn(
                ["quilt", "push", "-a", "-q"], env={**git_env(), "QUILT_PATCHES": "debian/patches"}, cwd=copy
            )
            checked(code, out, "quilt push -a")
            quilted.append(time.perf_counter() - started)
            peak_quilt = max(peak_quilt, rss)
            for folder in Path(tmp).iterdir():
                shutil.rmtree(folder, ignore_errors=True)
    of = f"median of {rounds}, interleaved"
    bench.add(
        Row(
            "real: apply quilt",
            f"patchmgr apply --into ({label})",
            median(applied),
            None,
            peak_apply,
            f"{of}; cache warm",
        )
    )
    bench.add(
        Row(
            "real: apply quilt",
            "quilt push -a on a fresh copy of the pristine tree",
            median(quilted),
            None,
            peak_quilt,
            f"{of}; the copy (cp -a) counted",
        )
    )
    ratio_goal(
        bench, f"apply of {label} <= {APPLY_GOAL:g}x quilt push -a", median(applied), median(quilted), APPLY_GOAL
    )
    peaks.append((peak_apply, "openssh apply"))
    return peaks


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
