"""The benchmark harness runs end to end at its tiny size: it proves the harness works, not how fast anything is."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HARNESS = Path(__file__).resolve().parent.parent / "benchmarks" / "run.py"


def test_tiny_benchmark_run_prints_and_writes_its_table(tmp_path):
    results = tmp_path / "RESULTS.md"
    done = subprocess.run(
        [
            sys.executable,
            str(HARNESS),
            "--size",
            "tiny",
            "--cache",
            str(tmp_path / "cache"),
            "--results",
            str(results),
            "--mirrors",
            str(tmp_path / "no-mirrors"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "| case | variant | wall | checks | checks/s | peak RSS | vs patchmgr | note |" in out
    for case, variant in (
        ("status", "generated target"),
        ("status", "patches across 4 upstreams"),
        ("sweep", "patchmgr Walk"),
        ("sweep", "check_series at every commit"),
        ("sweep", "naive: checkout + git apply --check"),
        ("sweep", "git alone: apply --check --cached"),
        ("bisect", "one patch"),
        ("apply", "--into a checkout"),
        ("apply", "--python: installed environment"),
        ("apply", "revert --python"),
    ):
        assert any(line.startswith(f"| {case} | ") and variant in line for line in out.splitlines()), (case, variant)
    # the ascend mirrors are absent here: said so, not failed
    assert "skipped: no local mirror" in out
    # patchmgr agrees with git apply --check on every check of the sweep
    assert "sweep agrees with git apply --check" not in out
    text = results.read_text()
    for heading in (
        "| CPUs (nproc) |",
        "| CPU model |",
        "| RAM |",
        "| date |",
        "| patchmgr commit |",
        "## Goals",
        "## Figures",
        "| sweep | naive: checkout + git apply --check |",
    ):
        assert heading in text, heading


def test_the_real_cases_without_their_mirrors_say_so_and_write_their_section(tmp_path):
    results = tmp_path / "RESULTS.md"
    args = ["--only", "real", "--size", "tiny", "--cache", str(tmp_path / "cache"), "--results", str(results)]
    done = subprocess.run(
        [sys.executable, str(HARNESS), *args, "--mirrors", str(tmp_path / "no-mirrors")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "skipped megatron series: no local mirror" in done.stdout
    assert "skipped openssh quilt series: no local mirror" in done.stdout
    text = results.read_text()
    assert "<!-- real: written by run.py --only real -->" in text and "## Real series at real sizes" in text
