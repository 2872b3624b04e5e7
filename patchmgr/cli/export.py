"""patchmgr export: the commits of an edit checkout back as patch files, and the series updated."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from patchmgr.cli import options
from patchmgr.cli.session import Session

EditCheckoutOpt = Annotated[
    Optional[Path], typer.Option("--from", help="The folder that patchmgr edit made." + options.REQUIRED)
]
VersionOpt = Annotated[
    Optional[str],
    typer.Option(
        "--version",
        help="From an edit --onto checkout: the upstream's version at the new ref (default: from a "
        "tag such as v0.5.0).",
    ),
]


def command(
    target: options.NeededTargetOpt = None,
    upstream: options.UpstreamOpt = None,
    from_dir: EditCheckoutOpt = None,
    version: VersionOpt = None,
    json_output: options.JsonOpt = False,
    root: options.RootOpt = Path("."),
) -> int:
    from patchmgr.maintain.roundtrip import export_checkout
    from patchmgr.render.maintain import export_json, render_export

    session = Session("export", root, json_output)
    selected, upstream = session.upstream_target(target, upstream)
    from_dir = options.required_folder("export", "--from", from_dir, "give the folder that `patchmgr edit --into` made")
    outcome = export_checkout(session.project, selected, upstream, from_dir, version)
    return session.emit(0 if outcome.guards_hold else 1, export_json, render_export, outcome)
