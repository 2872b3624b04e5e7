"""patchmgr roots: the import root of each upstream applied into DIR, one per line (for an image build)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from patchmgr.cli import options
from patchmgr.cli.session import Session


def command(
    target: options.NeededTargetOpt = None,
    into: Annotated[
        Optional[Path], typer.Option("--into", help="Folder that apply --into wrote." + options.REQUIRED)
    ] = None,
    upstream: options.UpstreamsOpt = None,
    json_output: options.JsonOpt = False,
    root: options.RootOpt = Path("."),
) -> int:
    from patchmgr.render.status import render_roots, roots_json
    from patchmgr.targets.trees import checkout_trees

    session = Session("roots", root, json_output, data_on_stdout=True)
    into = options.required_folder("roots", "--into", into, "give the folder that `patchmgr apply --into` wrote")
    selected = session.target(target, upstream or [])
    trees = checkout_trees(selected, into, upstream or [])
    code = 0 if any(tree.patched_root is not None for tree in trees) else 1
    if not session.json:  # on stderr: stdout holds only the NAME ROOT lines
        session.say_notes(
            [note for tree in trees for note in tree.notes]
            + [tree.reason for tree in trees if tree.patched_root is None]
        )
    return session.emit(code, roots_json, render_roots, trees)
