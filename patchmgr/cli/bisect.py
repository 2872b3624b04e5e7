"""patchmgr bisect: the upstream commit between the pin and --to where each patch stops applying."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from patchmgr.cli.options import (
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
    patch: Annotated[
        Optional[list[str]], typer.Option("--patch", help="Only this patch, whatever its state at --to (repeatable).")
    ] = None,
    source: SourceOpt = None,
    json_output: JsonOpt = False,
    root: RootOpt = Path("."),
) -> int:
    from patchmgr.history.bisect import bisect_upstream
    from patchmgr.render.maintain import bisect_json, render_bisect

    session = Session("bisect", root, json_output)
    given = source_overrides(source)
    selected, upstream = session.upstream_target(target, upstream, given)
    overrides = for_targets([selected], given)
    ref = required_ref("bisect", to)
    with session.store() as store:
        result = bisect_upstream(session.project, selected.upstream(upstream), store, overrides, ref, patch or ())
    return session.emit(0 if result.ok else 1, bisect_json, render_bisect, result)
