"""smoke --both: each patch's tests with and without it in one call, one verdict per patch as at a ref, on the
checkout ``apply --into`` made. At the pin a test that passes without its patch does not detect the bug, so it is
no evidence that the fix is upstream: the patch is *not proven*, never upstream (by smoke)."""

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


def test_a_test_passing_without_the_patch_at_the_pin_does_not_detect_the_bug(scene):
    scene.one_patch_applied(DETECTS + PASSES_WITHOUT)
    result = scene.smoke("--both", "--json")
    assert result.code == 1 and not result.json["ok"], result.out + result.err  # proven is what exits 0
    said, reason = verdict(result)
    # test_add detects the bug, test_zero does not: the patch is not "partly upstream" at its own pin
    assert (said, reason) == (
        "not-proven",
        "its tests do not detect the bug at the pin: test_zero passes there without the patch",
    )
    patch = result.json["patches"][0]
    assert patch["label"] == "not proven" and patch["passing_unpatched"] == []
    assert result.json["summary"]["partly-upstream"] == 0
    assert result.json["at_pin"] is None  # the run without the patches is the pin's own
    text = scene.smoke("--both")
    assert ": not proven - its tests do not detect the bug at the pin: test_zero passes there" in text.out, text.out
    assert "partly upstream: lib/fix-add" not in text.out


def test_every_test_passing_without_the_patch_at_the_pin_is_not_upstream_by_smoke(scene):
    scene.one_patch_applied(LOAD + PASSES_WITHOUT)  # a test that never detected the bug
    result = scene.smoke("--both", "--json")
    assert result.code == 1, result.out + result.err
    assert verdict(result) == (
        "not-proven",
        "its tests do not detect the bug at the pin: test_zero passes there without the patch",
    )
    assert result.json["summary"]["upstream-by-smoke"] == 0


def test_a_crash_without_the_patch_proves_nothing_with_it(scene):
    # the test reaches the bug only through an exception it does not assert: an error, on either side
    scene.one_patch_applied(LOAD + "\n\ndef test_add():\n    assert load_calc().add(2, 3) + len(1) == 5\n")
    said, reason = verdict(scene.smoke("--both", "--json"))
    assert said == "not-proven" and "TypeError" in reason and "not a failed assertion" in reason, reason


def test_both_and_unpatched_together_are_refused(scene):
    result = scene.smoke("--both", "--unpatched")
    assert result.code == 2 and "error: --both runs the tests with and without" in result.err, result.err
