"""smoke.absorption on values: each patch's verdict at a ref from its results with and without it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from patchmgr.smoke.absorption import Absorption, ref_verdict
from patchmgr.smoke.verdicts import NO_SMOKE_TEST, PatchRun, SmokeResult, TestOutcome, patch_verdict

P, F, E, T = TestOutcome.PASSED, TestOutcome.FAILED, TestOutcome.ERROR, TestOutcome.TIMED_OUT


def _results(*outcomes: TestOutcome) -> list[SmokeResult]:
    return [
        SmokeResult("fix", "lib", f"tests.smoke.lib.test_fix::test_{n}", "cpu", o, reason="why" if o is not P else "")
        for n, o in enumerate(outcomes)
    ]


def _run(results: list[SmokeResult], unpatched: bool, not_run: str = "") -> PatchRun:
    return PatchRun(patch_verdict("fix", "lib", results, unpatched, not_run), tuple(results))


# without the patch at the pin, every test failed its assertion (and passed with it): each detects the bug
AT_PIN_DETECTS = (F, F)


def _judge(
    patched: list[SmokeResult],
    unpatched: list[SmokeResult],
    not_applied: str = "",
    at_pin: list[SmokeResult] | None = None,
):
    pin = _results(*AT_PIN_DETECTS) if at_pin is None else at_pin
    fixed = _run([replace(r, result=P, reason="") for r in pin], False)  # each test at the pin passes with the patch
    return ref_verdict("v2", _run(patched, False), _run(unpatched, True), _run(pin, True), not_applied, fixed)


@pytest.mark.fast
@pytest.mark.parametrize(
    ("patched", "unpatched", "verdict"),
    [
        ((P, P), (F, F), Absorption.PROVEN),
        ((P, P), (P, P), Absorption.UPSTREAM),
        ((P, P), (P, F), Absorption.PARTLY_UPSTREAM),
        ((P, P), (P, E), Absorption.PARTLY_UPSTREAM),  # an error is no failure, but the passing test still counts
        ((P, F), (F, F), Absorption.FAILED),
        ((P, F), (P, P), Absorption.FAILED),  # a test failing with the patch wins over the fix being there
        ((P, E), (F, F), Absorption.NOT_PROVEN),
        ((P, P), (F, T), Absorption.NOT_PROVEN),
        ((P, P), (P, T), Absorption.PARTLY_UPSTREAM),  # a time-out never makes the fix wholly upstream
    ],
)
def test_each_verdict_from_the_two_runs(patched, unpatched, verdict):
    assert _judge(_results(*patched), _results(*unpatched)).verdict is verdict


@pytest.mark.fast
def test_partly_upstream_names_the_tests_that_pass_and_says_what_the_others_did():
    found = _judge(_results(P, P, P), _results(P, F, E))
    assert found.passing_unpatched == ("test_0",)
    assert found.reason == (
        "1 tests pass at v2 without the patch (test_0); 1 fail without it, 1 ran to no outcome: "
        "that part of the fix is there, review the patch"
    )


@pytest.mark.fast
def test_a_patch_that_does_not_apply_is_judged_by_its_tests_without_it_only():
    said = "it does not apply at v2 (conflict), so the scratch checkout does not hold it"
    # its run "with the patch" is a run without it: its failures are not the patch's
    assert _judge(_results(F, F), _results(P, P), said).verdict is Absorption.UPSTREAM
    still = _judge(_results(F, F), _results(F, F), said)
    assert still.verdict is Absorption.NOT_PROVEN
    assert still.reason == f"{said}; its tests fail without it there: the bug is still there"


@pytest.mark.fast
def test_no_smoke_test_is_its_own_reason():
    none = [SmokeResult("fix", "lib", "-", "-", TestOutcome.SKIPPED, reason=NO_SMOKE_TEST)]
    untested = _run(none, True, NO_SMOKE_TEST)
    found = ref_verdict("v2", _run(none, False, NO_SMOKE_TEST), untested, untested)
    assert (found.verdict, found.reason) == (Absorption.NOT_PROVEN, NO_SMOKE_TEST)


@pytest.mark.fast
def test_a_test_on_another_device_is_named_with_it():
    on_cuda = [SmokeResult("fix", "lib", "m::test_x", "cuda", P)]
    failing = [SmokeResult("fix", "lib", "m::test_y", "cpu", F, reason="no")]
    found = _judge(on_cuda + failing, on_cuda + failing)
    assert found.verdict is Absorption.FAILED and found.reason.startswith("test_y fails with the patch at v2: no")
    detected = [
        SmokeResult("fix", "lib", t, device, F, reason="no")
        for t, device in (("m::test_x", "cuda"), ("m::test_y", "cpu"))
    ]
    partly = _judge(_results(P), on_cuda + failing, at_pin=detected)
    assert partly.verdict is Absorption.PARTLY_UPSTREAM and partly.passing_unpatched == ("test_x on cuda",)
    # a test that failed at the pin on the cpu alone says nothing of the cuda lane
    unseen = _judge(_results(P), on_cuda + failing, at_pin=detected[1:])
    assert (unseen.verdict, unseen.reason) == (
        Absorption.NOT_PROVEN,
        "its tests do not detect the bug at the pin: test_x on cuda did not run there",
    )


@pytest.mark.fast
@pytest.mark.parametrize(
    ("at_pin", "reason"),
    [
        ((P, P), "its tests do not detect the bug at the pin: test_0, test_1 pass there without the patch"),
        ((F, P), "its tests do not detect the bug at the pin: test_1 passes there without the patch"),
        ((F, E), "its tests do not detect the bug at the pin: test_1 on cpu did not run to an outcome: why"),
        ((F, T), "its tests do not detect the bug at the pin: test_1 on cpu why"),
    ],
)
def test_a_pass_without_the_patch_is_evidence_only_from_a_test_that_failed_at_the_pin(at_pin, reason):
    # every test passes at v2 without the patch, yet at the pin one of them passed too (or never ran to an outcome)
    found = _judge(_results(P, P), _results(P, P), at_pin=_results(*at_pin))
    assert (found.verdict, found.reason) == (Absorption.NOT_PROVEN, reason)
    assert found.passing_unpatched == ()  # no evidence named as if it were
    assert _judge(_results(P, P), _results(P, F), at_pin=_results(*at_pin)).verdict is Absorption.NOT_PROVEN


@pytest.mark.fast
def test_a_test_failing_with_the_patch_at_the_pin_too_never_detected_its_bug():
    # every test passes at v2 without the patch and failed without it at the pin, but test_1 failed with it there too
    pin, pin_with = _run(_results(F, F), True), _run(_results(P, F), False)
    found = ref_verdict("v2", _run(_results(P, P), False), _run(_results(P, P), True), pin, "", pin_with)
    assert (found.verdict, found.reason) == (
        Absorption.NOT_PROVEN,
        "its tests do not detect the bug at the pin: test_1 fails with the patch there too: why",
    )
    # the ref is the pin (smoke --both): its run with the patch is the pin's, and one that lacks the patch is none
    assert ref_verdict("v2", _run(_results(P, P), False), *[_run(_results(P, P), True)] * 2).verdict is (
        Absorption.NOT_PROVEN
    )
    at_ref = ref_verdict("v2", _run(_results(P, P), False), _run(_results(P, P), True), pin, "it does not apply")
    assert at_ref.verdict is Absorption.NOT_PROVEN
    assert (
        at_ref.reason
        == "its tests do not detect the bug at the pin: test_0 did not run with the patch there: it does not apply"
    )
    held = ref_verdict(
        "v2", _run(_results(P, P), False), _run(_results(P, P), True), pin, "", _run(_results(P, P), False)
    )
    assert held.verdict is Absorption.UPSTREAM


@pytest.mark.fast
def test_tests_that_did_not_run_at_the_pin_say_so():
    not_there = [SmokeResult("fix", "lib", "-", "-", TestOutcome.SKIPPED, reason="lib could not be read at its pin")]
    pin = _run(not_there, True, "lib could not be read at its pin")
    found = ref_verdict("v2", _run(_results(P), False), _run(_results(P), True), pin)
    assert (found.verdict, found.reason) == (
        Absorption.NOT_PROVEN,
        "its tests did not run at the pin: lib could not be read at its pin",
    )


@pytest.mark.fast
def test_tests_failing_at_the_ref_without_the_patch_prove_it_by_that_run_whatever_the_pin_said():
    assert _judge(_results(P, P), _results(F, F), at_pin=_results(P, P)).verdict is Absorption.PROVEN
