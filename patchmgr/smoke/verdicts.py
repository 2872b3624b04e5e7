"""Smoke results and the verdict per patch: proven only by its own tests that ran in this invocation.

The one rule of what detects a bug lives here (``detects_bug``): a test detects its patch's bug only by failing its
own assertion without the patch (``smoke.pytest_run.outcome_of`` makes any other exception an error). ``smoke
--unpatched`` proves a patch by it; ``smoke --both`` and smoke at a ref (``smoke.absorption``) take a test's pass
without the patch as evidence that the fix is there only when it detected the bug at the pin: failed its assertion
there without the patch and passed with it (``undetected_at_pin``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from patchmgr.smoke.interpreter import PythonNeed


class TestOutcome(StrEnum):
    """What became of one smoke test."""

    __test__ = False  # a value, not a test class (pytest collects names that start with Test)

    PASSED = "passed"
    FAILED = "failed"  # an assertion failure: a junit <failure>
    ERROR = "error"  # a collection, fixture or import error, or pytest not running: it proves nothing either way
    SKIPPED = "skipped"
    TIMED_OUT = "timed-out"  # past the per-test time limit, its process tree ended: never a pass nor a failure


@dataclass(frozen=True)
class SmokeResult:
    patch: str
    upstream: str
    test: str
    device: str
    result: TestOutcome
    seconds: float = 0.0
    reason: str = ""


NO_SMOKE_TEST = "the patch names no Smoke-Test"


class Verdict(StrEnum):
    """What a smoke run says of one patch."""

    PROVEN = "proven"
    FAILED = "failed"
    NOT_PROVEN = "not-proven"


@dataclass(frozen=True)
class PatchVerdict:
    """What one smoke run proved about one patch, and why."""

    patch: str
    upstream: str
    verdict: Verdict
    reason: str


@dataclass
class SmokeReport:
    target: str
    unpatched: bool
    results: list[SmokeResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    verdicts: list[PatchVerdict] = field(default_factory=list)
    python_needs: list[PythonNeed] = field(default_factory=list)  # each upstream's Requires-Python, checked

    def with_verdict(self, verdict: Verdict) -> list[PatchVerdict]:
        return [v for v in self.verdicts if v.verdict is verdict]

    @property
    def ok(self) -> bool:
        """Every selected patch proven by tests that ran in this invocation (and there was one to prove)."""
        return bool(self.verdicts) and all(v.verdict is Verdict.PROVEN for v in self.verdicts)


@dataclass(frozen=True)
class PatchRun:
    """One patch in one smoke run: its verdict there and its results (every test on every device)."""

    verdict: PatchVerdict
    results: tuple[SmokeResult, ...] = ()


def detects_bug(result: SmokeResult) -> bool:
    """Whether a test's result without the patch shows that it detects the patch's bug: it failed its own assertion.
    A pass, an error (any exception but a failed assertion), a skip or a time-out shows nothing of the kind."""
    return result.result is TestOutcome.FAILED


UNDETECTED = "its tests do not detect the bug at the pin"


def undetected_at_pin(at_pin: PatchRun, tests: Sequence[SmokeResult], with_patch_at_pin: PatchRun) -> str:
    """Why ``tests`` (results of the patch's tests somewhere else) are no evidence about its bug: "" when the patch's
    tests detect its bug at the pin, each of ``tests`` one of them on its device; else the reason, in words. A test
    detects the bug there by failing its assertion without the patch (``at_pin``: its run without the patch there
    proves the patch) and passing with it (``with_patch_at_pin``): one that fails with the patch too tests something
    else than what the patch fixes (a feature only a later upstream has), so its pass elsewhere says nothing of the
    patch's fix."""
    pin = at_pin.verdict
    if pin.verdict is Verdict.FAILED:  # a test passes at the pin without the patch
        passing = [r for r in at_pin.results if r.result is TestOutcome.PASSED]
        names = ", ".join(dict.fromkeys(short_name(r) for r in passing))
        return f"{UNDETECTED}: {names} {'pass' if len(passing) > 1 else 'passes'} there without the patch"
    if pin.verdict is not Verdict.PROVEN:
        ran = any(r.result is not TestOutcome.SKIPPED for r in at_pin.results)
        return f"{UNDETECTED}: {pin.reason}" if ran else f"its tests did not run at the pin: {pin.reason}"
    failing = {(r.test, r.device) for r in at_pin.results if detects_bug(r)}
    passing_with = {(r.test, r.device) for r in with_patch_at_pin.results if r.result is TestOutcome.PASSED}
    unseen = [r for r in tests if (r.test, r.device) not in failing]
    if unseen:
        return f"{UNDETECTED}: {short_name(unseen[0])} did not run there"
    with_patch = {(r.test, r.device): r for r in with_patch_at_pin.results}
    unfixed = next((r for r in tests if (r.test, r.device) not in passing_with), None)
    if unfixed is None:
        return ""
    said = with_patch.get((unfixed.test, unfixed.device))
    if said is None:
        return (
            f"{UNDETECTED}: {short_name(unfixed)} did not run with the patch there: {with_patch_at_pin.verdict.reason}"
        )
    how = {TestOutcome.FAILED: "fails", TestOutcome.SKIPPED: "was skipped"}.get(said.result, "ran to no outcome")
    why = f": {said.reason}" if said.reason else ""
    return f"{UNDETECTED}: {short_name(unfixed)} {how} with the patch there too{why}"


def short_name(result: SmokeResult, cpu_named: bool = False) -> str:
    """A test as people read it: its pytest name, with its device when that is not ``cpu`` (or ``cpu_named``)."""
    name = result.test.rsplit("::", 1)[-1] if "::" in result.test else result.test
    unnamed = ("-",) if cpu_named else ("cpu", "-")
    return name + (f" on {result.device}" if result.device not in unnamed else "")


def on_another_python(
    verdicts: Sequence[PatchVerdict], results: Sequence[SmokeResult], unpatched: bool, why: Callable[[str], str]
) -> list[PatchVerdict]:
    """The verdicts of tests run on an interpreter outside the Python the upstream's tests need (``smoke-python`` or
    its Requires-Python, when no interpreter on the machine fits): only a pass counts there, so only a patched run's
    proof stands. A failure or an error there says nothing about the patch: the patched run's failure is not proven,
    and so is the unpatched run's proof (its tests failing). ``why`` gives the reason from the verdict's own. A patch
    none of whose tests ran (it names no Smoke-Test, its tree is not applied, no device) keeps its own reason:
    another Python would not help."""
    ran = {r.patch for r in results if r.result is not TestOutcome.SKIPPED}
    return [
        v
        if (v.verdict is Verdict.PROVEN and not unpatched) or v.patch not in ran
        else replace(v, verdict=Verdict.NOT_PROVEN, reason=why(v.reason))
        for v in verdicts
    ]


def patch_verdict(
    patch: str, upstream: str, results: Sequence[SmokeResult], unpatched: bool, not_run: str = ""
) -> PatchVerdict:
    """The verdict on one patch from all its results (every test on every device)."""

    def where(r: SmokeResult) -> str:  # the device always: a plain smoke run's lines name it
        return short_name(r, cpu_named=True)

    def judged(verdict: Verdict, reason: str) -> PatchVerdict:
        return PatchVerdict(patch, upstream, verdict, reason)

    if not_run:
        return judged(Verdict.NOT_PROVEN, not_run)
    passed = [r for r in results if r.result is TestOutcome.PASSED]
    failed = [r for r in results if r.result is TestOutcome.FAILED]
    errors = [r for r in results if r.result is TestOutcome.ERROR]
    timed_out = [r for r in results if r.result is TestOutcome.TIMED_OUT]
    if unpatched and passed:
        more = f" ({len(passed)} tests pass)" if len(passed) > 1 else ""
        return judged(Verdict.FAILED, f"{where(passed[0])} passes without the patch: it does not detect the bug{more}")
    if not unpatched and failed:
        return judged(Verdict.FAILED, f"{where(failed[0])} failed: {failed[0].reason}")
    if timed_out:
        more = f" (and {len(timed_out) - 1} more)" if len(timed_out) > 1 else ""
        return judged(Verdict.NOT_PROVEN, f"{where(timed_out[0])} {timed_out[0].reason}{more}")
    if errors:
        more = f" (and {len(errors) - 1} more errors)" if len(errors) > 1 else ""
        return judged(Verdict.NOT_PROVEN, f"{where(errors[0])} did not run to an outcome: {errors[0].reason}{more}")
    proof = [r for r in results if detects_bug(r)] if unpatched else passed
    if not proof:
        skips = list(dict.fromkeys(r.reason or "skipped" for r in results if r.result is TestOutcome.SKIPPED))
        return judged(Verdict.NOT_PROVEN, "no test ran" + (f": {'; '.join(skips)}" if skips else ""))
    devices = ", ".join(sorted({r.device for r in proof}))
    if unpatched:
        return judged(
            Verdict.PROVEN,
            f"{len(proof)} tests fail their assertions without the patch on {devices}: they detect its bug",
        )
    return judged(Verdict.PROVEN, f"{len(proof)} tests passed on {devices}")
