"""patchmgr revert: put back every file `apply --python` changed, byte for byte, and the original RECORD."""

from __future__ import annotations

from pathlib import Path

from patchmgr.cli.options import EnvPythonOpt, ForceOpt, JsonOpt, NeededTargetOpt, RootOpt, UpstreamsOpt, missing
from patchmgr.cli.session import Session


def command(
    target: NeededTargetOpt = None,
    python: EnvPythonOpt = None,
    force: ForceOpt = False,
    upstream: UpstreamsOpt = None,
    json_output: JsonOpt = False,
    root: RootOpt = Path("."),
) -> int:
    from patchmgr.render.status import env_json, render_env
    from patchmgr.targets.env_verify import revert_environment

    session = Session("revert", root, json_output)
    if not python:
        raise missing("revert", "--python PATH", "a checkout made with --into is reverted by removing it: rm -r DIR")
    only = upstream or []
    selected = session.target(target, only)
    outcome = revert_environment(selected, python, only, force)
    return session.emit(0 if outcome.ok else 1, env_json, render_env, outcome)
