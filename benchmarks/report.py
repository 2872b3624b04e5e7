"""The report: the machine's facts, the figures table, and the one writer of benchmarks/RESULTS.md."""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

from fixtures import ROOT, Bench, git, mb


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
            f"| {row.case} | {row.variant} | {wall} | {row.checks or ''} | {rate} | {mb(row.rss_mb)} "
            f"| {ratio} | {row.note} |"
        )
    return "\n".join(lines)


KEPT = "<!-- kept by run.py: what follows is written by hand -->"

ALONE = {
    # the cases that run alone (--only NAME), each with its own section of the results: title, and what to know
    "big-patch": ("Hunk placement at scale (run alone)", "Both rows come from this one run."),
    "matrix": ("Compatibility matrix (run alone)", "Checks: cells (columns x patches)."),
    "real": (
        "Real series at real sizes (run alone)",
        "patchmgr and git (or quilt) are measured side by side in this one run, interleaved in rounds.",
    ),
    "real-apply": (
        "Real series: apply alone (run alone)",
        "The apply rows of the real cases only; patchmgr and git am (or quilt) side by side in this one run, "
        "interleaved in rounds.",
    ),
    "growth": (
        "Growth with the series: 300 and 1,000 real patches (run alone)",
        "Each series is measured in this one run; the last notes are the growth table.",
    ),
    "smoke": (
        "Smoke, batched beside one process per patch (run alone)",
        "Both ways are measured in this one run, interleaved in rounds; rows: the median round's patched plus "
        "unpatched wall time of each way.",
    ),
    "series": (
        "Status of 300 real commits as a series, beside git cherry (run alone)",
        "Both are measured in this one run, interleaved; the goal is a ratio, so the machine's speed cancels out.",
    ),
    "evidence": (
        "Evidence at real sizes: status --against beside git cherry, a cold status's fetches, a whole-series bisect "
        "(run alone)",
        "patchmgr and git are measured side by side in this one run; the goals are ratios or per-patch times.",
    ),
    "startup": (
        "Start-up (run alone)",
        "Today's code (the baseline commit, from git) and the working tree are measured in this one run, "
        "interleaved; the goals are ratios, so the machine's speed cancels out.",
    ),
}


def markers(name: str) -> tuple[str, str]:
    return f"<!-- {name}: written by run.py --only {name} -->", f"<!-- /{name} -->"


def goals_table(bench: Bench) -> str:
    rows = "\n".join(f"| {goal} | {measured} | {'met' if ok else '**missed**'} |" for goal, measured, ok in bench.goals)
    return f"| goal | measured | |\n|---|---|---|\n{rows}"


def notes_list(bench: Bench) -> str:
    return "\n".join(f"- {note}" for note in bench.notes)


def whole_run(bench: Bench, facts: dict[str, str]) -> str:
    """The results of a full run: the machine, the goals, the figures and the notes."""
    return f"""# patchmgr benchmark results

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

{goals_table(bench)}

## Figures

Wall times are whole CLI processes unless the variant says in-process; peak RSS is the
largest resident set of the process and of every process it started (git included).

{table(bench)}

## Notes

{notes_list(bench)}
"""


def alone_section(bench: Bench, facts: dict[str, str], name: str) -> str:
    """The section of one case run alone, between its markers."""
    title, remark = ALONE[name]
    start, end = markers(name)
    notes = f"\n{notes_list(bench)}\n" if bench.notes else ""
    return f"""{start}
## {title}

Made by `python benchmarks/run.py --size {bench.size} --only {name}` on {facts["date"]}, patchmgr
{facts["commit"]}, {facts["nproc"]} CPUs ({facts["cpu"]}), load average {bench.load_at_start} at the start
and {facts["load"]} at the end, Python {facts["python"]}, git {facts["git"]}. {remark}

{goals_table(bench)}

{table(bench)}
{notes}{end}
"""


def write_results(bench: Bench, path: Path, facts: dict[str, str], only: str | None = None) -> None:
    """The one writer of the results file.

    A full run (``only`` None) rewrites the top and keeps each run-alone section and the hand-written part
    (below ``KEPT``); a case run alone replaces its own section (or adds it before ``KEPT``) and keeps the rest."""
    previous = path.read_text() if path.is_file() else ""
    if only is None:
        text = whole_run(bench, facts)
        for name in ALONE:
            start, end = markers(name)
            if start in previous and end in previous:
                text += "\n" + previous[previous.index(start) : previous.index(end) + len(end)] + "\n"
        if KEPT in previous:
            text += "\n" + previous[previous.index(KEPT) :]
        path.write_text(text)
        return
    section = alone_section(bench, facts, only)
    start, end = markers(only)
    text = previous or "# patchmgr benchmark results\n"
    if start in text and end in text:
        before, rest = text.split(start, 1)
        text = before + section.rstrip("\n") + rest.split(end, 1)[1]
    elif KEPT in text:
        before, after = text.split(KEPT, 1)
        text = before + section + "\n" + KEPT + after
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text)


def report(bench: Bench, results: Path, only: str | None = None) -> int:
    """Print the table and the goals, then write them into ``results`` with the machine's facts."""
    facts = machine()
    print()
    print(table(bench))
    print()
    for goal, measured, ok in bench.goals:
        print(f"{'met   ' if ok else 'MISSED'} {goal}: {measured}")
    results.parent.mkdir(parents=True, exist_ok=True)
    write_results(bench, results, facts, only)
    print(f"\nwrote {results}")
    return 0
