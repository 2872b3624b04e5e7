"""Hunk placement at scale: one big generated patch read and classified in process, beside git apply --check."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import time
from pathlib import Path

import synth
from fixtures import Bench, Row, run_inner, spawn

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
        mine, rss = run_inner(bench, f"big-patch-{variant}", "big patch")
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
