"""patchmgr smoke: run each patch's smoke tests against the upstream code in DIR (or an environment)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Optional

import typer

from patchmgr.cli import options
from patchmgr.cli.session import Session


def command(
    target: options.NeededTargetOpt = None,
    into: options.AppliedIntoOpt = None,
    device: Annotated[str, typer.Option("--device", help="auto, cpu, cuda or npu.")] = "auto",
    unpatched: Annotated[
        bool,
        typer.Option(
            "--unpatched",
            help="Run against the pinned upstream without the patches; exit 0 only if every "
            "patch's tests fail there by assertion (each detects its bug).",
        ),
    ] = False,
    upstream: options.UpstreamsOpt = None,
    python: Annotated[
        Optional[str],
        typer.Option(
            "--python",
            help="Interpreter of an installed environment to test (instead of --into DIR); with --into DIR, "
            "the interpreter that runs DIR's tests.",
        ),
    ] = None,
    timeout: options.SmokeTimeoutOpt = None,
    both: Annotated[
        bool,
        typer.Option(
            "--both",
            help="Run each patch's tests with and without it at the pin, in one call: proven (fails without, passes "
            "with), failed, or not proven (a test that passes without it does not detect the bug); exit 0 only when "
            "every patch is proven.",
        ),
    ] = False,
    json_output: options.JsonOpt = False,
    root: options.RootOpt = Path("."),
) -> int:
    from patchmgr.render.smoke import render_smoke, smoke_json
    from patchmgr.smoke.runner import check_run_options, run_smoke
    from patchmgr.targets.verified_trees import verified_trees

    session = Session("smoke", root, json_output)
    if both and unpatched:
        from patchmgr.model.errors import UsageError

        raise UsageError("--both runs the tests with and without the patches; --unpatched only without", "pick one")
    only = upstream or []
    # --into with --python: the checkout's code on another interpreter (an upstream that needs a newer Python)
    selected, place = session.placed_target(target, into, None if into is not None else python, only)
    check_run_options(device, timeout)  # bad input before the build is looked at
    # --python PATH alone (place is a str): an installed environment; every mode tests only a build that verifies
    trees = verified_trees(session.project, selected, place, only)
    progress = smoke_progress(session, json_output)
    if both:
        from patchmgr.render.smoke_ref import both_json, render_ref_smoke
        from patchmgr.smoke.at_ref import SmokeOptions, smoke_both

        ran = smoke_both(session.project, selected, trees, SmokeOptions(device, timeout, progress, python))
        return session.emit(0 if ran.all_proven else 1, both_json, render_ref_smoke, ran)
    result = run_smoke(session.project, selected, trees, device, unpatched, python, progress, timeout)
    return session.emit(0 if result.ok else 1, smoke_json, render_smoke, result)


def smoke_progress(session: Session, quiet: bool) -> Callable[[str], None] | None:
    """Where smoke's progress goes: a line on stderr as each run starts and ends when stdout is a log (CI, docker
    build); dim lines on a terminal unless the output is data (``quiet``: JSON or a report); else nowhere."""
    from patchmgr.render.console import say

    err = session.console(stderr=True)
    if not session.console(stderr=False).is_terminal:
        return lambda message: say(err, f"smoke: {message}")
    if err.is_terminal and not quiet:
        return lambda message: say(err, f"… {message}", "dim")
    return None
