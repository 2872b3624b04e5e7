"""patchmgr bump: refresh the patches at --to, then move the pin (and version) there."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from patchmgr.cli import options
from patchmgr.cli.session import Session

KeepOpt = Annotated[bool, typer.Option("--keep", help="Keep patches that are already upstream.")]
VersionAtRefOpt = Annotated[
    Optional[str],
    typer.Option("--version", help="The upstream's version at --to (default: from a tag such as v0.5.0)."),
]


def command(
    target: options.NeededTargetOpt = None,
    upstream: options.UpstreamOpt = None,
    to: options.ToOpt = None,
    keep: KeepOpt = False,
    allow_fuzz: options.AllowFuzzOpt = False,
    allow_three_way: options.AllowThreeWayOpt = False,
    version: VersionAtRefOpt = None,
    dry_run: options.DryRunOpt = False,
    source: options.SourceOpt = None,
    json_output: options.JsonOpt = False,
    root: options.RootOpt = Path("."),
) -> int:
    from patchmgr.maintain.bump import BumpAction, plan_bump, write_bump
    from patchmgr.render.maintain import bump_json, render_bump, render_interdiffs

    session = Session("bump", root, json_output)
    at = session.upstream_at_ref(target, upstream, source, to)
    with session.sources(at.overrides) as sources:
        outcome = plan_bump(
            session.project, at.target, at.upstream, sources, at.ref, keep, allow_three_way, version, allow_fuzz
        )
    if not session.json:
        render_interdiffs(session.out, outcome.plan)
    if outcome.action is BumpAction.PLANNED and not dry_run:
        outcome = write_bump(outcome)
    return session.emit(0 if outcome.ok else 1, bump_json, render_bump, outcome)
