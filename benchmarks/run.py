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
   tags; the goal is 2 s. Then the whole ascend target's matrix (all five upstreams) warm, the baseline
   commit's code (``main``) beside the working tree's, interleaved in one run; the goal is 1 s. Alone:
   ``python benchmarks/run.py --only matrix``.

7. start-up: ``patchmgr --help`` against a bare ``python -c pass`` (interleaved pairs), and
   ``status --target ascend`` warm for the baseline commit (``--baseline``, built from git) beside
   the working tree, in one run. Alone: ``python benchmarks/run.py --only startup``.

8. real series at real sizes (issue 38): 300 consecutive real Megatron-LM commits as a series, cold ``status``
   beside a ``git apply --check`` loop and ``apply`` beside ``git am``; Debian's 53-patch openssh quilt series,
   ``apply`` beside ``quilt push -a``, and its ``matrix`` x 12 release columns cold, at two sizes (cost per cell,
   peak memory); from the local mirrors and the source package, so only alone:
   ``python benchmarks/run.py --only real --mirrors DIR --debian-source DIR`` (``cases_real.py``).
   ``--only real-apply`` runs the two apply comparisons alone (their own section of the results).

9. smoke: the ascend target's CPU smoke, patched and unpatched, warm, from the local mirrors, batched (one
   pytest process per upstream, upstreams side by side) beside one process per patch
   (``PATCHMGR_SMOKE_PER_PATCH=1``), interleaved in one run; minutes, so only alone:
   ``python benchmarks/run.py --only smoke --mirrors ~/mirrors``.

10. growth (issue 39, items 7 and 9): 300 and 1,000 consecutive real Megatron-LM commits as series: ``status``
   checked and read back (with the kept verdict's size), ``apply``, and a 3-column ``matrix``, each its time and
   peak memory, and the growth table: ``python benchmarks/run.py --only growth --mirrors DIR`` (``cases_growth``).

11. series (run alone): ``status`` of 300 consecutive real commits of an upstream as a series, against the
   300th, beside ``git cherry`` over the same range (``cases_series``); the goal is at most 3x. Alone:
   ``python benchmarks/run.py --only series --series-repo CLONE`` (skipped without a repository).

10. evidence (run alone): on the 300 real Megatron-LM commits, ``status --against`` their last commit beside
   ``git cherry``, the fetches and packs of a cold ``status``, and ``bisect`` of the whole series per patch
   (``cases_evidence``). Alone: ``python benchmarks/run.py --only evidence --mirrors DIR``.

The harness is split by what each part does: ``fixtures.py`` (sizes, the run's rows, processes,
the generated histories and project), one ``cases_*.py`` per measured thing, and ``report.py``
(the table and the one writer of the results file).

Peak memory is the largest resident set of the measured process and every process
it waited for (``wait4``'s rusage): patchmgr's git subprocesses count too. Figures go
to stdout as a table and to --results (default benchmarks/RESULTS.md) with the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cases_apply import measure_apply  # noqa: E402
from cases_big_patch import inner_big_patch, measure_big_patch  # noqa: E402
from cases_evidence import measure_evidence  # noqa: E402
from cases_growth import measure_growth  # noqa: E402
from cases_real import measure_real  # noqa: E402
from cases_series import SERIES_REPO_ENV, measure_series  # noqa: E402
from cases_smoke import measure_smoke  # noqa: E402
from cases_startup import BASELINE, measure_startup  # noqa: E402
from cases_status import ascend_status, measure_bisect, measure_matrix, measure_status  # noqa: E402
from cases_sweep import inner_sweep, measure_sweep  # noqa: E402
from fixtures import HERE, SIZES, Bench, known_upstreams, mb, prepare, sources  # noqa: E402
from report import ALONE, report  # noqa: E402


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
        "--series-repo",
        type=Path,
        help=f"a real upstream git repository (a clone of openssh-portable, say) whose 300 consecutive commits are "
        f"the series of the 'series' case; default ${SERIES_REPO_ENV}; without one the case is skipped",
    )
    parser.add_argument(
        "--only",
        choices=sorted(ALONE),
        help="run one case alone (big-patch, smoke and startup need no generated history); its section of "
        "--results is updated, the rest of the file is kept",
    )
    parser.add_argument(
        "--baseline", default=BASELINE, help=f"the commit the start-up case compares with (default {BASELINE})"
    )
    parser.add_argument(
        "--debian-source",
        type=Path,
        default=Path(os.environ["PATCHMGR_BENCH_DEBIAN"]) if os.environ.get("PATCHMGR_BENCH_DEBIAN") else None,
        help="folder holding Debian's openssh 9.2p1 source package (its .debian.tar.xz and orig tarball) for "
        "--only real; default $PATCHMGR_BENCH_DEBIAN",
    )
    parser.add_argument("--inner", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    bench = Bench(args.size, SIZES[args.size], args.cache.resolve())
    bench.cache.mkdir(parents=True, exist_ok=True)
    if args.inner in ("sweep-walk", "sweep-series"):
        ups = known_upstreams(bench)
        inner_sweep(bench, ups["bench"], args.inner.removeprefix("sweep-"))
        return 0
    if args.inner and args.inner.startswith("big-patch-"):
        inner_big_patch(bench, args.inner.removeprefix("big-patch-"))
        return 0
    if args.only:
        print(f"patchmgr benchmarks, size {args.size}, case {args.only} alone, cache {bench.cache}", flush=True)
        if args.only == "big-patch":
            measure_big_patch(bench)
        elif args.only == "matrix":
            measure_matrix(bench, args.mirrors)
        elif args.only in ("real", "real-apply"):
            measure_real(bench, args.mirrors, args.debian_source, apply_only=args.only == "real-apply")
        elif args.only == "growth":
            measure_growth(bench, args.mirrors)
        elif args.only == "smoke":
            measure_smoke(bench, args.mirrors)
        elif args.only == "series":
            measure_series(bench, args.series_repo)
        elif args.only == "evidence":
            measure_evidence(bench, args.mirrors)
        else:
            measure_startup(bench, args.mirrors, args.baseline)
        return report(bench, args.results, args.only)

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
    measure_startup(bench, args.mirrors, args.baseline)
    patchmgr_rows = [
        r for r in bench.rows if r.rss_mb and not r.variant.startswith(("naive", "git alone", "git apply"))
    ]
    worst = max(patchmgr_rows, key=lambda r: r.rss_mb)
    bench.goals.append(
        (
            "peak memory < 200 MB in every case above (the generated history: at most 200 patches of a few hunks; "
            "the real series of hundreds of patches have goals of their own, --only real and --only growth)",
            f"{mb(worst.rss_mb)} ({worst.case}: {worst.variant})",
            worst.rss_mb < 200,
        )
    )
    return report(bench, args.results)


if __name__ == "__main__":
    sys.exit(main())
