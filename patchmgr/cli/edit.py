"""patchmgr edit: the upstream at its pin in DIR with each patch as one commit, to edit them with git."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from patchmgr.cli.options import (REQUIRED, ForceOpt, JsonOpt, NeededTargetOpt, RootOpt, SourceOpt, UpstreamOpt,
                                  required_folder, source_overrides)
from patchmgr.cli.session import Session

HELP = ("Check the upstream out at its pin in DIR with each patch as one commit, to edit them with git; write them "
        "back with export.")


def command(
    target: NeededTargetOpt = None,
    upstream: UpstreamOpt = None,
    into: Annotated[Optional[Path], typer.Option("--into", help="New folder for the checkout." + REQUIRED)] = None,
    force: ForceOpt = False,
    source: SourceOpt = None,
    json_output: JsonOpt = False,
    root: RootOpt = Path("."),
) -> int:
    from patchmgr.maintain.roundtrip import edit_checkout
    from patchmgr.render.maintain import edit_json, render_edit
    session = Session("edit", root, json_output)
    overrides = source_overrides(source)
    selected = session.upstream_target(target, upstream, overrides)
    into = required_folder("edit", "--into", into, "give a new folder for the checkout")
    with session.store() as store:
        outcome = edit_checkout(session.project, selected, upstream, store, overrides, into, force)
    return session.emit(0, edit_json, render_edit, outcome)
