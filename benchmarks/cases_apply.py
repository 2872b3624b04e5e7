"""patchmgr apply into a checkout and into an installed environment, beside a plain clone + git apply."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import synth
from fixtures import Bench, Row, Upstream, git, patchmgr, sources, spawn


# -- 4: apply ----------------------------------------------------------------------------
def measure_apply(bench: Bench, up: Upstream) -> None:
    src = sources({"bench": up}, ["bench"])
    with tempfile.TemporaryDirectory(prefix="pm-bench-apply-") as tmp:
        walls, peak = [], 0.0
        for run in range(2):
            code, out, wall, rss = patchmgr(bench, "apply", "--target", "bench", "--into", f"{tmp}/co{run}", *src)
            if code:
                raise RuntimeError(f"apply failed: {out}")
            walls.append(wall)
            peak = max(peak, rss)
        mine = bench.add(
            Row(
                "apply",
                f"--into a checkout ({len(up.ids)} patches)",
                min(walls),
                None,
                peak,
                f"best of {len(walls)}; each a fresh checkout of ~{bench.cfg['files']:,} files",
            )
        )
        env = {**os.environ, **synth.GIT_ENV}
        started = time.perf_counter()
        peak = 0.0
        patches = [str(bench.project / "patches" / "bench" / f"{pid}.patch") for pid in up.ids]
        for args in (
            ["git", "clone", "-q", "--no-checkout", str(up.repo), f"{tmp}/naive"],
            ["git", "-C", f"{tmp}/naive", "checkout", "-q", "--detach", up.pin],
            ["git", "-C", f"{tmp}/naive", "apply", *patches],
        ):
            code, out, _, rss = spawn(args, env=env)
            peak = max(peak, rss)
        naive = bench.add(
            Row(
                "apply",
                "naive: git clone + checkout + git apply",
                time.perf_counter() - started,
                None,
                peak,
                "no checks, no ledger, no commits",
            )
        )
        bench.notes.append(f"apply --into costs {mine.wall / naive.wall:.2f}x a plain clone + git apply")

    venv = bench.cache / f"venv-{bench.size}"
    python = make_environment(bench, up, venv)
    args = ["--target", "bench-env", "--python", str(python), *src]
    code, out, wall, rss = patchmgr(bench, "apply", *args)
    if code:
        raise RuntimeError(f"apply --python failed: {out}")
    bench.add(
        Row(
            "apply",
            f"--python: installed environment ({len(up.ids)} patches)",
            wall,
            None,
            rss,
            "journal, RECORD, bytecode, ledger",
        )
    )
    code, out, wall, rss = patchmgr(bench, "verify", "--target", "bench-env", "--python", str(python))
    bench.add(Row("apply", "verify --python", wall, None, rss, f"exit {code}"))
    code, out, wall, rss = patchmgr(bench, "revert", "--target", "bench-env", "--python", str(python))
    bench.add(Row("apply", "revert --python", wall, None, rss, f"exit {code}"))


def make_environment(bench: Bench, up: Upstream, venv: Path) -> Path:
    """A fresh venv with distribution ``benchpkg`` 1.0: the pin's files under src/ that the patches touch, and more."""
    import base64
    import hashlib

    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    listing = git("ls-tree", "-r", "--name-only", up.pin, cwd=up.repo).split()
    touched = {
        line[len("+++ b/") :]
        for pid in up.ids
        for line in (bench.project / "patches" / "bench" / f"{pid}.patch").read_text().splitlines()
        if line.startswith("+++ b/")
    }
    paths = sorted(touched | set(listing[:100]))
    record = []
    for path in paths:
        data = synth.read_file(up.repo, up.pin, path)
        relative = path[len("src/") :]
        (site / relative).parent.mkdir(parents=True, exist_ok=True)
        (site / relative).write_bytes(data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{relative},sha256={digest},{len(data)}")
    info = site / "benchpkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: benchpkg\nVersion: 1.0\n")
    (info / "INSTALLER").write_text("pip\n")
    record += [
        "benchpkg-1.0.dist-info/METADATA,,",
        "benchpkg-1.0.dist-info/INSTALLER,,",
        "benchpkg-1.0.dist-info/RECORD,,",
    ]
    (info / "RECORD").write_text("\n".join(record) + "\n")
    return python
