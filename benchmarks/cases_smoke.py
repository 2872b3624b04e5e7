"""Smoke of the ascend target on the CPU, patched and unpatched, warm: batched beside one process per patch.

The ascend target is applied from the local mirrors into a build folder under the cache, then ``patchmgr smoke
--target ascend --device cpu`` runs patched and ``--unpatched`` in two ways, interleaved in rounds (the order
swapped each round, so that neither way always runs on a warmer or quieter machine):

- batched (today's code): one pytest process per upstream, device and side, upstreams side by side, each process
  ended once its junit file is written, the cpu lane probed without importing torch, no installed pytest plugin
  loaded by its entry point;
- per patch (the way before): ``PATCHMGR_SMOKE_PER_PATCH=1``, one pytest process per patch and device, the
  upstreams one after another, the devices probed with torch imported, every installed pytest plugin loaded, each
  process left to its own end.

A warm-up run of each side builds the smoke environments (verl's) and fills the file cache first; it is not
counted. A way's figure is the median over rounds of its patched plus unpatched wall time; its CPU time (user
and system of every process it waited for) is beside it, a figure the machine's load moves little. Both ways
must give every patch the same verdict and reason. The goal (issue 28, item 4): batched at most a third of the
wall time of the way before.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

from fixtures import ROOT, Bench, Row, ascend_mirrors, ascend_patches

ROUNDS = {"full": 3, "tiny": 1}
GOAL = 1 / 3  # batched at most this share of the wall time of one process per patch
WAYS = {"batched": {}, "per patch": {"PATCHMGR_SMOKE_PER_PATCH": "1"}}
SIDES = {"patched": [], "unpatched": ["--unpatched"]}


def _run(args: list[str], env: dict[str, str]) -> tuple[int, str, float, float]:
    """A patchmgr process from the repository root: exit code, stdout, wall seconds, CPU seconds of it and of
    every process it waited for (pytest, git)."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "patchmgr", *args, "--root", str(ROOT)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=ROOT,
    )
    out = proc.stdout.read() if proc.stdout else b""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    return os.waitstatus_to_exitcode(status), out.decode("utf-8", "replace"), wall, usage.ru_utime + usage.ru_stime


def _said(out: str) -> dict[str, tuple[str, str]]:
    """Each patch's verdict and reason from ``smoke --json`` (the seconds pytest says it took left out)."""
    doc = json.loads(out)
    return {p["patch"]: (p["verdict"], re.sub(r"\bin \d+\.\d+s\b", "in Ns", p["reason"])) for p in doc["patches"]}


def measure_smoke(bench: Bench, mirrors: Path) -> None:
    sources, absent = ascend_mirrors(mirrors)
    label = f"ascend target, cpu, patched + unpatched ({ascend_patches()} patches)"
    if absent:
        bench.add(Row("smoke", label, None, note=f"skipped: no local mirror {', '.join(absent)}"))
        return
    cache = bench.cache / "patchmgr-cache-ascend"
    build = bench.cache / "smoke-build-ascend"
    # the first run may fetch the pins and build verl's smoke environment with pip
    online = bench.env({"PATCHMGR_CACHE": str(cache)}, online=True)
    code, out, _, _ = _run(["apply", "--target", "ascend", "--into", str(build), *sources], online)
    if code != 0:
        bench.add(Row("smoke", label, None, note=f"skipped: apply failed (exit {code}): {out[-300:]}"))
        return
    smoke = ["smoke", "--target", "ascend", "--into", str(build), "--device", "cpu", "--json"]
    for side in SIDES.values():  # warm: environments built, files cached; not counted
        _run([*smoke, *side], online)
    walls: dict[str, list[float]] = {way: [] for way in WAYS}
    cpus: dict[str, list[float]] = {way: [] for way in WAYS}
    said: dict[tuple[str, str], dict[str, tuple[str, str]]] = {}
    codes: dict[tuple[str, str], int] = {}
    offline = bench.env({"PATCHMGR_CACHE": str(cache)})
    for round_ in range(ROUNDS[bench.size]):
        order = list(WAYS) if round_ % 2 == 0 else list(reversed(WAYS))
        wall = dict.fromkeys(WAYS, 0.0)
        cpu = dict.fromkeys(WAYS, 0.0)
        for side, extra in SIDES.items():
            for way in order:
                code, out, seconds, used = _run([*smoke, *extra], {**offline, **WAYS[way]})
                wall[way] += seconds
                cpu[way] += used
                said[(way, side)], codes[(way, side)] = _said(out), code
                print(
                    f"  round {round_ + 1} {way:<9} {side:<9} {seconds:8.1f} s wall {used:8.1f} s CPU exit {code}",
                    flush=True,
                )
        for way in WAYS:
            walls[way].append(wall[way])
            cpus[way].append(cpu[way])
    rounds = len(walls["batched"])
    for way in WAYS:
        bench.add(
            Row(
                "smoke",
                f"{label}: {way}",
                statistics.median(walls[way]),
                ascend_patches() * 2,
                None,
                f"median of {rounds} warm rounds (walls {', '.join(f'{w:.1f}' for w in walls[way])} s); "
                f"CPU {statistics.median(cpus[way]):.1f} s; exit {codes[(way, 'patched')]} patched, "
                f"{codes[(way, 'unpatched')]} unpatched",
            )
        )
    same = all(said[("batched", side)] == said[("per patch", side)] for side in SIDES)
    bench.goals.append(("both ways give every patch the same verdict and reason", "same" if same else "differ", same))
    ratio = statistics.median(walls["batched"]) / statistics.median(walls["per patch"])
    cpu_ratio = statistics.median(cpus["batched"]) / statistics.median(cpus["per patch"])
    bench.goals.append(
        (
            "smoke of the ascend target (cpu, patched + unpatched, warm): batched at most 1/3 of one process per patch",
            f"{ratio:.2f} of its wall time (CPU time: {cpu_ratio:.2f})",
            ratio <= GOAL,
        )
    )
    proven = {side: sum(v == "proven" for v, _ in said[("batched", side)].values()) for side in SIDES}
    bench.notes.append(
        f"proven by the batched way: {proven['patched']} patched, {proven['unpatched']} unpatched (each detects its "
        f"bug), of {ascend_patches()}; the build is the ascend target applied from the local mirrors into the "
        f"benchmark's cache ({build.name})"
    )
