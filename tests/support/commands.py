"""The command lines the tests run on target ``t`` (upstream ``lib``) through conftest's ``cli`` fixture."""

from __future__ import annotations

import os
import subprocess

from support.gitrepos import GIT_ENV


def status_of(cli, upstream, ref="main"):
    result = cli("status", "--target", "t", "--json", "--source", f"lib={upstream.path}", "--against", f"lib={ref}")
    return [(p["id"], p["state"]) for p in result.json["upstreams"][0]["patches"]]


def move_args(command, upstream, *extra, to="main", target="t") -> list[str]:
    """The words of ``refresh``, ``bump`` or ``bisect`` of upstream ``lib`` of ``target`` to ``to``."""
    return [command, "--target", target, "--upstream", "lib", "--to", to, "--source", f"lib={upstream.path}", *extra]


def refresh(cli, upstream, *extra):
    return cli(*move_args("refresh", upstream, *extra))


def bump(cli, upstream, *extra, to="main"):
    return cli(*move_args("bump", upstream, *extra, to=to))


def matrix(cli, upstream, *extra):
    return cli("matrix", "--target", "t", "--source", f"lib={upstream.path}", *extra)


def edit_args(into, lib, *more, onto=None) -> list[str]:
    """The words of ``edit`` on upstream ``lib`` of target ``t`` into ``into``, its source the folder ``lib``."""
    moving = ["--onto", onto] if onto is not None else []
    return ["edit", "--target", "t", "--upstream", "lib", "--into", str(into), *moving, "--source", f"lib={lib}", *more]


def edit(cli, upstream, into, *more):
    return cli(*edit_args(into, upstream.path, *more))


def edit_onto(cli, upstream, into, ref="v0.5.0", *more):
    return cli(*edit_args(into, upstream.path, *more, onto=ref))


def resume(cli, into, action, *more):
    return cli("edit", f"--{action}", "--into", str(into), *more)


def export(cli, into, *more):
    return cli("export", "--target", "t", "--upstream", "lib", "--from", str(into), *more)


def gitenv(into, *args):
    """git in ``into`` as a user would run it there (output kept, exit code not checked)."""
    env = {**os.environ, **GIT_ENV, "GIT_CONFIG_GLOBAL": os.devnull}
    return subprocess.run(["git", *args], cwd=into, env=env, capture_output=True, text=True)
