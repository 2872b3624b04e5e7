"""Start-up: what a command costs before it does anything, today's code beside the working tree, in one run.

``patchmgr --help`` is timed against a bare ``python -c pass`` in interleaved pairs (the goal is a ratio, so
the machine's speed and load cancel out), and ``status --target ascend`` warm is timed for the baseline commit
(built from git with ``git archive``) and the working tree, interleaved, against the local ascend mirrors.
Every process runs in a neutral folder: ``python -m`` puts the current folder first on ``sys.path``, and
from the repository that would load the working tree's ``patchmgr`` for both.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

from fixtures import ROOT, Bench, Row, ascend_mirrors, ascend_patches, git, spawn

BASELINE = "a9648a8"  # main before the lazy command table (issue 25, item 4)
HELP_GOAL = 4.0  # patchmgr --help at most this many times a bare interpreter start
STATUS_GOAL = 0.5  # status --target ascend warm at most this share of the baseline's time
SOURCES_ENV_GOAL = 1.05  # status with its source from PATCHMGR_SOURCES at most this many times --source's time
PAIRS = {"full": 9, "tiny": 7}  # interleaved rounds per figure, by size (at least 7)


BASELINE_PATHS = ("patchmgr", "manifests", "patches")  # the code, and the project it checks as it was then


def baseline_tree(bench: Bench, ref: str) -> Path | None:
    """``patchmgr/`` at ``ref`` with that commit's own ``manifests/`` and ``patches/`` (a later manifest may carry
    keys the old code refuses), unpacked once under the cache; None when this clone lacks the commit."""
    try:
        commit = git("rev-parse", "--verify", f"{ref}^{{commit}}", cwd=ROOT)
    except RuntimeError:
        return None
    tree = bench.cache / f"baseline-{commit[:12]}"
    if not all((tree / path).is_dir() for path in BASELINE_PATHS) or not (tree / "patchmgr" / "__init__.py").is_file():
        archive = bench.cache / f"baseline-{commit[:12]}.tar"
        with archive.open("wb") as out:
            subprocess.run(["git", "archive", commit, *BASELINE_PATHS], cwd=ROOT, stdout=out, check=True)
        with tarfile.open(archive) as tar:
            tar.extractall(tree, filter="data")
        archive.unlink()
    return tree


def compile_tree(tree: Path) -> None:
    """Write every module's ``.pyc`` first, as pip does when it installs the wheel: without it the first runs
    compile from source (and a shell with PYTHONDONTWRITEBYTECODE compiles in every run), which measures the
    compiler, not what a user waits for. compileall writes them whatever that variable says."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "patchmgr")], check=True)


def trees_ready(bench: Bench, old: Path) -> Path:
    """Both trees compiled (``compile_tree``), and the neutral folder every timed process starts in: ``python -m``
    puts the current folder first on ``sys.path``, and the repository's would load its ``patchmgr`` for both."""
    neutral = bench.cache / "neutral"
    neutral.mkdir(exist_ok=True)
    for tree in (ROOT, old):
        compile_tree(tree)
    return neutral


def code_env(bench: Bench, tree: Path, extra: dict | None = None, online: bool = False) -> dict[str, str]:
    return {**bench.env(extra, online), "PYTHONPATH": str(tree)}


def timed(args: list[str], env: dict[str, str], cwd: Path) -> float:
    code, out, wall, _rss = spawn(args, env=env, cwd=cwd)
    if code not in (0, 1):
        raise RuntimeError(f"{' '.join(args[2:])}: exit {code}: {out[-500:]}")
    return wall


def cpu_timed(args: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user and system, of the process and the git processes it waited for): the
    CPU figure moves little with the machine's load, which stretches the wall figure of a crowded machine."""
    start = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd)
    err = proc.stderr.read() if proc.stderr else b""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    proc.returncode = code
    if code not in (0, 1):
        raise RuntimeError(f"{' '.join(args[2:])}: exit {code}: {err.decode('utf-8', 'replace')[-500:]}")
    return wall, usage.ru_utime + usage.ru_stime


def interleaved(
    commands: dict[str, tuple[list[str], dict[str, str]]], cwd: Path, rounds: int, cpu: dict | None = None
) -> dict[str, list[float]]:
    """Each command once per round: a burst of load hits every command alike. ``cpu``: filled with each
    command's CPU seconds per round as well."""
    walls: dict[str, list[float]] = {label: [] for label in commands}
    for _ in range(rounds):
        for label, (args, env) in commands.items():
            if cpu is None:
                walls[label].append(timed(args, env, cwd))
            else:
                wall, seconds = cpu_timed(args, env, cwd)
                walls[label].append(wall)
                cpu.setdefault(label, []).append(seconds)
    return walls


@dataclass(frozen=True)
class Beside:
    """One patchmgr command timed for the working tree (``new``) and the baseline (``old``), interleaved: each
    side's command line and environment, and its wall and CPU seconds per round."""

    commands: dict[str, tuple[list[str], dict[str, str]]]
    walls: dict[str, list[float]]
    cpu: dict[str, list[float]]

    def median(self, label: str) -> float:
        return statistics.median(self.walls[label])

    def add_rows(
        self, bench: Bench, case: str, variants: dict[str, str], count: int | None, runs: str = "", tail: str = ""
    ) -> None:
        """The rows, in the order of ``variants`` (label: the row's variant): each the median wall time, its note
        the count, the minimum and the median CPU seconds (``runs`` after the count says what was run, ``tail``
        ends the note)."""
        for label, variant in variants.items():
            times = self.walls[label]
            bench.add(
                Row(
                    case,
                    variant,
                    statistics.median(times),
                    count,
                    note=f"median of {len(times)}{runs} (min {min(times):.3f} s); CPU "
                    f"{statistics.median(self.cpu[label]):.3f} s (median; the process and its git processes){tail}",
                )
            )

    def cpu_note(self, what: str, ref: str) -> str:
        new, old = statistics.median(self.cpu["new"]), statistics.median(self.cpu["old"])
        return (
            f"{what} warm in CPU seconds (user and system, with its git processes; the load of a crowded machine "
            f"stretches wall time, not this): {new:.3f} s vs {old:.3f} s for {ref}, {new / old:.2f}x"
        )


def old_beside_new(
    bench: Bench, old: Path, command: list[str], sources: list[str], cache: str, cwd: Path, online: bool = False
) -> Beside:
    """``patchmgr COMMAND --root TREE SOURCES`` for the working tree and the baseline tree ``old``, each tree
    reading its own commit's manifests (an older one refuses keys added since) with a cache of its own
    (``CACHE-new``, ``CACHE-old``), warmed by one run first (``online``: that run may ask PyPI for the releases),
    then timed in ``PAIRS`` interleaved rounds. A RuntimeError that says which run exited 2 or more."""
    commands = {}
    for label, tree in (("new", ROOT), ("old", old)):
        args = [sys.executable, "-m", "patchmgr", *command, "--root", str(tree), *sources]
        extra = {"PATCHMGR_CACHE": str(bench.cache / f"{cache}-{label}")}
        try:
            timed(args, code_env(bench, tree, extra, online), cwd)
        except RuntimeError as failed:  # exit 2 and up: an error, not a measure
            raise RuntimeError(f"the {'baseline' if label == 'old' else 'working tree'} failed: {failed}") from None
        commands[label] = (args, code_env(bench, tree, extra))
    cpu: dict[str, list[float]] = {}
    try:
        walls = interleaved(commands, cwd, PAIRS[bench.size], cpu)
    except RuntimeError as failed:
        raise RuntimeError(f"a timed run failed: {failed}") from None
    return Beside(commands, walls, cpu)


def measure_startup(bench: Bench, mirrors: Path, ref: str = BASELINE) -> None:
    old = baseline_tree(bench, ref)
    if old is None:
        bench.add(Row("start-up", f"baseline {ref}", None, note=f"skipped: this clone lacks commit {ref}"))
        return
    neutral = trees_ready(bench, old)
    bench.notes.append(
        "both trees are compiled first (python -m compileall, as pip does when it installs the wheel), so that no "
        "timed run compiles: a tree without .pyc compiles every module it imports (0.4 to 0.6 s) in its first run, "
        "and in every run where PYTHONDONTWRITEBYTECODE is set (the shell behind the hand-made profiles)"
    )
    measure_help(bench, old, ref, neutral)
    measure_sources_env(bench, neutral)
    measure_ascend(bench, old, ref, mirrors, neutral)


def measure_help(bench: Bench, old: Path, ref: str, cwd: Path) -> None:
    pm = [sys.executable, "-m", "patchmgr"]
    new_env, old_env = code_env(bench, ROOT), code_env(bench, old)
    walls = interleaved(
        {
            "bare": ([sys.executable, "-c", "pass"], new_env),
            "help": ([*pm, "--help"], new_env),
            "help-old": ([*pm, "--help"], old_env),
            "version": ([*pm, "--version"], new_env),
            "status-help": ([*pm, "status", "--help"], new_env),
            "status-help-old": ([*pm, "status", "--help"], old_env),
        },
        cwd,
        PAIRS[bench.size],
    )
    bare = walls["bare"]

    def ratio(label: str) -> float:  # the median of the per-round ratios to the bare interpreter of that round
        return statistics.median(w / b for w, b in zip(walls[label], bare, strict=True))

    for label, variant in (
        ("bare", "python -c pass (a bare interpreter)"),
        ("help", "patchmgr --help"),
        ("help-old", f"patchmgr --help, baseline {ref}"),
        ("version", "patchmgr --version"),
        ("status-help", "patchmgr status --help"),
        ("status-help-old", f"patchmgr status --help, baseline {ref}"),
    ):
        times = walls[label]
        note = f"median of {len(times)} (min {min(times):.3f} s)"
        if label != "bare":
            note += f"; {ratio(label):.1f}x the bare interpreter"
        bench.add(Row("start-up", variant, statistics.median(times), note=note))
    bench.goals.append(
        (
            f"patchmgr --help <= {HELP_GOAL:g}x a bare interpreter (median of {len(bare)} interleaved pairs)",
            f"{ratio('help'):.1f}x (baseline {ref}: {ratio('help-old'):.1f}x)",
            ratio("help") <= HELP_GOAL,
        )
    )


def one_patch_project(folder: Path) -> tuple[Path, Path]:
    """A project of one patch on a one-commit upstream, made once under ``folder``: (project root, upstream)."""
    upstream, root = folder / "upstream", folder / "project"
    if not (root / "manifests" / "t.toml").is_file():
        upstream.mkdir(parents=True, exist_ok=True)
        git("init", "-q", "-b", "main", cwd=upstream)
        (upstream / "mod.py").write_text("".join(f"line {i}\n" for i in range(40)))
        git("add", "-A", cwd=upstream)
        git(
            "-c",
            "user.name=bench",
            "-c",
            "user.email=bench@example.invalid",
            "commit",
            "-q",
            "-m",
            "initial",
            cwd=upstream,
        )
        pin = git("rev-parse", "HEAD", cwd=upstream)
        (upstream / "mod.py").write_text("".join(f"line {i}\n" for i in range(40)).replace("line 7", "fixed 7"))
        patch = git("diff", "--full-index", cwd=upstream)
        git("checkout", "-q", "--", ".", cwd=upstream)
        (root / "patches" / "lib").mkdir(parents=True)
        (root / "patches" / "lib" / "fix.patch").write_text(
            f"Description: fix line 7\nOrigin: vendor\nUpstream-Status: Pending\n---\n{patch}\n"
        )
        (root / "manifests").mkdir()
        (root / "manifests" / "t.toml").write_text(
            '[target]\nname = "t"\ndescription = "start-up"\n[upstreams.lib]\n'
            f'git = "https://example.invalid/lib.git"\ncommit = "{pin}"\npatches = ["fix"]\n'
        )
    return root, upstream


def measure_sources_env(bench: Bench, cwd: Path) -> None:
    """A warm ``status`` off a terminal with its source named by ``--source`` beside the same run with it from
    ``PATCHMGR_SOURCES``, which says so in a ``note:`` line: that line must not cost the start-up (issue 39,
    item 8: it loaded rich, 0.130 s against 0.107 s)."""
    root, upstream = one_patch_project(bench.cache / "startup-sources")
    args = [sys.executable, "-m", "patchmgr", "status", "--target", "t", "--root", str(root)]
    extra = {"PATCHMGR_CACHE": str(bench.cache / "patchmgr-cache-startup-sources")}
    commands = {
        "flag": ([*args, "--source", f"lib={upstream}"], code_env(bench, ROOT, extra)),
        "env": (args, code_env(bench, ROOT, {**extra, "PATCHMGR_SOURCES": f"lib={upstream}"})),
    }
    for command, env in commands.values():
        timed(command, env, cwd)  # the first run fills the cache
    walls = interleaved(commands, cwd, PAIRS[bench.size])
    for label, variant in (("flag", "status, source from --source"), ("env", "status, source from PATCHMGR_SOURCES")):
        times = walls[label]
        note = f"median of {len(times)} interleaved (min {min(times):.3f} s), off a terminal, warm, one patch"
        bench.add(Row("start-up", variant, statistics.median(times), note=note))
    ratio = statistics.median(e / f for e, f in zip(walls["env"], walls["flag"], strict=True))
    bench.goals.append(
        (
            f"status with PATCHMGR_SOURCES <= {SOURCES_ENV_GOAL:g}x status with --source, off a terminal "
            "(median of the interleaved pairs' ratios)",
            f"{ratio:.2f}x ({statistics.median(walls['env']):.3f} s vs {statistics.median(walls['flag']):.3f} s)",
            ratio <= SOURCES_ENV_GOAL,
        )
    )


# where a warm status spends its time: each group of imports in the order the command needs them (off a terminal
# it loads neither typer nor rich: the entry point parses the options, the table is written plain), then the run
PHASES = """
import time; marks = [time.perf_counter()]
import contextlib, io, json, sys
def mark(): marks.append(time.perf_counter())
from patchmgr.cli.entry import main; import patchmgr.cli.toplevel, patchmgr.cli.optspec; mark()
import patchmgr.cli.status; mark()
import patchmgr.model.project, patchmgr.targets.project_files; mark()
import patchmgr.check.status, patchmgr.sources.store, patchmgr.sources.upstream, patchmgr.sources.release; mark()
import patchmgr.history.at_ref, patchmgr.engine.classify; mark()
import patchmgr.render.status_plain; mark()
with contextlib.redirect_stdout(io.StringIO()):
    main(sys.argv[1:])
mark()
print(json.dumps([b - a for a, b in zip(marks, marks[1:])]))
"""
PHASE_NAMES = (
    "the entry point and its option parser",
    "the status command",
    "model and project files",
    "check and sources",
    "the engine",
    "render",
    "the check and its output",
)


def phases(bench: Bench, args: list[str], env: dict[str, str], cwd: Path) -> str:
    """The median milliseconds of each phase of a warm status over the rounds, as one line."""
    runs = []
    for _ in range(PAIRS[bench.size]):
        code, out, _wall, _rss = spawn([sys.executable, "-c", PHASES, *args], env=env, cwd=cwd)
        if code:
            return f"phases not measured (exit {code}): {out[-300:]}"
        runs.append(json.loads(out.strip().splitlines()[-1]))
    return ", ".join(
        f"{name} {1000 * statistics.median(run[index] for run in runs):.0f} ms"
        for index, name in enumerate(PHASE_NAMES)
    )


def measure_ascend(bench: Bench, old: Path, ref: str, mirrors: Path, cwd: Path) -> None:
    sources, absent = ascend_mirrors(mirrors)
    if absent:
        bench.add(Row("start-up", "status --target ascend, warm", None, note=f"skipped: no local mirror {absent[0]}"))
        bench.notes.append("status --target ascend was not measured: its mirrors are not on this machine")
        return
    goal = f"status --target ascend warm <= {STATUS_GOAL:g}x the baseline's ({ref}, same run, interleaved)"
    try:  # the first run may ask PyPI for the releases; the measured ones are offline
        runs = old_beside_new(
            bench, old, ["status", "--target", "ascend"], sources, "patchmgr-cache-ascend-startup", cwd, online=True
        )
    except RuntimeError as failed:
        refuse(bench, goal, str(failed))
        return
    new, old_wall = runs.median("new"), runs.median("old")
    variants = {"old": f"status --target ascend warm, baseline {ref}", "new": "status --target ascend warm"}
    runs.add_rows(bench, "start-up", variants, ascend_patches())
    bench.notes.append(runs.cpu_note("status --target ascend", ref))
    args, env = runs.commands["new"]
    bench.notes.append(
        "status --target ascend warm, where the time goes in the working tree (median of each phase, in process, "
        f"after the interpreter's own start): {phases(bench, args[3:], env, cwd)}"
    )
    bench.goals.append((goal, f"{new:.3f} s vs {old_wall:.3f} s: {new / old_wall:.2f}x", new / old_wall <= STATUS_GOAL))


def refuse(bench: Bench, goal: str, why: str) -> None:
    """No ratio when a side exits with 2 or more (bad input, a crash): the time of an error says nothing of the
    time of a status, so the goal is reported as not measured, with the reason."""
    reason = " ".join(why.split())[:300]
    bench.add(Row("start-up", "status --target ascend, warm", None, note=f"not measured: {reason}"))
    bench.goals.append((goal, f"not measured: {reason}", False))
