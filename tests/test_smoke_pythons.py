"""Each upstream's smoke tests on its own Python: its Requires-Python (or the manifest's ``smoke-python``) picks
an interpreter of this machine and a smoke environment made with it, in one `smoke` call; on real git
repositories through the real CLI."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest
from support.gitrepos import UpstreamRepo
from support.needs import pypi_problem, require
from support.smoke_scene import CPU_ONLY, FIELDS, FIXED, LOAD

THIS = f"{sys.version_info[0]}.{sys.version_info[1]}"
PYPROJECT = '[project]\nname = "{name}"\nversion = "1.0"\nrequires-python = "{spec}"\n'
# the smoke test records the Python it ran on, then checks the bug (add subtracts, fixed by the patch)
RECORDS = (
    LOAD
    + """
import sys


def test_add():
    with open(os.environ["SMOKE_PYTHON_LOG"], "a") as log:
        log.write("{name} %d.%d\\n" % sys.version_info[:2])
    assert sys.version_info[:2] {check}
    assert load_calc().add(2, 3) == 5
"""
)


class TwoUpstreams:
    """Target ``t``: ``old`` declares no Python, ``new`` declares ``spec`` in its pyproject.toml."""

    def __init__(self, tmp_path: Path, project, cli, spec: str, check: str = ">= (3, 12)") -> None:
        self.project, self.cli, self.into = project, cli, tmp_path / "build"
        self.log = tmp_path / "pythons.log"
        self.sources: list[str] = []
        self.pins: dict[str, str] = {}
        for name, files, test_check in (
            ("old", {}, f"== {tuple(sys.version_info[:2])}"),
            ("new", {"pyproject.toml": PYPROJECT.format(name="new", spec=spec)}, check),
        ):
            repo = UpstreamRepo(tmp_path / f"{name}-upstream")
            pin = repo.commit({"lib/calc.py": "def add(a, b):\n    return a - b\n", **files}, "initial")
            data = repo.make_patch(
                pin,
                {"lib/calc.py": FIXED},
                "Fix add",
                body="Why: add subtracted its arguments, so every sum came out wrong.",
                fields=FIELDS + f"\nSmoke-Test: tests/smoke/{name}/test_add.py",
            )
            project.add_patch(name, "fix-add", data)
            test = project.root / "tests" / "smoke" / name / "test_add.py"
            test.parent.mkdir(parents=True, exist_ok=True)
            test.write_text(RECORDS.format(name=name, check=test_check))
            self.sources += ["--source", f"{name}={repo.path}"]
            self.pins[name] = pin
        self.manifest()

    def manifest(self, **new: str) -> None:
        spec = {name: {"git": f"https://example.invalid/{name}.git", "commit": pin} for name, pin in self.pins.items()}
        spec["new"].update(new)
        self.project.manifest("t", {name: {**s, "patches": ["fix-add"]} for name, s in spec.items()})

    def apply(self) -> None:
        result = self.cli("apply", "--target", "t", "--into", str(self.into), *self.sources)
        assert result.code == 0, result.out + result.err

    def smoke_json(self, *args: str) -> tuple[int, dict]:
        self.log.write_text("")
        result = self.cli("smoke", "--target", "t", "--into", str(self.into), "--device", "cpu", "--json", *args)
        return result.code, result.json

    def ran(self) -> list[str]:
        return sorted(self.log.read_text().split("\n")[:-1])


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory) -> Path:
    """One cache for the module: the Python 3.12 smoke environment is built once and reused."""
    return tmp_path_factory.mktemp("smoke-pythons-cache")


@pytest.fixture
def scene_env(tmp_path, monkeypatch, shared_cache) -> list[str]:
    """The interpreters whose devices were probed (each once per run)."""
    import patchmgr.smoke.runner

    probed: list[str] = []
    for probe in ("available_devices", "cpu_devices"):  # --device cpu asks the cpu lane alone
        monkeypatch.setattr(patchmgr.smoke.runner, probe, lambda python: (probed.append(python), dict(CPU_ONLY))[1])
    monkeypatch.setenv("PATCHMGR_CACHE", str(shared_cache))
    monkeypatch.setenv("SMOKE_PYTHON_LOG", str(tmp_path / "pythons.log"))
    return probed


def python_3_12() -> None:
    from patchmgr.smoke.pythons import find_interpreter

    require(find_interpreter(">=3.12,<3.13") is not None, "no Python 3.12 on this machine (pyenv install 3.12)")
    require(pypi_problem() is None, str(pypi_problem()))


def test_one_call_runs_each_upstream_on_its_own_python(tmp_path, project, cli, scene_env):
    python_3_12()
    scene = TwoUpstreams(tmp_path, project, cli, ">=3.12,<3.13")
    scene.apply()
    code, doc = scene.smoke_json()
    assert code == 0, doc
    assert [(p["upstream"], p["verdict"]) for p in doc["patches"]] == [("old", "proven"), ("new", "proven")], doc
    assert scene.ran() == ["new 3.12", f"old {THIS}"]
    pythons = {n["upstream"]: n for n in doc["python"]}
    assert pythons["old"]["version"].startswith(THIS) and pythons["old"]["environment"] is None
    assert pythons["new"]["version"].startswith("3.12") and pythons["new"]["fits"] is True
    env = pythons["new"]["environment"]
    assert env and pythons["new"]["python"] != sys.executable
    assert scene_env == [sys.executable, str(Path(env) / "bin" / "python")]  # each interpreter's devices, once
    notes = [n for n in doc["notes"] if n.startswith(("old:", "new:"))]
    assert any(n.startswith(f"old: smoke tests ran on Python {THIS}") and "its own packages" in n for n in notes)
    assert any(
        n.startswith("new: smoke tests ran on Python 3.12") and "the highest that fits >=3.12,<3.13" in n and env in n
        for n in notes
    ), notes

    code, doc = scene.smoke_json("--unpatched")  # red without the patch, in the same environment (reused)
    assert code == 0, doc
    assert scene.ran() == ["new 3.12", f"old {THIS}"]
    assert any(n.startswith("new:") and f"{env} (pytest; reused)" in n for n in doc["notes"]), doc["notes"]


def test_smoke_python_in_the_manifest_overrides_requires_python(tmp_path, project, cli, scene_env):
    # the upstream declares 3.12; the manifest says its tests run on this Python: they do, and fail there
    scene = TwoUpstreams(tmp_path, project, cli, ">=3.12,<3.13")
    scene.manifest(**{"smoke-python": f"=={THIS}.*"})
    scene.apply()
    code, doc = scene.smoke_json()
    assert scene.ran() == [f"new {THIS}", f"old {THIS}"]
    assert code == 1 and dict((p["upstream"], p["verdict"]) for p in doc["patches"])["new"] == "failed", doc
    need = {n["upstream"]: n for n in doc["python"]}["new"]
    assert need["requires_python"] == f"=={THIS}.*" and need["from"] == "the manifest's smoke-python"


def test_no_interpreter_that_fits_is_not_proven_naming_the_range_and_the_way(tmp_path, project, cli, scene_env):
    scene = TwoUpstreams(tmp_path, project, cli, ">=3.99", check=">= (3, 99)")
    scene.apply()
    code, doc = scene.smoke_json()
    assert code == 1
    reasons = {p["upstream"]: (p["verdict"], p["reason"]) for p in doc["patches"]}
    assert reasons["old"][0] == "proven"
    verdict, reason = reasons["new"]
    assert verdict == "not-proven", reason
    assert reason.startswith(f"needs Python >=3.99 (this is {THIS}) and no interpreter on this machine fits it")
    assert "pass --python with an interpreter that fits" in reason
    assert any("new:" in n and "no interpreter on this machine fits it" in n for n in doc["notes"]), doc["notes"]


@pytest.mark.parametrize("value", ["3.12+", ">=three", ""])
def test_a_bad_smoke_python_is_refused_by_lint_and_smoke(tmp_path, project, cli, value):
    scene = TwoUpstreams(tmp_path, project, cli, ">=3.12")
    scene.manifest(**{"smoke-python": value})
    result = cli("lint")
    assert result.code != 0
    text = result.out + result.err
    assert "upstreams.new.smoke-python" in text and ("PEP 440" in text or "non-empty string" in text), text
    result = cli("smoke", "--target", "t", "--into", str(tmp_path / "build"), "--device", "cpu")
    assert result.code == 2 and "upstreams.new.smoke-python" in result.err, result.out + result.err


def fake_python(folder: Path, version: str) -> Path:
    """A program that answers the interpreter probe as Python ``version`` would."""
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / "python3"
    parts = ", ".join(version.split("."))
    program.write_text(f'#!/bin/sh\necho \'[[{parts}], "{program}", "{program}"]\'\n')
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    return program


def test_the_highest_fitting_interpreter_of_pyenv_and_path_is_found(tmp_path, monkeypatch):
    from patchmgr.smoke.pythons import find_interpreter

    root = tmp_path / "pyenv"
    for version in ("3.12.1", "3.12.9", "3.13.0"):
        fake_python(root / "versions" / version / "bin", version)
    (root / "versions" / "my-venv").mkdir()  # a named virtualenv of pyenv's: not a version
    on_path = fake_python(tmp_path / "bin", "3.12.11")
    os.rename(on_path, tmp_path / "bin" / "python3.12")
    monkeypatch.setenv("PYENV_ROOT", str(root))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    assert find_interpreter(">=3.12,<3.13").version == "3.12.11"
    assert find_interpreter(">=3.13").path == str(root / "versions" / "3.13.0" / "bin" / "python3")
    assert find_interpreter("<3.12.5,>=3.12").version == "3.12.1"
    assert find_interpreter(">=3.99") is None


@pytest.mark.fast
@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("setup.py", "from setuptools import setup\n\nsetup(name='lib', python_requires='>=3.12')\n"),
        ("setup.cfg", "[metadata]\nname = lib\n\n[options]\npython_requires = >=3.12\n"),
    ],
)
def test_requires_python_of_setup_py_and_setup_cfg_and_the_manifest_first(tmp_path, name, text):
    from dataclasses import replace

    from patchmgr.model.manifest import Upstream
    from patchmgr.smoke.interpreter import python_range
    from patchmgr.targets.trees import SmokeTree

    (tmp_path / "lib").mkdir()
    (tmp_path / name).write_text(text)
    upstream = Upstream("lib", "https://example.invalid/lib.git", (), "0" * 40, None, None, "", ())
    assert python_range(SmokeTree(upstream, tmp_path)) == (">=3.12", str(tmp_path / name))
    chosen = replace(upstream, smoke_python="==3.11.*")
    assert python_range(SmokeTree(chosen, tmp_path)) == ("==3.11.*", "the manifest's smoke-python")
