"""The tool alone, as a team adopting it meets it: the wheel built from this repository, installed into a fresh
virtual environment with pytest and nothing else (no torch, no test extras), used in an empty folder on a real
local git upstream, from the first command to the first bump. The wheel carries only the tool: none of this
repository's manifests, patches or tests."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from support.gitrepos import UpstreamRepo, git

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
# the environment of a user's shell: this test's own Python path (a PYTHONPATH holding this repository would
# make pip take patchmgr as installed already) and virtual environment are not part of it
SHELL_ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
URL = "https://example.invalid/mylib.git"
HEAD = "".join(f"def helper_{n}():\n    return {n}\n\n\n" for n in range(3))
CORE = HEAD + "def total(values):\n    return sum(values[:-1])  # drops the last value\n"
FIXED = HEAD + "def total(values):\n    return sum(values)\n"
SMOKE = '''"""fix-total: total() adds every value."""


def test_total_adds_every_value(load_upstream):
    core = load_upstream("mylib", "mylib.core")
    assert core.total([1, 2, 3]) == 6, "total() drops the last value"
'''


def states(doc: dict) -> list[str]:
    """Every patch's state in a ``status --target T --json`` document."""
    return [patch["state"] for upstream in doc["upstreams"] for patch in upstream["patches"]]


@pytest.fixture(scope="module")
def alone(tmp_path_factory) -> Path:
    """A fresh environment holding the wheel of this repository and pytest; its ``bin`` folder."""
    folder = tmp_path_factory.mktemp("alone")
    # built from a copy of what the wheel is made of: setuptools leaves build/ in the tree it builds, and a later
    # build there would carry modules deleted since
    source = folder / "source"
    shutil.copytree(ROOT / "patchmgr", source / "patchmgr", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(folder),
            str(source),
        ],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = folder.glob("patchmgr-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    outside = [n for n in names if not n.startswith(("patchmgr/", "patchmgr-"))]
    assert outside == [], f"the wheel carries more than the tool: {outside[:5]}"
    venv = folder / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=SHELL_ENV)
    installed = subprocess.run(
        [str(venv / "bin" / "pip"), "install", "-q", str(wheel), "pytest"],
        capture_output=True,
        text=True,
        env=SHELL_ENV,
    )
    assert installed.returncode == 0, installed.stderr
    no_torch = subprocess.run([str(venv / "bin" / "python"), "-c", "import torch"], capture_output=True, env=SHELL_ENV)
    assert no_torch.returncode != 0, "the fresh environment must not hold torch"
    return venv / "bin"


def test_init_add_lint_status_apply_smoke_bump_with_the_wheel_alone(alone, tmp_path):
    lib = UpstreamRepo(tmp_path / "mylib")
    lib.commit({"mylib/__init__.py": "", "mylib/core.py": CORE, "README": "mylib\n"}, "mylib 1.0")
    git(lib.path, "tag", "v1.0")
    project = tmp_path / "my-patches"
    project.mkdir()
    env = dict(SHELL_ENV)
    env["PATH"] = f"{alone}{os.pathsep}{env['PATH']}"
    env["PATCHMGR_SOURCES"] = f"mylib={lib.path}"  # the sources, set once for every command

    def pm(*args: str, code: int | None = 0) -> subprocess.CompletedProcess:
        done = subprocess.run([str(alone / "patchmgr"), *args], cwd=project, env=env, capture_output=True, text=True)
        if code is not None:
            assert done.returncode == code, (
                f"patchmgr {' '.join(args)}: exit {done.returncode}\n{done.stdout}{done.stderr}"
            )
        assert "Traceback" not in done.stderr, done.stderr
        return done

    pm("init", "--target", "main", "--git", URL, "--pin", "v1.0")
    manifest = (project / "manifests" / "main.toml").read_text()
    assert f'commit = "{lib.head()}"' in manifest and 'version = "1.0"' in manifest

    work = tmp_path / "work"
    git(tmp_path, "clone", "-q", str(lib.path), str(work))
    (work / "mylib" / "core.py").write_text(FIXED)
    git(work, "commit", "-qam", "Fix total dropping the last value\n\nEvery caller lost its last item.")
    pm("add", "fix-total", "--target", "main", "--upstream", "mylib", "--commit", "HEAD", "--repo", str(work))
    stub = project / "tests" / "smoke" / "mylib" / "test_fix_total.py"
    assert "pytest.fail" in stub.read_text()
    assert "test_fix_total.py" in pm("lint", code=1).stdout + pm("lint", code=1).stderr  # the stub is named
    stub.write_text(SMOKE)
    pm("lint")

    status = json.loads(pm("status", "--target", "main", "--json").stdout)
    assert states(status) == ["clean"]

    pm("apply", "--target", "main", "--into", "build")
    assert (project / "build" / "mylib" / "mylib" / "core.py").read_text() == FIXED
    proven = json.loads(pm("smoke", "--target", "main", "--into", "build", "--json").stdout)
    unpatched = json.loads(pm("smoke", "--target", "main", "--into", "build", "--unpatched", "--json").stdout)
    for doc in (proven, unpatched):
        assert [p["verdict"] for p in doc["patches"]] == ["proven"], doc

    # upstream moves: a release that shifts the patched lines
    lib.commit({"mylib/core.py": '"""Sums."""\n\n\n' + CORE}, "mylib 1.1: a module docstring")
    git(lib.path, "tag", "v1.1")
    moved = json.loads(pm("status", "--target", "main", "--against", "mylib=v1.1", "--json", code=None).stdout)
    assert states(moved) == ["offset"]
    pm("bump", "--target", "main", "--upstream", "mylib", "--to", "v1.1")
    manifest = (project / "manifests" / "main.toml").read_text()
    assert f'commit = "{lib.head()}"' in manifest and 'version = "1.1"' in manifest
    after = json.loads(pm("status", "--target", "main", "--json").stdout)
    assert states(after) == ["clean"]
