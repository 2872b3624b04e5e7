"""patchmgr revert: put back every file `apply --python` changed, byte for byte, and the original RECORD."""

from __future__ import annotations

from pathlib import Path

from patchmgr.cli import options
from patchmgr.cli.session import Session


def command(
    target: options.NeededTargetOpt = None,
    python: options.EnvPythonOpt = None,
    force: options.ForceOpt = False,
    upstream: options.UpstreamsOpt = None,
    json_output: options.JsonOpt = False,
    root: options.RootOpt = Path("."),
) -> int:
    from patchmgr.render.status import env_json, render_env
    from patchmgr.targets.env_verify import revert_environment

    session = Session("revert", root, json_output)
    if not python:
        raise options.missing(
            "revert", "--python PATH", "a checkout made with --into is reverted by removing it: rm -r DIR"
        )
    only = upstream or []
    selected = session.target(target, only)
    outcome = revert_environment(selected, python, only, force)
    return session.emit(0 if outcome.ok else 1, env_json, render_env, outcome)
