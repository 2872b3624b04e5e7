"""``tinydist`` 1.0: a tiny distribution built here as a wheel with a RECORD, installed by pip (--no-deps) into a
fresh virtual environment; its upstream is a real git repository with the same package plus files a wheel does
not ship (``tests/``, ``setup.py``).

A pytest plugin (tests/conftest.py registers it): the fixtures ``no_package_index`` (not autouse: a module
asks for it with ``pytestmark``), ``pristine`` (one environment per module), ``env`` (a copy) and ``tiny``."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from support.gitrepos import UpstreamRepo, make_series
from support.reliability import install_wheels, make_wheel, replace_tree, site_packages

CORE = "".join(f"VALUE_{i} = {i}\n" for i in range(1, 41))


FILES = {
    "tinydist/__init__.py": "from tinydist.core import VALUE_1\n",
    "tinydist/core.py": CORE,
    "tinydist/util.py": "def helper():\n    return 1\n",
}


REPO_ONLY = {
    "tests/test_core.py": "def test_core():\n    assert True\n",
    "setup.py": "from setuptools import setup\nsetup(name='tinydist')\n",
    "README.md": "tinydist\n",
}


def core_with(value: int) -> str:
    return CORE.replace("VALUE_5 = 5\n", f"VALUE_5 = {value}\n")


@pytest.fixture
def no_package_index(tmp_path, monkeypatch):
    """tinydist is made up: its release is never looked up on a real package index."""
    monkeypatch.setenv("PATCHMGR_INDEX_URL", (tmp_path / "no-index").as_uri())


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("tinydist")
    return install_wheels(folder, [make_wheel(folder, "tinydist", "1.0", FILES, "")])


@pytest.fixture
def env(tmp_path, pristine) -> Path:
    venv = tmp_path / "venv"
    replace_tree(pristine, venv)
    return venv


def record_paths(venv: Path) -> set[str]:
    record = site_packages(venv) / "tinydist-1.0.dist-info" / "RECORD"
    return {row[0] for row in csv.reader(record.read_text().splitlines()) if row}


class Tiny:
    """The upstream repository, the project's patches and manifest, and the command lines."""

    def __init__(self, tmp_path: Path, project, venv: Path, package_root: str = "") -> None:
        self.repo = UpstreamRepo(tmp_path / "tinydist-git")
        self.root = package_root
        self.pin = self.repo.commit({**{self.at(k): v for k, v in FILES.items()}, **REPO_ONLY}, "tinydist 1.0")
        self.project = project
        self.venv = venv

    def at(self, path: str) -> str:
        """The git path of a file of the package (under package-root, when there is one)."""
        return f"{self.root}/{path}" if self.root else path

    def series(self, *steps: tuple[dict[str, str | None], str], fields: str | None = None) -> None:
        """The patches ``fix-1``, ``fix-2``, ... of ``steps`` in target ``t`` (their DEP-3 ``fields`` when given)."""
        mails = make_series(self.repo, self.pin, list(steps), *([fields] if fields is not None else []))
        ids = []
        for number, mail in enumerate(mails, 1):
            ids.append(f"fix-{number}")
            self.project.add_patch("tinydist", ids[-1], mail)
        spec = {
            "git": "https://example.invalid/tinydist.git",
            "commit": self.pin,
            "version": "1.0",
            "pypi": "tinydist",
            "patches": ids,
        }
        if self.root:
            spec["package-root"] = self.root
        self.project.manifest("t", {"tinydist": spec})

    def args(self, *extra: str) -> list[str]:
        """For verify and revert."""
        return ["--target", "t", "--python", str(self.venv / "bin" / "python"), *extra]

    def src(self, *extra: str) -> list[str]:
        """For apply and status, which read the upstream."""
        return self.args("--source", f"tinydist={self.repo.path}", *extra)


@pytest.fixture
def tiny(tmp_path, project, env) -> Tiny:
    return Tiny(tmp_path, project, env)
