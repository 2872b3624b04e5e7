"""The engine's property tests as a long run: thousands of random examples, random seeds.

CI runs each property on the same 60 examples (tests/test_engine_properties.py). This runs
many more, each run with a fresh seed that it prints, so a failure can be replayed:

    python benchmarks/properties.py --examples 3000 --runs 2
    python benchmarks/properties.py --examples 3000 --seed 12345     # replay one run

Every example is a real `git diff` checked against real `git apply`; the one known
divergence (git lets a final context line without LF match a longer line; the engine
calls that fuzz) is allowed by the tests themselves and counted there, not here.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_once(examples: int, seed: int) -> tuple[int, str, float]:
    env = {**os.environ, "PATCHMGR_PROPERTY_EXAMPLES": str(examples), "PATCHMGR_PROPERTY_SEED": str(seed)}
    started = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--hypothesis-seed",
            str(seed),
            "tests/test_engine_properties.py",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    summary = (done.stdout.strip().splitlines() or ["no output"])[-1]
    return done.returncode, summary, time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=2000, help="examples per property and run")
    parser.add_argument("--runs", type=int, default=1, help="runs, each with a new random seed")
    parser.add_argument("--seed", type=int, help="replay this seed (one run)")
    args = parser.parse_args()
    seeds = (
        [args.seed] if args.seed is not None else [random.SystemRandom().randrange(1, 2**31) for _ in range(args.runs)]
    )
    failed = 0
    for seed in seeds:
        code, summary, seconds = run_once(args.examples, seed)
        print(
            f"seed {seed}: {args.examples} examples per property, {summary} ({seconds:.0f} s)"
            + ("" if code == 0 else "  <- FAILED: replay with --seed " + str(seed))
        )
        failed += code != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
