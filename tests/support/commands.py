"""The command lines the tests run on target ``t`` (upstream ``lib``) through conftest's ``cli`` fixture."""

from __future__ import annotations

import os
import subprocess

from support.gitrepos import GIT_ENV


def status_of(cli, upstream, ref="main"):
    result = cli("status", "--target", "t", "--json", "--source", f"lib={upstream.path}", "--against", f"lib={ref}")
    return [(p["id"], p["state"]) for p in result.json["upstreams"][0]["patches"]]


def refresh(cli, upstream, *extra):
    return cli(
        "refresh", "--target", "t", "--upstream", "lib", "--to", "main", "--source", f"lib={upstream.path}", *extra
    )


def bump(cli, upstream, *extra, to="main"):
    return cli("bump", "--target", "t", "--upstream", "lib", "--to", to, "--source", f"lib={upstream.path}", *extra)


def matrix(cli, upstream, *extra):
    return cli("matrix", "--target", "t", "--source", f"lib={upstream.path}", *extra)


def edit(cli, upstream, into):
    return cli("edit", "--target", "t", "--upstream", "lib", "--into", str(into), "--source", f"lib={upstream.path}")


def edit_onto(cli, upstream, into, ref="v0.5.0", *more):
    return cli(
        "edit",
        "--target",
        "t",
        "--upstream",
        "lib",
        "--into",
        str(into),
        "--onto",
        ref,
        "--source",
        f"lib={upstream.path}",
        *more,
    )


def resume(cli, into, action, *more):
    return cli("edit", f"--{action}", "--into", str(into), *more)


def export(cli, into, *more):
    return cli("export", "--target", "t", "--upstream", "lib", "--from", str(into), *more)


def gitenv(into, *args):
    """git in ``into`` as a user would run it there (output kept, exit code not checked)."""
    env = {**os.environ, **GIT_ENV, "GIT_CONFIG_GLOBAL": os.devnull}
    return subprocess.run(["git", *args], cwd=into, env=env, capture_output=True, text=True)
