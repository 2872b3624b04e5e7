"""What a patch's smoke tests say of it at a ref, run there with and without it: proven, already upstream (the fix
is there by the tests' own word), partly upstream, failed, or not proven with its own reason.

``smoke.at_ref`` runs the tests (``smoke.runner.run_smoke``, patched and unpatched, in a scratch checkout at the
ref, and without them at the pin); this module only reads those results. A test is named by its pytest name, with
its device when that is not ``cpu``. Only a test's own assertion counts: an error, a time-out or a skip is never a
pass nor a failure, in any run; and a test's pass without the patch at the ref is evidence only when it failed its
assertion without the patch at the pin.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from patchmgr.smoke.verdicts import (
    NO_SMOKE_TEST,
    PatchRun,
    PatchVerdict,
    SmokeResult,
    TestOutcome,
    Verdict,
    short_name,
    undetected_at_pin,
)


class Absorption(StrEnum):
    """A patch's smoke verdict at a ref."""

    PROVEN = "proven"  # its tests fail without it and pass with it
    UPSTREAM = "upstream-by-smoke"  # every test passes without it: the fix is there
    PARTLY_UPSTREAM = "partly-upstream"  # some tests pass without it: review the patch
    FAILED = "failed"  # a test fails with it
    NOT_PROVEN = "not-proven"

    @property
    def label(self) -> str:
        """As people read it: ``upstream (by smoke)``, ``partly upstream``, ``not proven``."""
        return {
            Absorption.UPSTREAM: "upstream (by smoke)",
            Absorption.PARTLY_UPSTREAM: "partly upstream",
            Absorption.NOT_PROVEN: "not proven",
        }.get(self, self.value)


@dataclass(frozen=True)
class RefVerdict:
    """One patch's smoke verdict at ``ref``, why, and the tests that pass without the patch there."""

    patch: str
    upstream: str
    ref: str
    verdict: Absorption
    reason: str
    passing_unpatched: tuple[str, ...] = ()  # the tests that pass at the ref without the patch (named)
    tests: tuple[str, ...] = ()  # every test that ran to an outcome without the patch


def _names(results: Sequence[SmokeResult]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(short_name(r) for r in results))


def ref_verdict(
    ref: str,
    with_patch: PatchRun,
    without_patch: PatchRun,
    at_pin: PatchRun,
    not_applied: str = "",
    with_patch_at_pin: PatchRun | None = None,
) -> RefVerdict:
    """The verdict on one patch at ``ref`` from its run there with the patch, its run there without it, and its runs
    without and with it at the pin (``at_pin``: the run without it when ``ref`` is the pin, as for ``smoke --both``;
    ``with_patch_at_pin``: None when ``ref`` is the pin, whose run with the patch is ``with_patch``);
    ``not_applied`` says why the scratch checkout does not hold the patch (it does not apply at the ref), so that
    its run with the patch is no run of it.

    A test that passes at ``ref`` without the patch says the fix is there only when it detected the bug at the pin
    (``smoke.verdicts.undetected_at_pin``: it failed its assertion there without the patch and passed with it): a
    test that passes without the patch at the pin as well never detected it, one that fails with the patch there
    too tests something else, and the patch is *not proven* (``its tests do not detect the bug at the pin``), never
    upstream by smoke. The tests failing at ``ref`` without the patch and passing with it prove it there by that
    run alone."""
    patched, unpatched = with_patch.verdict, without_patch.verdict
    if with_patch_at_pin is None:  # the ref is the pin: its run with the patch is the pin's, unless it lacks it
        unheld = PatchRun(PatchVerdict(patched.patch, patched.upstream, Verdict.NOT_PROVEN, not_applied))
        with_patch_at_pin = unheld if not_applied else with_patch

    def judged(verdict: Absorption, reason: str, passing: Sequence[SmokeResult] = ()) -> RefVerdict:
        ran = [r for r in without_patch.results if r.result in (TestOutcome.PASSED, TestOutcome.FAILED)]
        return RefVerdict(patched.patch, patched.upstream, ref, verdict, reason, _names(passing), _names(ran))

    if unpatched.reason == NO_SMOKE_TEST or patched.reason == NO_SMOKE_TEST:
        return judged(Absorption.NOT_PROVEN, NO_SMOKE_TEST)
    failing = [r for r in with_patch.results if r.result is TestOutcome.FAILED] if not not_applied else []
    passes = [r for r in without_patch.results if r.result is TestOutcome.PASSED]
    fails = [r for r in without_patch.results if r.result is TestOutcome.FAILED]
    undecided = [r for r in without_patch.results if r.result in (TestOutcome.ERROR, TestOutcome.TIMED_OUT)]
    if failing:
        first = failing[0]
        more = f" (and {len(failing) - 1} more)" if len(failing) > 1 else ""
        return judged(Absorption.FAILED, f"{short_name(first)} fails with the patch at {ref}: {first.reason}{more}")
    if passes and (why := undetected_at_pin(at_pin, passes, with_patch_at_pin)):
        return judged(Absorption.NOT_PROVEN, why)
    if passes and not fails and not undecided:
        return judged(
            Absorption.UPSTREAM,
            f"every test passes at {ref} without the patch, so the fix is there: {', '.join(_names(passes))}",
            passes,
        )
    if passes:
        shown = ", ".join(_names(passes))
        rest = f"{len(_names(fails))} fail without it" if fails else ""
        rest += (", " if rest else "") + f"{len(_names(undecided))} ran to no outcome" if undecided else ""
        return judged(
            Absorption.PARTLY_UPSTREAM,
            f"{len(_names(passes))} tests pass at {ref} without the patch ({shown}); {rest}: "
            "that part of the fix is there, review the patch",
            passes,
        )
    if not_applied:
        said = "its tests fail without it there: the bug is still there" if fails and not undecided else ""
        said = said or f"without it: {unpatched.reason}"
        return judged(Absorption.NOT_PROVEN, f"{not_applied}; {said}")
    if patched.verdict is Verdict.PROVEN and unpatched.verdict is Verdict.PROVEN:
        return judged(Absorption.PROVEN, f"{len(_names(fails))} tests fail at {ref} without the patch and pass with it")
    if patched.verdict is not Verdict.PROVEN:
        return judged(Absorption.NOT_PROVEN, f"with the patch: {patched.reason}")
    return judged(Absorption.NOT_PROVEN, f"without the patch: {unpatched.reason}")
