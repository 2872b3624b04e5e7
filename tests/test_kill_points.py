"""SIGKILL at every step of apply (into checkouts, over local work with --force, and into an installed
environment), revert, bump, refresh and export.

Each run is killed at step 1, 2, 3, ... (PATCHMGR_FAULT_KILL_AT) until one gets through. After each
kill, the next command (verify for a checkout or an environment; a --dry-run of bump or refresh for a
project) recovers first and says what it did; the tree must then be byte for byte the state before
the run (rolled back, or never started) or exactly the state an uninterrupted run leaves (finished),
and what it said must match what it is. A further run of the command then completes.

The kill points of every test add up in ``KILL_POINTS``; the last test asserts the total (at least
200), so a change that quietly removes steps or tests shows up as a failure, not as a smaller figure.
"""

from __future__ import annotations

import shutil

import pytest
from gitrepos import git
from reliability import UNTOUCHED, Upstreams, pristine_environment, record, replace_tree, run, said, snapshot
from reliability import kill_every_step as kill_steps
from test_refresh_bump import status_of
from test_roundtrip import series_project
from test_status_states import lines_with, setup

from patchmgr.model.project import Project
from patchmgr.targets.installed import environment_trees
from patchmgr.targets.trees import checkout_trees

MIN_TOTAL = 200  # kill points over the whole file (issue 12)
KILL_POINTS: dict[str, int] = {}  # test name -> kill points that recovered to exactly before or after


@pytest.fixture
def upstreams(tmp_path, project) -> Upstreams:
    made = Upstreams.make(tmp_path / "upstreams")
    made.write_series(project, 1)
    return made


def kill_every_step(name, *args, **options) -> dict:
    """``reliability.kill_every_step``, its kill points added to ``KILL_POINTS``."""
    counts = kill_steps(name, *args, **options)
    KILL_POINTS[name] = counts["kill_points"]
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
    kill_every_step(
        "apply --into, new folder", args, lambda: shutil.rmtree(into, ignore_errors=True), {}, after, observe
    )


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
    kill_every_step(
        "apply --into, over an older checkout",
        args,
        lambda: replace_tree(pristine, into),
        before,
        after,
        observe,
        next_apply,
        every=3,
    )


def add_local_work(checkout):
    """A local commit, a branch of its own, an edit of a tracked file and an untracked file."""
    (checkout / "src/minilib/local.py").write_text("LOCAL = 1\n")
    git(checkout, "add", "src/minilib/local.py")
    git(checkout, "commit", "-q", "-m", "Local fix")
    git(checkout, "branch", "experiment")
    with open(checkout / "src/minilib/util.py", "a") as handle:
        handle.write("HAND_EDIT = 1\n")
    (checkout / "notes.txt").write_text("my notes\n")


def assert_work_saved(checkout):
    """The new checkout carries the old one's work on patchmgr-saved/<UTC time> branches."""
    branches = git(checkout, "for-each-ref", "--format=%(refname:short)", "refs/heads/patchmgr-saved/").split()
    (main,) = [b for b in branches if not b.endswith("-experiment")]
    assert sorted(branches) == sorted([main, f"{main}-experiment"]), branches
    assert git(checkout, "show", f"{main}:notes.txt") == "my notes"
    assert git(checkout, "show", f"{main}:src/minilib/local.py") == "LOCAL = 1"
    assert git(checkout, "show", f"{main}:src/minilib/util.py").endswith("HAND_EDIT = 1")
    assert git(checkout, "log", "-1", "--format=%s", f"{main}-experiment") == "Local fix"


def test_kill_forced_reapply_into_over_local_work(tmp_path, cli, project, upstreams):
    """--force over a checkout holding local work: killed anywhere, the old checkout is back with its
    work byte for byte, or the new one is in place holding that work on its saved branches."""
    into, pristine, reference = tmp_path / "build", tmp_path / "pristine", tmp_path / "reference"
    assert cli("apply", "--target", "t", "--into", str(pristine), *upstreams.sources).code == 0
    add_local_work(pristine / "minilib")
    before = snapshot(pristine)
    upstreams.write_series(project, 2)
    assert cli("apply", "--target", "t", "--into", str(reference), *upstreams.sources).code == 0
    after = snapshot(reference, git_internals=False)
    replace_tree(pristine, into)
    refused = cli("apply", "--target", "t", "--into", str(into), *upstreams.sources)
    assert refused.code == 1 and "lose local work" in " ".join(refused.err.split()), refused.out + refused.err
    assert snapshot(into) == before

    def observe():
        result = cli("verify", "--target", "t", "--into", str(into), "--json")
        outcome = said(result.json["notes"])
        state = snapshot(into, git_internals=outcome in UNTOUCHED)
        if state == after:
            assert result.code == 0, result.out
            assert_work_saved(into / "minilib")
        else:
            assert result.code == 1, result.out  # the old checkout: older series, local work
        return state, result.json["notes"]

    def next_apply():
        result = cli("apply", "--target", "t", "--into", str(into), "--force", *upstreams.sources)
        assert result.code == 0, result.out + result.err
        assert snapshot(into, git_internals=False) == after
        assert_work_saved(into / "minilib")

    args = ["apply", "--target", "t", "--into", str(into), "--force", *upstreams.sources, "--root", str(project.root)]
    kill_every_step(
        "apply --into --force, over local work",
        args,
        lambda: replace_tree(pristine, into),
        before,
        after,
        observe,
        next_apply,
        every=3,
    )


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
    kill_every_step(
        "apply --python, fresh environment",
        args,
        lambda: replace_tree(pristine_env, env),
        before,
        after,
        observe,
        next_apply,
        every=4,
    )


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
    kill_every_step(
        "apply --python, over an older series", args, lambda: replace_tree(older, env), before, after, observe
    )


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
    kill_every_step("revert --python", args, lambda: replace_tree(applied, env), before, after, observe)


# -- bump, refresh, export: the project's patch files and manifest ---------------------------------
SPREAD = {"one": 6, "two": 13, "three": 28, "four": 35}  # one line each; their contexts never touch


def offset_patches(project, upstream, carried: bool) -> str:
    """Patches on lines far apart of src/mod.py; upstream then adds 3 lines on top, so every one is offset.

    ``carried``: a patch ``fix`` (line 20) sits mid-series, and upstream first takes it in a commit
    with its very patch-id, so a bump drops it (its file removed, the series line rewritten)."""
    pin = upstream.head()
    patches = {
        pid: upstream.make_patch(pin, {"src/mod.py": lines_with({line: f"{pid} {line}"})}, pid.title())
        for pid, line in SPREAD.items()
    }
    fixed = {20: "fixed 20"} if carried else {}
    if carried:
        fix = upstream.make_patch(pin, {"src/mod.py": lines_with(fixed)}, "Fix")
        patches = {
            "one": patches["one"],
            "two": patches["two"],
            "fix": fix,
            "three": patches["three"],
            "four": patches["four"],
        }
    else:
        patches["five"] = upstream.make_patch(pin, {"src/mod.py": lines_with({20: "five 20"})}, "Five")
    setup(project, upstream, patches)
    if carried:
        upstream.commit({"src/mod.py": lines_with(fixed)}, "take the vendor fix (#31)")
    upstream.commit({"src/mod.py": lines_with(fixed, insert_top=3)}, "upstream adds 3 lines on top")
    return pin


def notes_of(result) -> list[str]:
    return [line.removeprefix("note: ") for line in result.out.splitlines() if line.startswith("note: ")]


def kill_project_command(name, cli, project, args, observer, extra_state=None, every=4):
    """Kill ``args`` (bump, refresh or export) at every step; ``observer`` (a --dry-run of bump or refresh)
    is the next command that touches the project: it recovers first and says what it did."""
    saved = project.root.parent / (project.root.name + "-before")
    replace_tree(project.root, saved)
    extra_before = extra_state.read_bytes() if extra_state else None

    def state():
        files = snapshot(project.root)
        if extra_state:
            files["(the edit checkout's record)"] = extra_state.read_bytes().hex()
        return files

    def restore():
        replace_tree(saved, project.root)
        if extra_state:
            extra_state.write_bytes(extra_before)

    before = state()
    code, output = run(args)
    assert code == 0, output
    after = state()
    assert after != before

    def observe():
        result = cli(*observer)
        assert result.code == 0 and "Traceback" not in result.err, result.out + result.err
        return state(), notes_of(result)

    def next_run():
        result = cli(*args[:-2])  # --root is added by cli
        assert result.code == 0, result.out + result.err
        assert state() == after

    return kill_every_step(name, [*args], restore, before, after, observe, next_run, every=every)


BUMP = ["bump", "--target", "t", "--upstream", "lib", "--to", "main"]


def test_kill_bump(cli, project, upstream):
    """Refreshes 5 offset patches and moves the pin and the version: 6 files, one transaction."""
    offset_patches(project, upstream, carried=False)
    manifest = project.root / "manifests/t.toml"
    manifest.write_text(manifest.read_text().replace("[upstreams.lib]", '[upstreams.lib]\nversion = "1.0"'))
    args = [*BUMP, "--version", "1.1", "--source", f"lib={upstream.path}", "--root", str(project.root)]
    counts = kill_project_command("bump", cli, project, args, [*args[:-2], "--dry-run"])
    assert status_of(cli, upstream) == [(pid, "clean") for pid in ("one", "two", "three", "four", "five")]
    text = manifest.read_text()
    assert upstream.head() in text and 'version = "1.1"' in text
    assert counts["kill_points"] == 6 * 3 + 2  # 6 files saved, prepared, 6 written (temp, rename), committed


def test_bump_that_drops_a_patch_killed_at_every_step(cli, project, upstream):
    """Refreshes 4 offset patches, drops 1 that upstream took (its file removed) and moves the pin."""
    offset_patches(project, upstream, carried=True)
    args = [*BUMP, "--source", f"lib={upstream.path}", "--root", str(project.root)]
    kill_project_command("bump, dropping a patch", cli, project, args, [*args[:-2], "--dry-run"])
    assert not (project.root / "patches/lib/fix.patch").exists()
    assert 'patches = ["one", "two", "three", "four"]' in (project.root / "manifests/t.toml").read_text()


def test_kill_refresh(cli, project, upstream):
    offset_patches(project, upstream, carried=False)
    args = [
        "refresh",
        "--target",
        "t",
        "--upstream",
        "lib",
        "--to",
        "main",
        "--source",
        f"lib={upstream.path}",
        "--root",
        str(project.root),
    ]
    counts = kill_project_command("refresh", cli, project, args, [*args[:-2], "--dry-run"])
    assert status_of(cli, upstream) == [(pid, "clean") for pid in ("one", "two", "three", "four", "five")]
    assert counts["kill_points"] == 5 * 3 + 2  # 5 files saved, prepared, 5 written (temp, rename), committed


def edited_series(tmp_path, cli, project, upstream, drop: bool):
    """An edit checkout whose last commit was amended and which gained two new commits (``drop``: and lost
    the second patch's commit); the export command, and a refresh --dry-run at the pin to observe."""
    pin = series_project(project, upstream)
    into = tmp_path / "work"
    assert (
        cli("edit", "--target", "t", "--upstream", "lib", "--into", str(into), "--source", f"lib={upstream.path}").code
        == 0
    )
    if drop:
        git(into, "rebase", "-q", "--onto", "HEAD~2", "HEAD~1")  # drop the second patch's commit
    (into / "src/other.py").write_text("a = 3\n")
    git(into, "commit", "-q", "--amend", "--no-edit", "--all")
    for name in ("new", "newer"):
        (into / f"src/{name}.py").write_text(f"print('{name}')\n")
        git(into, "add", f"src/{name}.py")
        git(into, "commit", "-q", "-m", f"Add the {name} module\n\nUpstream-Status: Pending")
    args = ["export", "--target", "t", "--upstream", "lib", "--from", str(into), "--root", str(project.root)]
    observer = [
        "refresh",
        "--target",
        "t",
        "--upstream",
        "lib",
        "--to",
        pin,
        "--source",
        f"lib={upstream.path}",
        "--dry-run",
    ]
    return into, args, observer


def test_kill_export(tmp_path, cli, project, upstream):
    """export writes 1 updated and 2 new patch files, the manifest and the edit checkout's record at once."""
    into, args, observer = edited_series(tmp_path, cli, project, upstream, drop=False)
    counts = kill_project_command("export", cli, project, args, observer, into / ".git/patchmgr-edit.json")
    assert (
        'patches = ["first", "second", "third", "add-the-new-module", "add-the-newer-module"]'
        in (project.root / "manifests/t.toml").read_text()
    )
    assert "a = 3" in (project.root / "patches/lib/third.patch").read_text()
    assert counts["kill_points"] == 5 * 3 + 2  # 5 files saved, prepared, 5 written (temp, rename), committed


def test_export_that_removes_a_patch_killed_at_every_step(tmp_path, cli, project, upstream):
    into, args, observer = edited_series(tmp_path, cli, project, upstream, drop=True)
    kill_project_command("export, removing a patch", cli, project, args, observer, into / ".git/patchmgr-edit.json")
    assert not (project.root / "patches/lib/second.patch").exists()


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


def test_the_kill_points_add_up_to_at_least_200():
    """Every kill test above ran in this session, and together they killed at least MIN_TOTAL times."""
    tests = [
        name
        for name, test in globals().items()
        if name.startswith("test_kill_") and not any(mark.name == "xfail" for mark in getattr(test, "pytestmark", []))
    ]
    if len(KILL_POINTS) < len(tests):
        pytest.skip(f"only {len(KILL_POINTS)} of the {len(tests)} kill tests ran (and passed) in this session")
    total = sum(KILL_POINTS.values())
    record("all kill points", kill_points=total, tests=len(KILL_POINTS))
    assert total >= MIN_TOTAL, f"{total} kill points in all, fewer than {MIN_TOTAL}: {KILL_POINTS}"
