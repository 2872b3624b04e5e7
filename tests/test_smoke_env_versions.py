"""Smoke requirements per version of the code under test: ``[[upstreams.<name>.smoke-env]]`` tables in a manifest.

verl 0.7.0's npu_patch.py patches transformers 4.x classes, 0.8.0's imports transformers 5.x modules, and neither
pins transformers: the environment of an upstream's smoke tests depends on the release under test. Each table
names a version range (``versions``) and its ``requirements``; the first whose range holds the release version
(the manifest's ``version`` at the pin) wins, else ``smoke-requirements``.
"""

from __future__ import annotations

import importlib.metadata
import json
import tomllib
from pathlib import Path

import pytest
from support.needs import pypi_problem, require
from support.smoke_scene import CPU_ONLY, SEES_PACKAGING, Scene

from patchmgr.model.errors import ManifestError
from patchmgr.model.manifest import SmokeEnvRule, Upstream, validate_target
from patchmgr.targets.trees import SmokeTree

PIN = "0" * 40
ENVS = """
[[upstreams.lib.smoke-env]]
versions = ">=0.8"
requirements = ["transformers==5.3.0"]

[[upstreams.lib.smoke-env]]
versions = ">=0.5,<0.8"
requirements = ["transformers==4.57.1", "einops"]
"""


def target(tmp_path: Path, upstream_keys: str = "", tables: str = ENVS):
    text = (
        '[target]\nname = "t"\n[upstreams.lib]\ngit = "https://example.invalid/lib.git"\n'
        f'commit = "{PIN}"\nsmoke-requirements = ["transformers==4.46.0"]\n{upstream_keys}\n{tables}'
    )
    return validate_target(tomllib.loads(text), tmp_path / "t.toml", tmp_path)


@pytest.mark.fast
@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("0.8.0", ("transformers==5.3.0",)),
        ("0.9.1", ("transformers==5.3.0",)),
        # PEP 440: a pre-release of 0.8.0 is below >=0.8, and <0.8 excludes the pre-releases of 0.8 too
        ("0.8.0rc1", ("transformers==4.46.0",)),
        ("0.7.0", ("transformers==4.57.1", "einops")),
        ("0.4.2", ("transformers==4.46.0",)),  # no range holds it: smoke-requirements
        (None, ("transformers==4.46.0",)),  # no release version (a commit): smoke-requirements
        ("not-a-version", ("transformers==4.46.0",)),
    ],
)
def test_the_first_smoke_env_whose_versions_hold_the_release_version_gives_the_requirements(
    tmp_path, version, expected
):
    [upstream] = target(tmp_path).upstreams
    assert upstream.smoke_envs == (
        SmokeEnvRule(">=0.8", ("transformers==5.3.0",)),
        SmokeEnvRule(">=0.5,<0.8", ("transformers==4.57.1", "einops")),
    )
    assert upstream.smoke_requirements_for(version) == expected


@pytest.mark.fast
def test_without_smoke_env_tables_the_plain_smoke_requirements_hold_for_every_version(tmp_path):
    [upstream] = target(tmp_path, tables="").upstreams
    assert upstream.smoke_envs == ()
    assert upstream.smoke_requirements_for("0.8.0") == ("transformers==4.46.0",)


@pytest.mark.fast
@pytest.mark.parametrize(
    ("upstream_keys", "tables", "key", "problem"),
    [
        ('smoke-env = ">=0.8"', "", "upstreams.lib.smoke-env", "must be a list of tables"),
        ("", '[upstreams.lib.smoke-env]\nversions = ">=0.8"\nrequirements = []', "upstreams.lib.smoke-env", "list"),
        ("", '[[upstreams.lib.smoke-env]]\nrequirements = ["six"]', "smoke-env[0].versions", "missing"),
        ("", '[[upstreams.lib.smoke-env]]\nversions = ">=0.8"', "smoke-env[0].requirements", "missing"),
        ("", '[[upstreams.lib.smoke-env]]\nversions = "=>0.8"\nrequirements = []', "[0].versions", "PEP 440"),
        ("", "[[upstreams.lib.smoke-env]]\nversions = 8\nrequirements = []", "[0].versions", "non-empty string"),
        ("", ENVS + '[[upstreams.lib.smoke-env]]\nversion = ">=1"\nrequirements = []', "[2].version", "unknown key"),
        ("", '[[upstreams.lib.smoke-env]]\nversions = ">=1"\nrequirements = "six"', "[0].requirements", "list of"),
        ("", '[[upstreams.lib.smoke-env]]\nversions = ">=1"\nrequirements = ["six=>1"]', "requirements[0]", "six"),
        ("", '[[upstreams.lib.smoke-env]]\nversions = ">=1"\nrequirements = ["--pre"]', "requirements[0]", "pre"),
    ],
)
def test_a_bad_smoke_env_is_one_manifest_error_naming_the_key_and_the_form(
    tmp_path, upstream_keys, tables, key, problem
):
    with pytest.raises(ManifestError) as raised:
        target(tmp_path, upstream_keys, tables)
    message = str(raised.value)
    assert "t.toml: at key " in message and key in message and problem in message, message
    assert "smoke-env" in message and raised.value.hint, (message, raised.value.hint)


@pytest.mark.fast
def test_the_choice_builds_the_environment_of_the_version_under_test_and_the_note_names_the_range(
    tmp_path, monkeypatch
):
    """choose_python hands smoke_env the requirements of the release version (the pin's, or the one a ref
    resolves to, put on the tree's upstream), and the note says which range chose them."""
    import dataclasses

    import patchmgr.smoke.choice as choice
    from patchmgr.smoke.envs import SmokeEnv

    asked: list[tuple[str, ...]] = []

    def smoke_env(upstream: Upstream, progress=None, cache=None, python=None) -> SmokeEnv:
        asked.append(upstream.smoke_requirements)
        return SmokeEnv("/envs/x/bin/python", Path("/envs/x"), False, 0.0, upstream.smoke_requirements)

    monkeypatch.setattr(choice, "smoke_env", smoke_env)
    [upstream] = target(tmp_path, 'version = "0.7.0"').upstreams
    tree = tmp_path / "tree"
    tree.mkdir()
    chosen = choice.choose_python(SmokeTree(upstream, tree))
    assert asked == [("transformers==4.57.1", "einops")] and chosen.python == "/envs/x/bin/python"
    assert "(transformers==4.57.1, einops: the manifest's smoke-env for versions >=0.5,<0.8, chosen by the " in (
        chosen.note
    ), chosen.note
    assert "version of lib 0.7.0; reused)" in chosen.note, chosen.note
    at_ref = choice.choose_python(SmokeTree(dataclasses.replace(upstream, version="0.8.0"), tree))
    assert asked[-1] == ("transformers==5.3.0",) and "versions >=0.8, chosen by the version of lib 0.8.0" in (
        at_ref.note
    ), at_ref.note
    commit = choice.choose_python(SmokeTree(dataclasses.replace(upstream, version=None), tree))
    assert asked[-1] == ("transformers==4.46.0",), asked
    assert "the manifest's smoke-requirements, no smoke-env's versions holding the version (no release " in (
        commit.note
    ), commit.note


def test_smoke_runs_the_tests_in_the_environment_the_pinned_version_chooses(tmp_path, project, cli, monkeypatch):
    """Through the real CLI: the pin's ``version`` picks the smoke-env over smoke-requirements."""
    import patchmgr.smoke.runner

    require(pypi_problem() is None, str(pypi_problem()))
    monkeypatch.setattr(patchmgr.smoke.runner, "available_devices", lambda python: dict(CPU_ONLY))
    scene = Scene(tmp_path, project, cli)
    host = importlib.metadata.version("packaging")
    default, chosen = [v for v in ("23.2", "24.0", "24.1") if v != host][:2]
    scene.patch()
    scene.manifest(smoke_requirements=[f"packaging=={default}"])
    path = project.root / "manifests" / "t.toml"
    text = path.read_text().replace("[upstreams.lib]\n", '[upstreams.lib]\nversion = "0.8.0"\n')
    path.write_text(
        text + f'\n[[upstreams.lib.smoke-env]]\nversions = ">=0.8"\nrequirements = ["packaging=={chosen}"]\n'
    )
    scene.smoke_test(SEES_PACKAGING.format(version=chosen))
    scene.apply()
    code, doc = scene.smoke_json()
    assert code == 0, json.dumps(doc, indent=1)
    [note] = [n for n in doc["notes"] if "smoke environment" in n]
    assert f"(packaging=={chosen}: the manifest's smoke-env for versions >=0.8, chosen by the version of lib 0.8.0" in (
        note
    ), note
