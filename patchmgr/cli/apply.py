"""patchmgr apply: check out each upstream at its pin under DIR (or patch an environment), all or nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from patchmgr.cli import options
from patchmgr.cli.session import Session

ApplyDryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Check everything, write nothing.")]


def command(
    target: options.NeededTargetOpt = None,
    into: options.NewIntoOpt = None,
    python: options.PythonOpt = None,
    dry_run: ApplyDryRunOpt = False,
    force: options.ForceOpt = False,
    upstream: options.UpstreamsOpt = None,
    source: options.SourceOpt = None,
    json_output: options.JsonOpt = False,
    root: options.RootOpt = Path("."),
) -> int:
    session = Session("apply", root, json_output)
    given, only = options.source_overrides(source), upstream or []
    selected, place = session.placed_target(target, into, python, given, only)
    overrides = options.for_targets([selected], given)
    with session.sources(overrides) as sources:
        if isinstance(place, str):  # --python PATH
            from patchmgr.render.status import env_json, render_env
            from patchmgr.targets.installed import apply_environment

            env = apply_environment(session.project, selected, sources, place, only, dry_run, force)
            return session.emit(0 if env.ok else 1, env_json, render_env, env)
        from patchmgr.render.status import apply_json, render_apply
        from patchmgr.targets.checkout import apply_into

        outcome = apply_into(session.project, selected, sources, place, dry_run, only, force)
    return session.emit(0 if outcome.ok else 1, apply_json, render_apply, outcome)
