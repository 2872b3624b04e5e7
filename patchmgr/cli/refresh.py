"""patchmgr refresh: rewrite the patches that apply with offsets at --to so they apply exactly there."""

from __future__ import annotations

from pathlib import Path

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
    allow_fuzz: AllowFuzzOpt = False,
    allow_three_way: AllowThreeWayOpt = False,
    dry_run: DryRunOpt = False,
    source: SourceOpt = None,
    json_output: JsonOpt = False,
    root: RootOpt = Path("."),
) -> int:
    from patchmgr.maintain.refresh import plan_refresh, write_refresh
    from patchmgr.render.maintain import refresh_json, render_interdiffs, render_refresh

    session = Session("refresh", root, json_output)
    given = source_overrides(source)
    selected, upstream = session.upstream_target(target, upstream, given)
    overrides = for_targets([selected], given)
    ref = required_ref("refresh", to)
    with session.store() as store:
        plan = plan_refresh(
            session.project,
            selected.upstream(upstream),
            store,
            overrides,
            ref,
            allow_three_way,
            selected.name,
            allow_fuzz,
        )
    if not session.json:
        render_interdiffs(session.out, plan)
    if plan.ok and not dry_run:
        write_refresh(plan)
    return session.emit(0 if plan.ok and not plan.guards_broken else 1, refresh_json, render_refresh, plan, dry_run)
