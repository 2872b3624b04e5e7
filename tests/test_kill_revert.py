"""SIGKILL at every step of revert --python. After each kill, verify recovers first and says what it did; the
environment must then be byte for byte the applied one or exactly the one an uninterrupted revert leaves."""

from __future__ import annotations

import pytest
from support.kill_points import MINIMUM, venv_args
from support.reliability import kill_every_step, replace_tree
from support.snapshot import snapshot

pytestmark = pytest.mark.slow


def test_kill_revert_python(tmp_path, cli, project, upstreams, venv):
    assert cli("apply", *venv_args(venv), *upstreams.sources).code == 0
    applied = tmp_path / "applied"
    replace_tree(venv, applied)
    before = snapshot(venv)
    assert cli("revert", *venv_args(venv)).code == 0
    after = snapshot(venv)

    def observe():
        result = cli("verify", *venv_args(venv, "--json"))
        state = snapshot(venv)
        assert result.code == (0 if state == before else 1), result.out  # verified while still applied
        return state, result.json["notes"]

    args = ["revert", *venv_args(venv), "--root", str(project.root)]
    kill_every_step(
        "revert --python",
        args,
        lambda: replace_tree(applied, venv),
        before,
        after,
        observe,
        minimum=MINIMUM["test_kill_revert_python"],
    )
