"""Shared fixtures: real git upstreams and real patch projects in temporary folders."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from gitrepos import BASE_TEXT, Project, UpstreamRepo

from patchmgr.cli.app import main

# The smoke tests run only through `patchmgr smoke`, which points them at an upstream tree.
collect_ignore = [] if os.environ.get("PATCHMGR_SMOKE_ROOT") else ["smoke"]


def require(available: bool, reason: str) -> None:
    """Skip a test whose requirement is missing here, with the reason; in CI (CI=true) fail it instead,
    so a machine that lost PyPI or the smoke extras cannot turn a red run into a row of skips."""
    if available:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must run this test, but {reason}", pytrace=False)
    pytest.skip(reason)


_REACHED: dict[str, str | None] = {}


def _pypi_problem() -> str | None:
    """None when the package index answers; else why not (asked once per session)."""
    if "pypi" not in _REACHED:
        import urllib.request

        from patchmgr.sources.release import index_url

        try:
            with urllib.request.urlopen(f"{index_url()}/pip/", timeout=20):
                _REACHED["pypi"] = None
        except OSError as exc:
            _REACHED["pypi"] = f"the package index is out of reach ({exc})"
    return _REACHED["pypi"]


@pytest.fixture(scope="session")
def release_cache(tmp_path_factory) -> Path:
    """One download cache for the tests that read the real upstream releases from PyPI (which they need)."""
    problem = _pypi_problem()
    require(problem is None, str(problem))
    return tmp_path_factory.mktemp("release-cache")


@pytest.fixture(scope="session")
def smoke_extras() -> None:
    """The upstream code's own dependencies that the smoke tests import (pip install -e '.[smoke]')."""
    import importlib.util

    missing = [
        name
        for name in ("torch", "megatron.core", "transformers", "einops")
        if importlib.util.find_spec(name.split(".")[0]) is None
        or (name == "megatron.core" and importlib.util.find_spec(name) is None)
    ]
    require(not missing, f"the smoke extras are not installed ({', '.join(missing)}): pip install -e '.[smoke]'")


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PATCHMGR_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)


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
