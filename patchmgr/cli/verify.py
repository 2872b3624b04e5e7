"""patchmgr verify: prove that DIR (or an environment) holds exactly the pinned upstreams and the target's patches."""

from __future__ import annotations

from pathlib import Path

from patchmgr.cli import options
from patchmgr.cli.session import Session


def command(
    target: options.NeededTargetOpt = None,
    into: options.AppliedIntoOpt = None,
    python: options.PythonOpt = None,
    upstream: options.UpstreamsOpt = None,
    json_output: options.JsonOpt = False,
    root: options.RootOpt = Path("."),
) -> int:
    session = Session("verify", root, json_output)
    only = upstream or []
    selected, place = session.placed_target(target, into, python, only)
    if isinstance(place, str):  # --python PATH
        from patchmgr.render.status import env_json, render_env
        from patchmgr.targets.env_verify import verify_environment

        env = verify_environment(session.project, selected, place, only)
        return session.emit(0 if env.ok else 1, env_json, render_env, env)
    from patchmgr.render.status import render_verify, verify_json
    from patchmgr.targets.checkout_verify import verify_into

    outcome = verify_into(session.project, selected, place, only)
    return session.emit(0 if outcome.ok else 1, verify_json, render_verify, outcome)
