"""Smoke environments per upstream: ``smoke-requirements`` in a manifest, built by ``smoke`` and reused.

Through the real CLI, with the tiny upstream of test_smoke_proof: its smoke test also asserts the version of
``packaging`` it imports, pinned by the manifest to one the running environment does not have, so the test
passes only in the environment patchmgr built (pip installs from the package index: this needs it).
"""

from __future__ import annotations

import importlib.metadata
import json
import os

import pytest
from support.needs import pypi_problem, require
from support.smoke_scene import CPU_ONLY, SEES_PACKAGING, Scene

SEES = SEES_PACKAGING


def pinned(host: str) -> tuple[str, str]:
    """Two packaging versions, neither the running environment's."""
    choices = [v for v in ("23.2", "24.0", "24.1") if v != host]
    return choices[0], choices[1]


@pytest.fixture
def scene(tmp_path, project, cli, monkeypatch) -> Scene:
    import patchmgr.smoke.runner

    monkeypatch.setattr(patchmgr.smoke.runner, "available_devices", lambda python: dict(CPU_ONLY))
    return Scene(tmp_path, project, cli)


def env_notes(doc: dict) -> list[str]:
    return [n for n in doc["notes"] if "smoke environment" in n]


def test_smoke_builds_the_environment_once_reuses_it_and_builds_another_for_other_requirements(scene):
    require(pypi_problem() is None, str(pypi_problem()))
    first, second = pinned(importlib.metadata.version("packaging"))
    scene.patch()
    scene.manifest(smoke_requirements=[f"packaging=={first}"])
    scene.smoke_test(SEES.format(version=first))
    scene.apply()
    envs = scene.tmp_path / "cache" / "smoke-envs"
    assert os.environ["PATCHMGR_CACHE"] == str(scene.tmp_path / "cache")

    code, doc = scene.smoke_json()
    assert code == 0, json.dumps(doc, indent=1)
    [note] = env_notes(doc)
    assert f"packaging=={first}; built in" in note, note
    built = {p.name for p in envs.iterdir() if p.is_dir()}
    assert len(built) == 1 and not [p for p in envs.iterdir() if ".building-" in p.name]

    code, doc = scene.smoke_json()  # reused, not built again; the test still sees the pinned version
    assert code == 0, json.dumps(doc, indent=1)
    [note] = env_notes(doc)
    assert f"packaging=={first}; reused" in note, note
    code, doc = scene.smoke_json("--unpatched")  # the same environment proves the test red without the patch
    assert code == 0 and "reused" in env_notes(doc)[0], json.dumps(doc, indent=1)

    scene.manifest(smoke_requirements=[f"packaging=={second}"])  # other requirements: an environment of their own
    scene.smoke_test(SEES.format(version=second))
    code, doc = scene.smoke_json("--both")  # built by the patched run, reused by the unpatched: one note says so
    assert code == 0, json.dumps(doc, indent=1)
    [note] = env_notes(doc)
    assert f"packaging=={second}; built in" in note, note
    assert len({p.name for p in envs.iterdir() if p.is_dir()} - built) == 1


@pytest.mark.parametrize(
    "requirement",
    ["transformers=>4.57", "--index-url=https://example.invalid/simple", "six==1.16.0; python_version >", 3],
)
def test_a_malformed_smoke_requirement_is_a_manifest_error_naming_the_file_and_key(scene, requirement):
    scene.patch()
    scene.manifest(smoke_requirements=["packaging==23.2", requirement])
    scene.smoke_test(SEES.format(version="23.2"))
    result = scene.smoke()
    assert result.code == 2, result.out + result.err
    error = " ".join((result.out + result.err).split())
    assert "manifests/t.toml" in error and "upstreams.lib.smoke-requirements" in error, error
    assert not (scene.tmp_path / "cache" / "smoke-envs").exists()


def test_python_overrides_the_smoke_environments_and_says_so(tmp_path, monkeypatch):
    """--python: that interpreter runs every upstream; no environment is built, and a note says so."""
    import sys
    from pathlib import Path

    import patchmgr.smoke.runner as runner
    from patchmgr.model.manifest import Target, Upstream
    from patchmgr.targets.trees import SmokeTree

    ran: list[str] = []
    monkeypatch.setattr(runner, "available_devices", lambda python: dict(CPU_ONLY))
    monkeypatch.setattr(runner, "check_smoke_tests", lambda project, trees: None)
    monkeypatch.setattr(runner, "check_smoke_needs", lambda project, trees, python: None)
    monkeypatch.setattr(runner, "choose_python", lambda *a, **k: pytest.fail("no environment is built with --python"))
    monkeypatch.setattr(runner, "_smoke_upstream", lambda project, tree, run: (ran.append(run.python), ([], []))[1])
    upstream = Upstream(
        "lib", "https://example.invalid/lib.git", (), "0" * 40, None, None, "", (), ("packaging==23.2",)
    )
    target = Target("t", "", Path("manifests/t.toml"), (upstream,))
    report = runner.run_smoke(None, target, [SmokeTree(upstream, tmp_path)], "cpu", False, sys.executable)
    assert ran == [sys.executable]
    assert any(
        n.startswith(
            f"--python {sys.executable}: every upstream's smoke tests ran in it; the smoke "
            "requirements of lib were not installed"
        )
        for n in report.notes
    ), report.notes


@pytest.mark.fast
def test_a_killed_build_is_never_reused_and_its_leftovers_go(tmp_path, monkeypatch):
    """A folder at the environment's place without the completion mark, or a half-built folder beside it,
    is removed and the environment is built anew; a failing pip leaves nothing behind and says why."""
    import patchmgr.smoke.envs as envs
    from patchmgr.model.errors import StateError
    from patchmgr.model.manifest import Upstream

    upstream = Upstream(
        "lib", "https://example.invalid/lib.git", (), "0" * 40, None, None, "", (), ("packaging==23.2",)
    )
    root = tmp_path / "smoke-envs"
    key = envs.env_key(upstream.smoke_requirements)
    (root / key / "bin").mkdir(parents=True)
    (root / f"{key}.building-x" / "bin").mkdir(parents=True)
    monkeypatch.setattr(
        envs,
        "_run",
        lambda command, what: (_ for _ in ()).throw(
            StateError(f"cannot build the smoke environment: {what} failed", "fix it")
        ),
    )
    with pytest.raises(StateError, match="python -m venv failed"):
        envs.smoke_env(upstream, cache=tmp_path)
    assert sorted(p.name for p in root.iterdir()) == [f"{key}.lock"]
