"""patchmgr refresh: rewrite the patches that apply with offsets at --to so they apply exactly there."""

from __future__ import annotations

from pathlib import Path

from patchmgr.cli import options
from patchmgr.cli.session import Session


def command(
    target: options.NeededTargetOpt = None,
    upstream: options.UpstreamOpt = None,
    to: options.ToOpt = None,
    allow_fuzz: options.AllowFuzzOpt = False,
    allow_three_way: options.AllowThreeWayOpt = False,
    dry_run: options.DryRunOpt = False,
    own_copy: options.OwnCopyOpt = False,
    also_target: options.AlsoTargetOpt = None,
    source: options.SourceOpt = None,
    json_output: options.JsonOpt = False,
    root: options.RootOpt = Path("."),
) -> int:
    from patchmgr.maintain.refresh import plan_refresh, write_refresh
    from patchmgr.maintain.shared_files import Sharing
    from patchmgr.render.maintain import refresh_json, render_interdiffs, render_refresh

    session = Session("refresh", root, json_output)
    at = session.upstream_at_ref(target, upstream, source, to)
    with session.sources(at.overrides) as sources:
        plan = plan_refresh(
            session.project,
            at.target.upstream(at.upstream),
            sources,
            at.ref,
            allow_three_way,
            at.target.name,
            allow_fuzz,
            Sharing.given(own_copy, also_target),
        )
    if not session.json:
        render_interdiffs(session.out, plan)
    if plan.ok and not dry_run:
        write_refresh(plan)
    return session.emit(0 if plan.ok and not plan.guards_broken else 1, refresh_json, render_refresh, plan, dry_run)
