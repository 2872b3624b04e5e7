"""patchmgr bump: refresh the patches at --to, then move the pin (and version) there."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from patchmgr.cli import options
from patchmgr.cli.session import Session
from patchmgr.model.errors import UsageError

KeepOpt = Annotated[bool, typer.Option("--keep", help="Keep patches that are already upstream.")]
DropBySmokeOpt = Annotated[
    bool,
    typer.Option(
        "--drop-upstream-by-smoke",
        help="With --smoke: drop each patch whose smoke tests all pass at --to without it and, at the pin, "
        "failed without it and passed with it (upstream by smoke), even where it conflicts there; its smoke test "
        "leaves with its file; the output and the manifest's patches line name that evidence.",
    ),
]
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
    smoke: options.SmokeAtRefOpt = False,
    drop_upstream_by_smoke: DropBySmokeOpt = False,
    own_copy: options.OwnCopyOpt = False,
    also_target: options.AlsoTargetOpt = None,
    source: options.SourceOpt = None,
    json_output: options.JsonOpt = False,
    root: options.RootOpt = Path("."),
) -> int:
    from patchmgr.maintain.bump import BumpAction, plan_bump, write_bump
    from patchmgr.maintain.shared_files import Sharing
    from patchmgr.render.maintain import bump_json, render_bump, render_interdiffs

    session = Session("bump", root, json_output)
    at = session.upstream_at_ref(target, upstream, source, to)
    if drop_upstream_by_smoke and (not smoke or keep):
        raise UsageError(
            "--drop-upstream-by-smoke goes with --smoke"
            + (", not with --keep" if smoke else "")
            + "; nothing was written",
            "add --smoke (the evidence is the smoke run at --to)" if not smoke else "drop one of the two",
        )
    ref_smoke = None
    with session.sources(at.overrides) as sources:
        if smoke:  # before the plan: what the tests say at the ref decides what is dropped and what refuses
            from patchmgr.cli.smoke import smoke_progress
            from patchmgr.smoke.at_ref import SmokeOptions, smoke_at_ref

            options_ = SmokeOptions(progress=smoke_progress(session, json_output))
            upstream_ = at.target.upstream(at.upstream)
            ref_smoke = smoke_at_ref(session.project, at.target, upstream_, sources, at.ref, options_)
        by_smoke, failed = ref_smoke.evidence(drop_upstream_by_smoke) if ref_smoke else ({}, {})
        outcome = plan_bump(
            session.project,
            at.target,
            at.upstream,
            sources,
            at.ref,
            keep,
            allow_three_way,
            version,
            allow_fuzz,
            by_smoke,
            failed,
            Sharing.given(own_copy, also_target),
        )
    if not session.json:
        render_interdiffs(session.out, outcome.plan)
    if outcome.action is BumpAction.PLANNED and not dry_run:
        outcome = write_bump(outcome)
    if ref_smoke is not None:
        from patchmgr.render.smoke_ref import bump_smoke_json, render_bump_smoke

        return session.emit(0 if outcome.ok else 1, bump_smoke_json, render_bump_smoke, outcome, ref_smoke)
    return session.emit(0 if outcome.ok else 1, bump_json, render_bump, outcome)
