"""A smoke verdict does not depend on which pytest plugins happen to be installed where it runs: the smoke process
loads none by their entry points, and a smoke test that needs one names it the ways pytest documents (``-p`` in the
project's pytest configuration, PYTEST_PLUGINS). A real plugin distribution (a ``pytest11`` entry point on the
path), real pytest processes, the real CLI."""

from __future__ import annotations

import pytest
from support.smoke_scene import CPU_ONLY, LOAD, Scene, verdicts

PLUGIN = """import pytest


@pytest.fixture
def expected_sum():
    return 5
"""

# proven only where the plugin's fixture exists: without it the test errors in setup ("fixture not found")
NEEDS_PLUGIN = LOAD + "\n\ndef test_add(expected_sum):\n    assert load_calc().add(2, 3) == expected_sum\n"


@pytest.fixture
def scene(tmp_path, project, cli, monkeypatch) -> Scene:
    import patchmgr.smoke.runner

    monkeypatch.setattr(patchmgr.smoke.runner, "available_devices", lambda python: dict(CPU_ONLY))
    site = tmp_path / "site"
    (site / "smokeplug-1.0.dist-info").mkdir(parents=True)
    (site / "smokeplug-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: smokeplug\nVersion: 1.0\n")
    (site / "smokeplug-1.0.dist-info" / "entry_points.txt").write_text("[pytest11]\nsmokeplug = smokeplug\n")
    (site / "smokeplug.py").write_text(PLUGIN)
    monkeypatch.setenv("PYTHONPATH", str(site))  # installed for every pytest process smoke starts
    monkeypatch.delenv("PYTEST_PLUGINS", raising=False)
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    return Scene(tmp_path, project, cli).one_patch_applied(NEEDS_PLUGIN)


def test_an_installed_plugin_is_not_loaded_so_a_test_that_needs_it_is_not_proven(scene):
    code, doc = scene.smoke_json()
    assert code == 1
    verdict, reason = verdicts(doc)["fix-add"]
    assert verdict == "not-proven"
    assert "fixture 'expected_sum' not found" in doc["results"][0]["reason"] + reason


def test_the_way_before_batches_loaded_every_installed_plugin(scene, monkeypatch):
    # the same environment, the plugin found by its entry point: what the check above turns off is real
    monkeypatch.setenv("PATCHMGR_SMOKE_PER_PATCH", "1")
    code, doc = scene.smoke_json()
    assert (code, verdicts(doc)["fix-add"][0]) == (0, "proven")


def test_the_projects_pytest_configuration_names_the_plugin(scene):
    (scene.project.root / "pytest.ini").write_text("[pytest]\naddopts = -p smokeplug\n")
    code, doc = scene.smoke_json()
    assert (code, verdicts(doc)["fix-add"][0]) == (0, "proven")
    code, doc = scene.smoke_json("--unpatched")  # and the red check runs with it too: the test detects the bug
    assert (code, verdicts(doc)["fix-add"][0]) == (0, "proven")


def test_pytest_plugins_in_the_environment_names_the_plugin(scene, monkeypatch):
    monkeypatch.setenv("PYTEST_PLUGINS", "smokeplug")
    code, doc = scene.smoke_json()
    assert (code, verdicts(doc)["fix-add"][0]) == (0, "proven")
