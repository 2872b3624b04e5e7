"""patchmgr status: classify every patch of a target at its pins (or --against refs).

Its options are values (``OPTIONS``, from ``cli/optspec``): typer builds ``patchmgr status`` from them, and the
entry point parses a plain command line with them without typer (``cli/entry.py``). Nothing here imports
typer or rich: a status whose output is not a terminal loads neither.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path

from patchmgr.cli import option_values as options
from patchmgr.cli import optspec
from patchmgr.cli.optspec import Kind, Option
from patchmgr.cli.session import Session
from patchmgr.model.errors import UsageError

FORMATS = ("text", "json", "junit", "markdown", "github")
FORMAT = Option(
    "output_format",
    ("--format",),
    Kind.VALUE,
    "Output: text (the default), json (the same as --json), or a report for CI: junit "
    "(JUnit XML, one test case per patch), markdown (a table for a job summary) or github (workflow "
    "annotations on the patch files). The exit code is the same whatever the format.",
)
NEWEST = Option(
    "newest_release",
    ("--newest-release",),
    Kind.FLAG,
    "Check each upstream at the next ref its manifest's track names: its newest release tag since the "
    "pin (release candidates too with track = prereleases; the pin when none is newer), or its branch tip "
    "with track = branch, as the deciding column of `patchmgr matrix`; an --against ref still wins for its "
    "upstream.",
    default=False,
)
OPTIONS = (
    optspec.NEEDED_TARGET,
    optspec.AGAINST,
    NEWEST,
    optspec.UPSTREAMS,
    optspec.PYTHON,
    optspec.SOURCE,
    optspec.SMOKE_AT_REF,
    optspec.JSON,
    FORMAT,
    optspec.ROOT,
)
"""The options of ``patchmgr status``, in the order its help lists them; ``command`` takes them by ``param``."""


def command(
    *,
    target: str | None,
    against: list[str] | None,
    newest_release: bool,
    upstream: list[str] | None,
    python: str | None,
    source: list[str] | None,
    smoke: bool,
    json_output: bool,
    output_format: str | None,
    root: Path,
) -> int:
    fmt = output_format_of(output_format, json_output)
    if fmt == "text":
        from patchmgr.render.status_plain import for_log

        fmt = "log" if for_log(sys.stdout) else fmt
    session = Session("status", root, fmt == "json", data_on_stdout=fmt not in ("text", "log", "json"))
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
                check_target(
                    session.project, t, sources, refs, only, newest_release, partial(load_output, fmt), kept=True
                )
                for t in targets
            ]
            if smoke:
                from patchmgr.cli.smoke import smoke_progress
                from patchmgr.smoke.at_ref import SmokeOptions, smoke_at_refs

                at_ref = SmokeOptions(progress=smoke_progress(session, fmt != "text"))
                ref_smoke = smoke_at_refs(session.project, targets[0], statuses[0].upstreams, sources, at_ref)
    from patchmgr.check.status import with_project_warnings

    statuses = with_project_warnings(session.project, statuses, targets, target)
    code = 0 if all(s.ok for s in statuses) and (ref_smoke is None or ref_smoke.ok) else 1
    if fmt == "log" and ref_smoke is None:
        from patchmgr.render.status_plain import write_status

        write_status(sys.stdout, statuses)
        return code
    if fmt not in ("text", "log", "json"):
        from patchmgr.render.reports import render_report

        sys.stdout.write(render_report(fmt, statuses, report_base(session.project.root), ref_smoke))
        return code
    if ref_smoke is not None:
        from patchmgr.render.smoke_ref import render_status_smoke, status_smoke_json

        return session.emit(code, status_smoke_json, render_status_smoke, statuses, ref_smoke)
    from patchmgr.render.status_json import status_json

    return session.emit(code, partial(status_json, single=True), load_output(fmt), statuses)


def load_output(fmt: str) -> Callable[..., None]:
    """Import the output code of ``fmt`` (rich, for a terminal), and return the rendering for people (text):
    ``check_target`` calls this while git opens the cached clones. Off a terminal (``log``) and for JSON, no
    rich is loaded."""
    if fmt == "text":
        from patchmgr.render.status import render_status

        return render_status
    import patchmgr.render.status_plain  # noqa: F401

    return lambda console, statuses: None  # JSON: Session.emit prints the document, nothing is rendered


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
