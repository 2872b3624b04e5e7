"""Cases on whole CLI processes over the generated project and the ascend mirrors: status, bisect, matrix."""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from fixtures import (
    ASCEND_MIRRORS,
    ROOT,
    Bench,
    Row,
    Upstream,
    ascend_mirrors,
    ascend_patches,
    git,
    patchmgr,
    prepare,
    sources,
    spawn,
)


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
    mirror_sources, absent = ascend_mirrors(mirrors)
    if absent:
        bench.add(
            Row("status", "ascend target (real upstreams)", None, note=f"skipped: no local mirror {', '.join(absent)}")
        )
        return None
    args = ["--target", "ascend", *mirror_sources]
    cache = bench.cache / "patchmgr-cache-ascend"
    # the first run may fetch the pins from the mirrors and the releases from PyPI; later runs are offline
    warm = bench.env({"PATCHMGR_CACHE": str(cache)}, online=True)
    spawn([sys.executable, "-m", "patchmgr", "status", *args, "--root", str(ROOT)], env=warm)
    return measure_status(
        bench,
        f"ascend target (real upstreams, {ascend_patches()} patches)",
        args,
        ascend_patches(),
        root=ROOT,
        env=bench.env({"PATCHMGR_CACHE": str(cache)}),
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
        raise RuntimeError(f"bisect failed: {out}") from None
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
    measure_matrix_ascend(bench, mirrors)


# -- 6b: the whole ascend target's matrix, today's code beside the working tree -------------
MATRIX_ASCEND_GOAL = 1.0  # seconds, warm: every upstream of the ascend target, the default columns
MATRIX_BASELINE = (
    "d12606a"  # main before issue 29 (release tracking, the matrix cache): the working tree is measured beside it
)


def measure_matrix_ascend(bench: Bench, mirrors: Path, ref: str = MATRIX_BASELINE) -> None:
    """``matrix --target ascend`` warm (all five upstreams, real mirrors), the baseline commit's code (``git archive``)
    and the working tree's, interleaved in one run, each with a cache of its own warmed by one run first."""
    from cases_startup import baseline_tree, old_beside_new, trees_ready

    mirror_sources, absent = ascend_mirrors(mirrors)
    old = None if absent else baseline_tree(bench, ref)
    if old is None:
        why = f"no local mirror {absent[0]}" if absent else f"this clone lacks commit {ref}"
        bench.add(Row("matrix", "ascend target, all upstreams", None, note=f"skipped: {why}"))
        return
    neutral = trees_ready(bench, old)
    # the first run warms each cache: the pins and tags fetched from the mirrors, the cells kept
    runs = old_beside_new(
        bench, old, ["matrix", "--target", "ascend"], mirror_sources, "patchmgr-cache-ascend-matrix", neutral
    )
    new, baseline = runs.median("new"), runs.median("old")
    cells = 0
    args, env = runs.commands["new"]
    code, out, _wall, _rss = spawn([*args, "--json"], env=env, cwd=neutral)
    try:
        doc = json.loads(out[out.index("{") :])
        cells = sum(len(u["columns"]) * len(u["patches"]) for u in doc["upstreams"])
        columns = "; ".join(f"{u['name']} {len(u['columns'])}" for u in doc["upstreams"])
    except (ValueError, KeyError):
        columns = f"(no JSON: exit {code})"
    variants = {"old": f"ascend target, all upstreams, baseline {ref}", "new": "ascend target, all upstreams"}
    runs.add_rows(bench, "matrix", variants, cells or None, " warm runs, interleaved", f"; columns {columns}")
    print(f"  matrix --target ascend: {new:.3f} s warm vs {baseline:.3f} s for {ref}", flush=True)
    bench.notes.append(f"{runs.cpu_note('matrix --target ascend', ref)}; wall {new / baseline:.2f}x")
    bench.goals.append(
        (
            f"matrix --target ascend (all upstreams) < {MATRIX_ASCEND_GOAL:g} s (warm)",
            f"{new:.3f} s (baseline {ref}: {baseline:.3f} s, same run, interleaved)",
            new < MATRIX_ASCEND_GOAL,
        )
    )
