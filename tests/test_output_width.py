"""Output that is not a terminal is never cut at 80 columns: full names and details on one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from support.scenes import lines_with, setup


def test_status_into_a_pipe_prints_full_names_and_details_on_one_line(project, upstream, tmp_path):
    pin = upstream.head()
    long_id = "a-very-long-patch-name-that-says-exactly-what-it-fixes-in-the-module-and-why-it-matters-for-our-runs"
    setup(project, upstream, {long_id: upstream.make_patch(pin, {"src/mod.py": lines_with({20: "fixed 20"})}, "Fix")})
    upstream.commit({"src/mod.py": lines_with({}, insert_top=3)}, "upstream adds 3 lines on top")
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "FORCE_COLOR", "TERM")}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "patchmgr",
            "status",
            "--target",
            "t",
            "--root",
            str(project.root),
            "--source",
            f"lib={upstream.path}",
            "--against",
            "lib=main",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [line for line in done.stdout.splitlines() if long_id in line]
    assert rows, done.stdout  # the whole name on one line, not cut or folded
    (row,) = [line for line in rows if "offset" in line]
    assert "+3 lines" in row  # its detail on the same line: not wrapped into a tall table
    assert max(len(line) for line in done.stdout.splitlines()) > 80
