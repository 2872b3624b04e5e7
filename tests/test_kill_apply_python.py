"""SIGKILL at every step of apply --python into an installed environment, fresh and over an older series.
After each kill, verify recovers first and says what it did; the environment must then be byte for byte
the one before the run or exactly the one an uninterrupted run leaves."""

from __future__ import annotations

import pytest
from support.kill_points import MINIMUM, venv_args
from support.reliability import kill_every_step, replace_tree
from support.snapshot import snapshot

pytestmark = pytest.mark.slow


@pytest.fixture
def kill_apply_python(request, cli, project, upstreams, venv):
    """Kill apply --python into ``venv`` at every step, at least MINIMUM[this test] times: ``venv`` is put back
    from ``saved`` before each run, and verify, the next command, must find it ``before`` or ``after``."""

    def kill(label, saved, before, after, next_apply=None, every=1):
        def observe():
            result = cli("verify", *venv_args(venv, "--json"))
            state = snapshot(venv)
            assert result.code == (0 if state == after else 1), result.out
            return state, result.json["notes"]

        def restore():
            replace_tree(saved, venv)

        args = ["apply", *venv_args(venv), *upstreams.sources, "--root", str(project.root)]
        kill_every_step(
            label, args, restore, before, after, observe, next_apply, every=every, minimum=MINIMUM[request.node.name]
        )

    return kill


def test_kill_apply_python_into_a_fresh_environment(cli, upstreams, venv, pristine_venv, kill_apply_python):
    before = snapshot(venv)
    assert cli("apply", *venv_args(venv), *upstreams.sources).code == 0
    after = snapshot(venv)
    assert after != before

    def next_apply():
        result = cli("apply", *venv_args(venv, "--json"), *upstreams.sources)
        assert result.code == 0 and snapshot(venv) == after, result.out

    kill_apply_python("apply --python, fresh environment", pristine_venv, before, after, next_apply, every=4)


def test_kill_reapply_python_over_an_older_series(tmp_path, cli, project, upstreams, venv, kill_apply_python):
    assert cli("apply", *venv_args(venv), *upstreams.sources).code == 0
    older = tmp_path / "older"
    replace_tree(venv, older)
    before = snapshot(venv)
    upstreams.write_series(project, 2)
    assert cli("apply", *venv_args(venv), *upstreams.sources).code == 0
    after = snapshot(venv)
    assert after != before
    kill_apply_python("apply --python, over an older series", older, before, after)
