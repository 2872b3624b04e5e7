"""SIGKILL at every step of apply (into checkouts and into an installed environment).

Each run is killed at step 1, 2, 3, ... (PATCHMGR_FAULT_KILL_AT) until one gets through. After each
kill, the next command (verify) recovers first and says what it did; the tree must then be
byte for byte the state before the run (rolled back, or never started) or exactly the state an
uninterrupted run leaves (finished), and what it said must match what it is. A further apply
then completes.
"""

from __future__ import annotations

import shutil

import pytest

from patchmgr.installed import environment_trees
from patchmgr.project import Project
from patchmgr.smoke import checkout_trees
from reliability import Upstreams, pristine_environment, record, replace_tree, run, said, snapshot

UNTOUCHED = {"rolled-back", "not-started"}



@pytest.fixture
def upstreams(tmp_path, project) -> Upstreams:
    made = Upstreams.make(tmp_path / "upstreams")
    made.write_series(project, 1)
    return made


def kill_every_step(name, args, restore, before, after, observe, next_apply=None, every=1, stride=1) -> dict:
    """Kill ``args`` at each ``stride``-th step in turn; after each, ``observe()`` (the next run) gives
    (state, notes). After every ``every``-th kill, ``next_apply()`` then runs apply again (it must complete)."""
    counts = {"kill_points": 0, "rolled-back": 0, "not-started": 0, "finished": 0, "then_applied": 0}
    step, last = 1, None
    while True:
        restore()
        code, output = run(args, {"PATCHMGR_FAULT_KILL_AT": str(step)})
        if code != -9:
            assert code == 0, output
            assert observe()[0] == after
            if last is None and stride > 1:
                step, last = step - 1, step  # also the last step, which a stride can jump over
                continue
            break
        counts["kill_points"] += 1
        state, notes = observe()
        outcome = said(notes)
        assert outcome in ("rolled-back", "not-started", "finished"), (step, notes)
        expected = before if outcome in UNTOUCHED else after
        assert state == expected, f"{name}: after a kill at step {step} the next run said {notes}, " \
                                  "but the state is not that"
        counts[outcome] += 1
        if next_apply and counts["kill_points"] % every == 0:
            next_apply()
            counts["then_applied"] += 1
        if last is not None:
            break
        step += stride
    record(name, **counts)
    assert counts["kill_points"] >= 10 and counts["finished"] and counts["rolled-back"] + counts["not-started"]
    return counts


# -- apply --into DIR --------------------------------------------------------------------------
def test_kill_apply_into_a_new_folder(tmp_path, cli, project, upstreams):
    into, reference = tmp_path / "build", tmp_path / "reference"
    assert cli("apply", "--target", "t", "--into", str(reference), *upstreams.sources).code == 0
    after = snapshot(reference, git_internals=False)

    def observe():
        result = cli("verify", "--target", "t", "--into", str(into), "--json")
        state = snapshot(into, git_internals=False)
        assert result.code == (0 if state == after else 1), result.out
        return state, result.json["notes"]

    args = ["apply", "--target", "t", "--into", str(into), *upstreams.sources, "--root", str(project.root)]
    kill_every_step("apply --into, new folder", args,
                    lambda: shutil.rmtree(into, ignore_errors=True), {}, after, observe)


def test_kill_reapply_into_over_an_older_checkout(tmp_path, cli, project, upstreams):
    """The worst place for a half swap: both checkouts and the ledger are replaced by newer ones."""
    into, pristine, reference = tmp_path / "build", tmp_path / "pristine", tmp_path / "reference"
    assert cli("apply", "--target", "t", "--into", str(pristine), *upstreams.sources).code == 0
    before = snapshot(pristine)
    upstreams.write_series(project, 2)
    assert cli("apply", "--target", "t", "--into", str(reference), *upstreams.sources).code == 0
    after = snapshot(reference, git_internals=False)

    def observe():
        result = cli("verify", "--target", "t", "--into", str(into), "--json")
        outcome = said(result.json["notes"])
        state = snapshot(into, git_internals=outcome in UNTOUCHED)
        if outcome in UNTOUCHED:  # the older checkout is back, so verify names the changed patches
            assert result.code == 1 and any("lib-3" in p for p in result.json["problems"]), result.out
        else:
            assert result.code == 0, result.out
        return state, result.json["notes"]

    def next_apply():
        result = cli("apply", "--target", "t", "--into", str(into), *upstreams.sources)
        assert result.code == 0, result.out + result.err
        assert snapshot(into, git_internals=False) == after

    args = ["apply", "--target", "t", "--into", str(into), *upstreams.sources, "--root", str(project.root)]
    kill_every_step("apply --into, over an older checkout", args,
                    lambda: replace_tree(pristine, into), before, after, observe, next_apply, every=3)


# -- apply --python PATH -----------------------------------------------------------------------
@pytest.fixture
def pristine_env(tmp_path_factory):
    return pristine_environment(tmp_path_factory)


@pytest.fixture
def env(tmp_path, pristine_env):
    venv = tmp_path / "venv"
    replace_tree(pristine_env, venv)
    return venv


def env_args(venv, *extra):
    return ["--target", "t", "--python", str(venv / "bin" / "python"), *extra]


def test_kill_apply_python_into_a_fresh_environment(tmp_path, cli, project, upstreams, env, pristine_env):
    before = snapshot(env)
    assert cli("apply", *env_args(env), *upstreams.sources).code == 0
    after = snapshot(env)
    assert after != before

    def observe():
        result = cli("verify", *env_args(env, "--json"))
        state = snapshot(env)
        assert result.code == (0 if state == after else 1), result.out
        return state, result.json["notes"]

    def next_apply():
        result = cli("apply", *env_args(env, "--json"), *upstreams.sources)
        assert result.code == 0 and snapshot(env) == after, result.out

    args = ["apply", *env_args(env), *upstreams.sources, "--root", str(project.root)]
    kill_every_step("apply --python, fresh environment", args,
                    lambda: replace_tree(pristine_env, env), before, after, observe, next_apply, every=4)


def test_kill_reapply_python_over_an_older_series(tmp_path, cli, project, upstreams, env):
    assert cli("apply", *env_args(env), *upstreams.sources).code == 0
    older = tmp_path / "older"
    replace_tree(env, older)
    before = snapshot(env)
    upstreams.write_series(project, 2)
    assert cli("apply", *env_args(env), *upstreams.sources).code == 0
    after = snapshot(env)
    assert after != before

    def observe():
        result = cli("verify", *env_args(env, "--json"))
        state = snapshot(env)
        assert result.code == (0 if state == after else 1), result.out
        return state, result.json["notes"]

    args = ["apply", *env_args(env), *upstreams.sources, "--root", str(project.root)]
    kill_every_step("apply --python, over an older series", args,
                    lambda: replace_tree(older, env), before, after, observe)


def test_kill_revert_python(tmp_path, cli, project, upstreams, env):
    assert cli("apply", *env_args(env), *upstreams.sources).code == 0
    applied = tmp_path / "applied"
    replace_tree(env, applied)
    before = snapshot(env)
    assert cli("revert", *env_args(env)).code == 0
    after = snapshot(env)

    def observe():
        result = cli("verify", *env_args(env, "--json"))
        state = snapshot(env)
        assert result.code == (0 if state == before else 1), result.out  # verified while still applied
        return state, result.json["notes"]

    args = ["revert", *env_args(env), "--root", str(project.root)]
    kill_every_step("revert --python", args, lambda: replace_tree(applied, env), before, after,
                    observe, stride=2)


def test_smoke_recovers_first_and_says_so(tmp_path, tmp_path_factory, project, upstreams):
    """smoke reads the trees too: after a kill mid-swap it rolls the swap back before it looks."""
    target = Project.at(project.root).target("t")
    into = tmp_path / "build"
    args = ["apply", "--target", "t", "--into", str(into), *upstreams.sources, "--root", str(project.root)]
    # 7 build steps (2 checkouts, 5 patches), the saved ledger, the prepared mark, then the first folder move
    assert run(args, {"PATCHMGR_FAULT_KILL_AT": "10"})[0] == -9
    trees = checkout_trees(target, into)
    assert "rolled back" in " ".join(trees[0].notes) and snapshot(into) == {}
    assert all(tree.patched_root is None for tree in trees)

    venv = tmp_path / "venv"
    replace_tree(pristine_environment(tmp_path_factory), venv)
    before = snapshot(venv)
    args = ["apply", *env_args(venv), *upstreams.sources, "--root", str(project.root)]
    assert run(args, {"PATCHMGR_FAULT_KILL_AT": "30"})[0] == -9
    trees = environment_trees(target, str(venv / "bin" / "python"))
    assert "rolled back" in " ".join(trees[0].notes) and snapshot(venv) == before
