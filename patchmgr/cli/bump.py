"""patchmgr bump: refresh the patches at --to, then move the pin (and version) there."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from patchmgr.cli.options import (
    AllowFuzzOpt,
    AllowThreeWayOpt,
    DryRunOpt,
    JsonOpt,
    NeededTargetOpt,
    RootOpt,
    SourceOpt,
    ToOpt,
    UpstreamOpt,
    for_targets,
    required_ref,
    source_overrides,
)
from patchmgr.cli.session import Session


def command(
    target: NeededTargetOpt = None,
    upstream: UpstreamOpt = None,
    to: ToOpt = None,
    keep: Annotated[bool, typer.Option("--keep", help="Keep patches that are already upstream.")] = False,
    allow_fuzz: AllowFuzzOpt = False,
    allow_three_way: AllowThreeWayOpt = False,
    version: Annotated[
        Optional[str],
        typer.Option("--version", help="The upstream's version at --to (default: from a tag such as v0.5.0)."),
    ] = None,
    dry_run: DryRunOpt = False,
    source: SourceOpt = None,
    json_output: JsonOpt = False,
    root: RootOpt = Path("."),
) -> int:
    from patchmgr.maintain.bump import BumpAction, plan_bump, write_bump
    from patchmgr.render.maintain import bump_json, render_bump, render_interdiffs

    session = Session("bump", root, json_output)
    given = source_overrides(source)
    selected, upstream = session.upstream_target(target, upstream, given)
    overrides = for_targets([selected], given)
    ref = required_ref("bump", to)
    with session.store() as store:
        outcome = plan_bump(
            session.project, selected, upstream, store, overrides, ref, keep, allow_three_way, version, allow_fuzz
        )
    if not session.json:
        render_interdiffs(session.out, outcome.plan)
    if outcome.action is BumpAction.PLANNED and not dry_run:
        write_bump(outcome)
    return session.emit(0 if outcome.ok else 1, bump_json, render_bump, outcome)
