"""Smoke results and the verdict per patch: proven only by its own tests that ran in this invocation."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
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


def patch_verdict(
    patch: str, upstream: str, results: Sequence[SmokeResult], unpatched: bool, not_run: str = ""
) -> PatchVerdict:
    """The verdict on one patch from all its results (every test on every device)."""

    def where(r: SmokeResult) -> str:
        name = r.test.rsplit("::", 1)[-1] if "::" in r.test else r.test
        return name + (f" on {r.device}" if r.device != "-" else "")

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
    proof = failed if unpatched else passed
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
