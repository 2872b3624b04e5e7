"""The scenes the documents' console examples run in (``<!-- scene: NAME -->``), built fresh in a temporary folder.

Each scene is a reader's machine in small: a HOME of its own (so ``~`` in the examples is real), no patchmgr
setting of this machine, ``patchmgr`` on PATH, and the upstreams the examples use as real git repositories made
here, with the history the examples need:

- ``repo``: this repository's own project (``manifests/``, ``patches/``), read only; the commands run at its root.
  Its examples expect GitHub out of reach, as on CI and the development machines: the PyPI releases stand in.
- ``mylib``: ``~/src/mylib``, a small pure-Python upstream: release ``v1.4.0`` whose ``total()`` rounds away
  the cents, a branch ``my-fix`` with the fix on it, ``v1.4.1`` (two lines added above the fix's: it applies
  with an offset), then ``v1.5.0`` which rewrote the line the fix changes.
- ``mylib-project``: ``mylib``, and ``~/my-patches``, the project the quick start makes (target ``main``, the
  patch ``fix-rounding`` with its smoke test), where the examples start; ``~/wheels`` holds mylib 1.4.0's wheel.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from support.gitrepos import UpstreamRepo, git
from support.reliability import make_wheel

ROOT = Path(__file__).resolve().parents[2]
IDENTITY = {
    "GIT_AUTHOR_NAME": "Ada Lovelace",
    "GIT_AUTHOR_EMAIL": "ada@example.com",
    "GIT_COMMITTER_NAME": "Ada Lovelace",
    "GIT_COMMITTER_EMAIL": "ada@example.com",
}
CORE_140 = '''"""Sums of prices."""


def total(prices):
    """The sum of the prices, to the cent."""
    return round(sum(prices))
'''
CORE_FIXED = CORE_140.replace("round(sum(prices))", "round(sum(prices), 2)")
LICENSE = "# Copyright the mylib authors\n# SPDX-License-Identifier: MIT\n"
CORE_141 = LICENSE + CORE_140
CORE_150 = (
    LICENSE
    + '''"""Sums of prices."""


def total(prices, discount=0.0):
    """The sum of the prices, to the cent, less a discount (0.1 is 10%)."""
    return round(sum(prices) * (1 - discount))
'''
)
SMOKE_TEST = """def test_total_keeps_cents(load_upstream):
    core = load_upstream("mylib", "mylib.core")
    assert core.total([0.25, 0.5]) == 0.75
"""


def make_mylib(home: Path) -> Path:
    lib = UpstreamRepo(home / "src/mylib")
    # no packaging metadata: import would look the release up on PyPI, and the examples stay off the network
    lib.commit({"mylib/__init__.py": "", "mylib/core.py": CORE_140}, "mylib 1.4.0")
    git(lib.path, "tag", "v1.4.0")
    git(lib.path, "checkout", "-q", "-b", "my-fix")
    lib.commit({"mylib/core.py": CORE_FIXED}, "Fix the rounding of totals\n\ntotal() rounded to whole units.")
    git(lib.path, "checkout", "-q", "main")
    lib.commit({"README.md": "mylib: sums prices\n"}, "docs: a README")
    lib.commit({"mylib/core.py": CORE_141}, "A licence header")
    git(lib.path, "tag", "v1.4.1")
    lib.commit({"mylib/core.py": CORE_150}, "Discounts")
    git(lib.path, "tag", "v1.5.0")
    return lib.path


def patchmgr(cwd: Path, env: dict[str, str], *args: str) -> None:
    subprocess.run([sys.executable, "-m", "patchmgr", *args], cwd=cwd, env=env, check=True, capture_output=True)


def clean_env(home: Path, extra: dict[str, str]) -> dict[str, str]:
    """The environment a reader's shell would have: their own HOME, no patchmgr settings of this machine."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PATCHMGR_", "XDG_", "GIT_", "PYTEST_", "COV_"))
        and key not in ("COLUMNS", "LINES")
        or key == "PATCHMGR_INDEX_URL"  # this machine's way to PyPI, as pip.conf is
    }
    env.update(
        HOME=str(home),
        PYTHONUNBUFFERED="1",
        COLUMNS="100",
        TERM="dumb",
        NO_COLOR="1",
        LC_ALL="C.UTF-8",
        GIT_CONFIG_NOSYSTEM="1",
        PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
    )
    env.update(extra)
    return env


def build_scene(name: str, root: Path) -> dict[str, Any]:
    home = root / "home"
    state = root / "state"
    home.mkdir(parents=True)
    state.mkdir()
    env = clean_env(home, IDENTITY)
    cwd = home
    if name == "repo":
        cwd = ROOT
    elif name in ("mylib", "mylib-project"):
        make_mylib(home)
        if name == "mylib-project":
            cwd = home / "my-patches"
            cwd.mkdir()
            git(cwd, "init", "-q")
            project_env = {**env, "PATCHMGR_SOURCES": "mylib=~/src/mylib"}
            patchmgr(cwd, project_env, "init", "--target", "main", "--git", "https://github.com/org/mylib.git",
                     "--pin", "v1.4.0")  # fmt: skip
            patchmgr(cwd, project_env, "add", "fix-rounding", "--target", "main", "--upstream", "mylib",
                     "--commit", "my-fix", "--repo", str(home / "src/mylib"))  # fmt: skip
            (cwd / "tests/smoke/mylib/test_fix_rounding.py").write_text(SMOKE_TEST)
            git(cwd, "add", "-A")
            subprocess.run(["git", "commit", "-q", "-m", "patches"], cwd=cwd, env=env, check=True)
            (state / "env").write_text("export PATCHMGR_SOURCES='mylib=~/src/mylib'\n")
            (home / "wheels").mkdir()  # mylib 1.4.0 as pip installs it (installed.md)
            make_wheel(home / "wheels", "mylib", "1.4.0", {"mylib/__init__.py": "", "mylib/core.py": CORE_140}, "")
    else:
        raise ValueError(f"no scene {name!r} (tests/support/doc_scenes.py)")
    (state / "cwd").write_text(str(cwd))
    if not (state / "env").exists():
        (state / "env").write_text("")
    return {"env": env, "state": state, "folders": {str(home): "~", str(root): "<tmp>"}}
