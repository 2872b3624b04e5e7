"""patchmgr status: classify every patch of a target at its pins (or --against refs)."""

from __future__ import annotations

import sys
from functools import partial
from pathlib import Path
from typing import Annotated, Optional

import typer

from patchmgr.cli import options
from patchmgr.cli.session import Session
from patchmgr.model.errors import UsageError

FORMATS = ("text", "json", "junit", "markdown", "github")
FormatOpt = Annotated[
    Optional[str],
    typer.Option(
        "--format",
        help="Output: text (the default), json (the same as --json), or a report for CI: junit "
        "(JUnit XML, one test case per patch), markdown (a table for a job summary) or github (workflow "
        "annotations on the patch files). The exit code is the same whatever the format.",
    ),
]
NewestOpt = Annotated[
    bool,
    typer.Option(
        "--newest-release",
        help="Check each upstream at its newest release tag since the pin (the last release column "
        "of `patchmgr matrix`; the pin when none is newer); an --against ref still wins for its upstream.",
    ),
]


def command(
    target: options.NeededTargetOpt = None,
    against: options.AgainstOpt = None,
    newest_release: NewestOpt = False,
    upstream: options.UpstreamsOpt = None,
    python: options.PythonOpt = None,
    source: options.SourceOpt = None,
    smoke: options.SmokeAtRefOpt = False,
    json_output: options.JsonOpt = False,
    output_format: FormatOpt = None,
    root: options.RootOpt = Path("."),
) -> int:
    fmt = output_format_of(output_format, json_output)
    session = Session("status", root, fmt == "json", data_on_stdout=fmt not in ("text", "json"))
    given, asked, only = options.source_overrides(source), options.against_refs(against), upstream or []
    targets = [session.target(target, given, asked, only)]
    overrides, refs = options.for_targets(targets, given), options.for_targets(targets, asked)
    if python and (refs or newest_release):
        raise UsageError(
            "--python checks the installed files; it cannot be combined with "
            f"{'--against' if refs else '--newest-release'}",
            "drop one of the two",
        )
    if smoke and not (refs or newest_release):
        raise UsageError(
            "--smoke runs the smoke tests at the --against or --newest-release refs",
            "name a ref (--against NAME=REF or --newest-release); at the pins, run `patchmgr smoke`",
        )
    ref_smoke = None
    with session.sources(overrides) as sources:
        if python:
            from patchmgr.targets.installed import check_environment

            statuses = [check_environment(session.project, t, sources, python, only)[0] for t in targets]
        else:
            from patchmgr.check.status import check_target

            statuses = [
                check_target(session.project, t, sources, refs, only, newest_release, load_output) for t in targets
            ]
            if smoke:
                from patchmgr.cli.smoke import smoke_progress
                from patchmgr.smoke.at_ref import SmokeOptions, smoke_at_refs

                at_ref = SmokeOptions(progress=smoke_progress(session, fmt != "text"))
                ref_smoke = smoke_at_refs(session.project, targets[0], statuses[0].upstreams, sources, at_ref)
    from patchmgr.check.status import with_project_warnings

    statuses = with_project_warnings(session.project, statuses, targets, target)
    code = 0 if all(s.ok for s in statuses) and (ref_smoke is None or ref_smoke.ok) else 1
    if fmt not in ("text", "json"):
        from patchmgr.render.reports import render_report

        sys.stdout.write(render_report(fmt, statuses, report_base(session.project.root), ref_smoke))
        return code
    if ref_smoke is not None:
        from patchmgr.render.smoke_ref import render_status_smoke, status_smoke_json

        return session.emit(code, status_smoke_json, render_status_smoke, statuses, ref_smoke)
    from patchmgr.render.status import render_status, status_json

    return session.emit(code, partial(status_json, single=True), render_status, statuses)


def load_output() -> None:
    """Import the output code (rich above all): ``check_target`` calls this while git opens the cached clones."""
    import patchmgr.render.status  # noqa: F401


def output_format_of(value: str | None, json_output: bool) -> str:
    """``--format`` checked; ``--json`` is ``--format json``, and asking for two outputs is bad input."""
    if value is not None and value not in FORMATS:
        raise UsageError(
            f"--format {value!r} is not one of {', '.join(FORMATS)}",
            "for a CI report: --format junit, --format markdown or --format github",
        )
    if json_output and value not in (None, "json"):
        raise UsageError(
            f"--json and --format {value} ask for two different outputs",
            "pick one (--json is the same as --format json)",
        )
    return "json" if json_output else value or "text"


def report_base(project_root: Path) -> Path:
    """What the reports' paths are relative to: the current folder when the project is in it (CI runs in the
    repository's checkout, and annotations name files from there), else the project root."""
    cwd = Path.cwd().resolve()
    return cwd if project_root.resolve().is_relative_to(cwd) else project_root
