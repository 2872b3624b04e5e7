"""The fixtures of the benchmarks: sizes, the run's rows and places (``Bench``), processes, and the generated
upstream histories with their patch project (``prepare``, built with ``synth``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import synth

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
HARNESS = HERE / "run.py"  # the child processes of in-process cases run it again with --inner

# each knob of the generated histories and runs once, with its value for the two sizes: (full, tiny)
KNOBS = {
    "files": (3000, 60),
    "commits": (12000, 140),
    "hot": (60, 8),
    "pin": (1000, 10),
    "patches": (20, 4),
    "sweep": (200, 6),
    "sweep_from": (2000, 60),
    "bisect": (10000, 100),
    "many": (200, 12),
    "other_files": (1500, 30),
    "other_commits": (1000, 20),
    "runs": (5, 2),
    "big_lines": (80_000, 800),
    "big_hunks": (20_000, 200),
    "real_patches": (300, 10),  # the Megatron-LM series of the real cases (consecutive real commits)
}
SIZES = {size: {knob: values[i] for knob, values in KNOBS.items()} for i, size in enumerate(("full", "tiny"))}


NO_NETWORK = {"PATCHMGR_INDEX_URL": "http://127.0.0.1:9/simple"}  # a release lookup fails at once


ASCEND_MIRRORS = {
    "megatron-bridge": "NVIDIA-NeMo+Megatron-Bridge",
    "mindspeed": "Ascend+MindSpeed",
    "vllm-ascend": "vllm-project+vllm-ascend",
    "mbridge": "ISEEKYAN+mbridge",
    "verl": "volcengine+verl",
}


def ascend_mirrors(mirrors: Path) -> tuple[list[str], list[str]]:
    """The ``--source NAME=PATH`` arguments of the ascend upstreams' local mirrors under ``mirrors``, and the
    mirrors that are not there."""
    repos = {name: mirrors / folder / "repo" for name, folder in ASCEND_MIRRORS.items()}
    sources = [arg for name, path in repos.items() for arg in ("--source", f"{name}={path}")]
    return sources, [str(path) for path in repos.values() if not path.is_dir()]


def ascend_patches() -> int:
    """How many patches the real ascend target has (manifests/ascend.toml)."""
    manifest = tomllib.loads((ROOT / "manifests" / "ascend.toml").read_text())
    return sum(len(upstream.get("patches", [])) for upstream in manifest["upstreams"].values())


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

    def env(self, extra: dict | None = None, online: bool = False) -> dict[str, str]:
        """The environment of a measured process: offline (a release lookup fails at once) unless ``online``, for
        a first run that may fetch pins from the mirrors, ask PyPI for releases or build an environment."""
        env = {**os.environ, **synth.GIT_ENV, "PATCHMGR_CACHE": str(self.pm_cache), **NO_NETWORK, **(extra or {})}
        # as installed for a user: Python keeps compiled modules (a session may have turned that off)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        for key in NO_NETWORK if online else ():
            env.pop(key)
        return env

    def add(self, row: Row) -> Row:
        self.rows.append(row)
        rate = f"{row.rate:,.0f} checks/s" if row.rate else ""
        wall = f"{row.wall:.3f} s" if row.wall is not None else "skipped"
        print(f"  {row.case:<22} {row.variant:<44} {wall:>10} {rate:>16} {mb(row.rss_mb):>8} {row.note}", flush=True)
        return row


# -- processes ----------------------------------------------------------------
def spawn(args: list[str], env: dict | None = None, cwd: Path | None = None) -> tuple[int, str, float, float]:
    """Run a process to its end: (exit code, output, wall seconds, peak RSS in MB of it and its children)."""
    code, out, wall, rss, _cpu = spawn_cpu(args, env, cwd)
    return code, out, wall, rss


def spawn_cpu(
    args: list[str], env: dict | None = None, cwd: Path | None = None
) -> tuple[int, str, float, float, float]:
    """``spawn``, and the CPU seconds (user + system) of the process and every process it waited for: on a
    shared machine, what the work cost whatever else ran."""
    start = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=cwd)
    out = proc.stdout.read()
    proc.stdout.close()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    return proc.returncode, out.decode("utf-8", "replace"), wall, usage.ru_maxrss / 1024, cpu


def run_inner(bench: Bench, case: str, name: str) -> tuple[dict, float]:
    """The in-process case ``case`` run in a child of its own (run.py --inner): the JSON line it printed last,
    and the child's peak RSS in MB. ``name`` says what failed when it fails."""
    code, out, _, rss = spawn(
        [sys.executable, str(HARNESS), "--inner", case, "--size", bench.size, "--cache", str(bench.cache)],
        env=bench.env(),
    )
    if code:
        raise RuntimeError(f"{name} failed: {out}")
    return json.loads(out.strip().splitlines()[-1]), rss


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


def known_upstreams(bench: Bench) -> dict[str, Upstream]:
    saved = json.loads((bench.cache / f"upstreams-{bench.size}.json").read_text())
    result = {}
    for name, entry in saved.items():
        repo = Path(entry["repo"])
        commits = (repo / "bench-commits.txt").read_text().split()
        result[name] = Upstream(name, repo, commits, entry["pin"], entry["ids"])
    return result


def mb(value: float | None) -> str:
    return f"{value:.0f} MB" if value else ""
