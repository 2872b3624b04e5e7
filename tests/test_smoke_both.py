"""smoke --both: each patch's tests with and without it in one call, one verdict per patch as at a ref (proven,
upstream by smoke, partly upstream, failed, not proven), on the checkout ``apply --into`` made: after a bump, the
call that says which part of a fix upstream now carries."""

from __future__ import annotations

import pytest
from support.smoke_scene import DETECTS, LOAD, Scene, verdicts

# a test that passes whatever add does with zero: it cannot tell the bug from the fix
PASSES_WITHOUT = "\n\ndef test_zero():\n    assert load_calc().add(0, 0) == 0\n"


@pytest.fixture
def scene(tmp_path, project, cli) -> Scene:
    return Scene(tmp_path, project, cli)  # smoke runs with --device cpu: no device probe imports torch


def verdict(result) -> tuple[str, str]:
    ((said, reason),) = verdicts(result.json).values()
    return said, reason


def test_a_patch_whose_tests_fail_without_it_and_pass_with_it_is_proven(scene):
    scene.one_patch_applied(DETECTS)
    result = scene.smoke("--both", "--json")
    assert result.code == 0, result.out + result.err
    assert verdict(result)[0] == "proven" and result.json["ok"]


def test_a_test_passing_without_the_patch_names_the_part_upstream_carries(scene):
    scene.one_patch_applied(DETECTS + PASSES_WITHOUT)
    result = scene.smoke("--both", "--json")
    assert result.code == 1 and not result.json["ok"], result.out + result.err  # proven is what exits 0
    said, reason = verdict(result)
    assert said == "partly-upstream" and "(test_zero)" in reason and "1 fail without it" in reason, reason
    text = scene.smoke("--both")
    assert "partly upstream: lib/fix-add: 1 tests pass at" in text.out and "review the patch" in text.out


def test_every_test_passing_without_the_patch_is_upstream_by_smoke(scene):
    scene.one_patch_applied(LOAD + PASSES_WITHOUT)
    said, reason = verdict(scene.smoke("--both", "--json"))
    assert said == "upstream-by-smoke" and reason.endswith("so the fix is there: test_zero"), reason


def test_both_and_unpatched_together_are_refused(scene):
    result = scene.smoke("--both", "--unpatched")
    assert result.code == 2 and "error: --both runs the tests with and without" in result.err, result.err
