"""patchmgr targets: each target of the project, its upstreams and their pins, and where an upstream's source is
set outside the manifest (``PATCHMGR_SOURCES``, the configuration files)."""

from __future__ import annotations

from pathlib import Path

from patchmgr.cli import options
from patchmgr.cli.session import Session


def command(json_output: options.JsonOpt = False, root: options.RootOpt = Path(".")) -> int:
    import os

    from patchmgr.render.targets import render_targets, targets_json
    from patchmgr.sources.settings import configured

    session = Session("targets", root, json_output)
    targets, broken = session.project.readable_targets()
    settings = configured(session.project.root, os.environ).settings  # where --source is set once, if anywhere
    return session.emit(1 if broken else 0, targets_json, render_targets, targets, broken, settings)
