"""Growth with the series (issue 39, items 7 and 9): 300 and 1,000 consecutive real Megatron-LM commits as
``git format-patch`` series pinned at their base, each measured as whole CLI processes:

- ``status`` at the pin, checked (no kept verdict), then read back (the verdict kept by the first), and the size
  of that kept verdict in the cache;
- ``apply --into`` a new folder, the cache warm;
- ``matrix`` of the pin, the newest release tag that descends from it, and the branch tip, cold.

The table says how each grows with patches, hunks and MB of patch text, against time and peak memory (the
largest process, git's included). Alone: ``python benchmarks/run.py --only growth --mirrors DIR`` (minutes).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from cases_real import Sample, cold_env, run_patchmgr, skip
from fixtures import Bench, git
from real_series import RealSeries, megatron_series

SIZES = {"full": (300, 1000), "tiny": (10, 30)}  # patches of each series
PEAK_GOAL = 300  # MiB: status, apply and matrix of the largest series
KEPT_GOAL = 5.0  # MB: the kept verdict of the 300-patch series
KEPT_AT = 300


def measure_growth(bench: Bench, mirrors: Path) -> None:
    table = []
    for patches in SIZES[bench.size]:
        series = megatron_series(bench, mirrors, patches)
        if isinstance(series, str):
            skip(bench, f"growth: {patches} patches", series)
            continue
        bench.notes.append(series.note)
        table.append(growth_row(bench, series))
    if not table:
        return
    bench.notes.append(
        "growth: patches | hunks | MB of patch text | status checked (s, MiB) | status kept (s, MiB) | kept verdict "
        "| apply (s, MiB) | matrix, 3 columns (s, MiB)"
    )
    bench.notes += [" | ".join(row) for row in table]


def growth_row(bench: Bench, series: RealSeries) -> list[str]:
    count = len(series.ids)
    hunks = sum(data.count(b"\n@@ ") for data in (path.read_bytes() for path in series.patch_files))
    size_mb = sum(path.stat().st_size for path in series.patch_files) / 1e6
    label = f"growth: {count} patches"
    cache = bench.cache / "growth" / f"patchmgr-cache-{count}"
    target = ["--target", "megatron", *series.source()]
    env = cold_env(bench, cache)
    run_patchmgr(bench, Sample(), ["status", *target], series.project, env, (0, 1))  # fetches the pin: unmeasured
    shutil.rmtree(cache / "verdicts", ignore_errors=True)
    checked, kept, applied, matrix = Sample(), Sample(), Sample(), Sample()
    run_patchmgr(bench, checked, ["status", *target], series.project, env, (0, 1))
    kept_mb = sum(f.stat().st_size for f in (cache / "verdicts").rglob("*") if f.is_file()) / 1e6
    run_patchmgr(bench, kept, ["status", *target], series.project, env, (0, 1))
    with tempfile.TemporaryDirectory(prefix="pm-bench-growth-") as tmp:
        run_patchmgr(bench, applied, ["apply", *target, "--into", str(Path(tmp) / "into")], series.project, env)
    tag = newest_release_after(series)
    if tag is not None:
        matrix_env = cold_env(bench, bench.cache / "growth" / f"patchmgr-cache-matrix-{count}")
        args = ["matrix", *target, "--refs", tag, "--json"]
        run_patchmgr(bench, matrix, args, series.project, matrix_env, (0, 1))
    facts = f"{count} patches, {hunks:,} hunks, {size_mb:.1f} MB"
    bench.add(checked.row(label, "status at the pin, checked (no kept verdict)", count, facts))
    bench.add(kept.row(label, "status at the pin, read back", count, f"{facts}; kept verdict {kept_mb:.2f} MB"))
    bench.add(applied.row(label, "apply --into a new folder", None, f"{facts}; cache warm"))
    if tag is not None:
        bench.add(matrix.row(label, f"matrix: the pin, {tag}, the branch tip; cold", count * 3, facts))
    if count == KEPT_AT or (bench.size == "tiny" and count == SIZES["tiny"][0]):
        bench.goals.append(
            (f"the kept verdict of {count} real patches < {KEPT_GOAL:g} MB", f"{kept_mb:.2f} MB", kept_mb < KEPT_GOAL)
        )
    if count == SIZES[bench.size][-1]:
        peaks = {"status": max(checked.peak, kept.peak), "apply": applied.peak}
        if tag is not None:
            peaks["matrix"] = matrix.peak
        worst = max(peaks, key=lambda name: peaks[name])
        bench.goals.append(
            (
                f"peak memory <= {PEAK_GOAL} MiB for status, apply and matrix of {count} real patches",
                ", ".join(f"{name} {peak:.0f} MiB" for name, peak in peaks.items()),
                peaks[worst] <= PEAK_GOAL,
            )
        )
    shown = (checked, kept, applied, matrix) if tag is not None else (checked, kept, applied)
    cells = [f"{sample.wall:.1f} s, {sample.peak:.0f} MiB" for sample in shown]
    return [str(count), f"{hunks:,}", f"{size_mb:.1f}", cells[0], cells[1], f"{kept_mb:.2f} MB", *cells[2:]]


def newest_release_after(series: RealSeries) -> str | None:
    """The newest ``core_v*`` tag (by version) whose history holds the pin: a column the series can be checked at."""
    tags = git("tag", "-l", "core_v*", "--sort=-version:refname", cwd=series.repo).split()
    for tag in tags:
        try:
            git("merge-base", "--is-ancestor", series.pin, tag, cwd=series.repo)
        except RuntimeError:
            continue
        return tag
    return None
