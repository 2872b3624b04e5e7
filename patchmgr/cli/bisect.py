"""patchmgr bisect: the upstream commit between the pin and --to where each patch stops applying."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from patchmgr.cli import options
from patchmgr.cli.session import Session

PatchOpt = Annotated[
    Optional[list[str]], typer.Option("--patch", help="Only this patch, whatever its state at --to (repeatable).")
]


def command(
    target: options.NeededTargetOpt = None,
    upstream: options.UpstreamOpt = None,
    to: options.ToOpt = None,
    patch: PatchOpt = None,
    source: options.SourceOpt = None,
    json_output: options.JsonOpt = False,
    root: options.RootOpt = Path("."),
) -> int:
    from patchmgr.history.bisect import bisect_upstream
    from patchmgr.history.walk import PatchHistory
    from patchmgr.render.maintain import bisect_json, found_line, render_bisect

    session = Session("bisect", root, json_output)
    at = session.upstream_at_ref(target, upstream, source, to)

    def found(history: PatchHistory, done: int, total: int) -> None:  # each answer on stderr as it comes
        session.console(stderr=True).print(found_line(history, done, total))

    with session.sources(at.overrides) as sources:
        result = bisect_upstream(
            session.project,
            at.target.upstream(at.upstream),
            sources,
            at.ref,
            patch or (),
            None if json_output else found,
        )
    return session.emit(0 if result.ok else 1, bisect_json, render_bisect, result)
