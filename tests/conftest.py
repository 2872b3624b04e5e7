"""Shared fixtures: real git upstreams and real patch projects in temporary folders."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support.gitrepos import BASE_TEXT, Project, UpstreamRepo
from support.needs import missing_modules, pypi_problem, require

from patchmgr.cli import main

# fixtures that several test modules use, each beside the helpers it is built from
pytest_plugins = [
    "support.bad_inputs",
    "support.docker_images",
    "support.edit_kill",
    "support.fast_tier",
    "support.full_disk",
    "support.kill_points",
    "support.tinydist",
]

# The smoke tests run only through `patchmgr smoke`, which points them at an upstream tree.
collect_ignore = [] if os.environ.get("PATCHMGR_SMOKE_ROOT") else ["smoke"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow suites first, in their own order: with `-n 2 --dist loadfile` a worker takes the next file
    when it is free, so the longest files (the image build, the real releases) start at once and the many
    short ones fill the other worker around them, instead of one long file running alone at the end."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(scope="session")
def release_cache(tmp_path_factory) -> Path:
    """One download cache for the tests that read the real upstream releases from PyPI (which they need)."""
    problem = pypi_problem()
    require(problem is None, str(problem))
    return tmp_path_factory.mktemp("release-cache")


@pytest.fixture(scope="session")
def smoke_extras() -> None:
    """The upstream code's own dependencies that the smoke tests import (pip install -e '.[smoke]')."""
    missing = missing_modules("torch", "megatron.core", "transformers", "einops")
    require(not missing, f"the smoke extras are not installed ({', '.join(missing)}): pip install -e '.[smoke]'")


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PATCHMGR_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    # no source locations from the person's own setup (patchmgr/sources/settings.py)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.delenv("PATCHMGR_SOURCES", raising=False)


@pytest.fixture
def upstream(tmp_path) -> UpstreamRepo:
    repo = UpstreamRepo(tmp_path / "upstream")
    repo.commit({"src/mod.py": BASE_TEXT, "README": "upstream\n"}, "initial")
    return repo


@pytest.fixture
def project(tmp_path) -> Project:
    return Project(tmp_path / "project")


class CliResult:
    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err

    @property
    def json(self):
        return json.loads(self.out)


@pytest.fixture
def cli(capsys, project):
    def run(*args: str) -> CliResult:
        capsys.readouterr()
        code = main([*args, "--root", str(project.root)] if args and args[0] != "--help" else list(args))
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run
