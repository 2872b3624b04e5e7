"""patchmgr targets: each target of the project, its upstreams and their pins."""

from __future__ import annotations

from pathlib import Path

from patchmgr.cli import options
from patchmgr.cli.session import Session


def command(json_output: options.JsonOpt = False, root: options.RootOpt = Path(".")) -> int:
    from patchmgr.render.targets import render_targets, targets_json

    session = Session("targets", root, json_output)
    targets, broken = session.project.readable_targets()
    return session.emit(1 if broken else 0, targets_json, render_targets, targets, broken)
