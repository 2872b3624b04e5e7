"""patchmgr status: classify every patch of a target at its pins (or --against refs)."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Annotated, Optional

import typer

from patchmgr.cli.options import (JsonOpt, PythonOpt, RootOpt, SourceOpt, TargetOpt, UpstreamsOpt, against_refs,
                                  source_overrides)
from patchmgr.cli.session import Session
from patchmgr.model.errors import UsageError

HELP = "Classify every patch of a target at its pins (or --against refs)."

AgainstOpt = Annotated[Optional[list[str]], typer.Option(
    "--against", help="NAME=REF: check upstream NAME at a branch, tag or commit (or, for an upstream "
    "with `pypi`, a release version) instead of its pin.")]


def command(
    target: TargetOpt = None,
    against: AgainstOpt = None,
    upstream: UpstreamsOpt = None,
    python: PythonOpt = None,
    source: SourceOpt = None,
    json_output: JsonOpt = False,
    root: RootOpt = Path("."),
) -> int:
    from patchmgr.render.status import render_status, status_json
    session = Session("status", root, json_output)
    overrides, refs, only = source_overrides(source), against_refs(against), upstream or []
    targets = session.targets(target, overrides, refs, only)
    if python and refs:
        raise UsageError("--python checks the installed files; it cannot be combined with --against",
                         "drop one of the two")
    with session.store() as store:
        if python:
            from patchmgr.targets.installed import check_environment
            statuses = [check_environment(session.project, t, store, overrides, python, only)[0] for t in targets]
        else:
            from patchmgr.check.status import check_target
            statuses = [check_target(session.project, t, store, overrides, refs, only) for t in targets]
    project = session.project
    unlisted = project.unlisted_patches(targets if not target else project.targets())
    for status in statuses:
        status.warnings += [f"{p.relative_to(project.root)} is listed by no manifest" for p in unlisted]
    code = 0 if all(s.ok for s in statuses) else 1
    return session.emit(code, partial(status_json, single=bool(target)), render_status, statuses)
