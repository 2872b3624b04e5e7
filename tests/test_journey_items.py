"""The smaller items of the bump journey, on real git repositories through the real CLI.

Smoke knows its interpreter (Requires-Python), --allow-fuzz apart from --allow-three-way with DEP-3
Last-Update kept current, --source/--against for an upstream the target lacks, only the chosen target's
manifest must parse, a cache standing in for an unreachable --source says so, and output off a terminal
is never cut at 80 columns.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_smoke_proof import CPU_ONLY, DETECTS, Scene, verdicts
from test_status_states import lines_with, setup

PYPROJECT = '[project]\nname = "lib"\nversion = "1.0"\nrequires-python = "{spec}"\n'
THIS = f"{sys.version_info[0]}.{sys.version_info[1]}"


@pytest.fixture
def scene(tmp_path, project, cli, monkeypatch) -> Scene:
    import patchmgr.smoke.runner

    monkeypatch.setattr(patchmgr.smoke.runner, "available_devices", lambda python: dict(CPU_ONLY))
    return Scene(tmp_path, project, cli)


# a smoke test that dies on an interpreter the upstream does not declare (as v0.5.0's `typing.override` on 3.11)
NEEDS_NEWER = "from typing import override_of_python_3_99\n\n" + DETECTS
# one that fails by its assertion there (the bytes under test differ on that interpreter, say)
FAILS = DETECTS.replace("== 5", "== 6")


def pinned_with_pyproject(scene: Scene, spec: str, test: str = DETECTS) -> None:
    scene.pin = scene.upstream.commit({"pyproject.toml": PYPROJECT.format(spec=spec)}, "declare python")
    scene.patch()
    scene.manifest()
    scene.smoke_test(test)
    scene.apply()


# -- 1. smoke knows its interpreter ----------------------------------------------------------
def test_smoke_dying_on_an_undeclared_interpreter_is_not_proven_and_names_the_way_out(scene):
    pinned_with_pyproject(scene, ">=3.99", NEEDS_NEWER)
    result = scene.smoke()
    assert result.code == 1, result.out + result.err
    assert f"not proven: lib/fix-add: needs Python >=3.99 (this is {THIS})" in result.out
    assert "0 proven, 0 failed, 1 not proven" in result.out
    assert "outside its declared Requires-Python >=3.99 (pyproject.toml" in result.out
    assert "pass --python with an interpreter that fits" in result.out

    code, doc = scene.smoke_json()
    assert code == 1 and doc["ok"] is False
    assert doc["summary"] == {"proven": 0, "failed": 0, "not-proven": 1}
    verdict, reason = verdicts(doc)["fix-add"]
    assert verdict == "not-proven" and reason.startswith(f"needs Python >=3.99 (this is {THIS})")
    assert "override_of_python_3_99" in reason  # what happened there, quoted
    (need,) = doc["python"]
    assert need["upstream"] == "lib" and need["requires_python"] == ">=3.99" and need["fits"] is False
    assert need["version"].startswith(THIS) and need["from"].startswith("pyproject.toml")
    assert any("--python" in note for note in doc["notes"])


def test_a_failed_assertion_on_an_undeclared_interpreter_is_not_proven_never_failed(scene):
    pinned_with_pyproject(scene, f"<{THIS}", FAILS)
    code, doc = scene.smoke_json()
    assert code == 1
    verdict, reason = verdicts(doc)["fix-add"]
    assert verdict == "not-proven" and reason.startswith(f"needs Python <{THIS} (this is {THIS})")
    assert "failed" in reason
    assert doc["summary"]["failed"] == 0


def test_tests_that_pass_on_an_undeclared_interpreter_prove_the_patch_with_a_note(scene):
    # Megatron-Bridge 0.4.2 declares >=3.12,<3.13, yet the modules its smoke tests load import on 3.11
    pinned_with_pyproject(scene, ">=3.99")
    code, doc = scene.smoke_json()
    assert code == 0, doc
    assert verdicts(doc)["fix-add"][0] == "proven"
    assert any("outside its declared Requires-Python >=3.99" in n and "they passed there" in n for n in doc["notes"])


def test_a_declared_python_that_fits_changes_nothing(scene):
    pinned_with_pyproject(scene, f">={THIS}", FAILS)
    code, doc = scene.smoke_json()
    assert code == 1 and verdicts(doc)["fix-add"][0] == "failed"  # a real failure stays one
    (need,) = doc["python"]
    assert need["fits"] is True and need["requires_python"] == f">={THIS}"
    assert not any("Requires-Python" in note for note in doc["notes"])


def test_smoke_without_a_declared_python_runs_as_before(scene):
    scene.patch()
    scene.manifest()
    scene.smoke_test(DETECTS)
    scene.apply()
    code, doc = scene.smoke_json()
    assert code == 0 and doc["python"][0]["requires_python"] is None and doc["python"][0]["fits"] is True


def test_requires_python_of_an_installed_distribution_and_of_an_explicit_interpreter(tmp_path):
    from patchmgr.model.manifest import Upstream
    from patchmgr.smoke.interpreter import interpreter_version, python_need
    from patchmgr.targets.trees import SmokeTree

    site = tmp_path / "site-packages"
    (site / "lib").mkdir(parents=True)
    info = site / "lib_thing-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: lib-thing\nVersion: 1.0\nRequires-Python: >=3.12,<3.13\n\nthe description\n"
    )
    upstream = Upstream("lib", None, (), "0" * 40, "1.0", "lib-thing", "", ())
    python, version = interpreter_version(sys.executable)  # asked, as for --python
    assert python == sys.executable and version == ".".join(map(str, sys.version_info[:3]))
    need = python_need(SmokeTree(upstream, site), python, "3.11.7")
    assert need.spec == ">=3.12,<3.13" and need.where == str(info / "METADATA") and not need.fits
    assert need.reason("x failed").startswith("needs Python >=3.12,<3.13 (this is 3.11), so this outcome")
    assert "pyenv's 3.12" in need.note(proven=False) and "pyenv" not in need.note(proven=True)
    assert python_need(SmokeTree(upstream, site), python, "3.12.1").fits


# -- 2. --allow-fuzz apart from --allow-three-way; Last-Update of every rewritten patch -----------
FIELDS_DATED = "Origin: vendor\nUpstream-Status: Pending\nLast-Update: 2020-01-01"


def fuzz_scene(project, upstream) -> Path:
    pin = upstream.head()
    setup(
        project,
        upstream,
        {"fix": upstream.make_patch(pin, {"src/mod.py": lines_with({20: "fixed 20"})}, "Fix", fields=FIELDS_DATED)},
    )
    upstream.commit({"src/mod.py": lines_with({17: "upstream changed 17"})}, "touch outer context")
    return project.root / "patches/lib/fix.patch"


def three_way_scene(project, upstream) -> Path:
    pin = upstream.head()
    setup(
        project,
        upstream,
        {
            "fix": upstream.make_patch(
                pin, {"src/mod.py": lines_with({20: "fixed 20", 24: "fixed 24"})}, "Fix", fields=FIELDS_DATED
            )
        },
    )
    upstream.commit({"src/mod.py": lines_with({22: "upstream changed 22"})}, "touch inner context")
    return project.root / "patches/lib/fix.patch"


def maintain(cli, upstream, command, *extra):
    return cli(
        command, "--target", "t", "--upstream", "lib", "--to", "main", "--source", f"lib={upstream.path}", *extra
    )


def today() -> str:
    from patchmgr.model.dep3_edit import today as utc_today

    return utc_today()


@pytest.mark.parametrize("command", ["refresh", "bump"])
def test_fuzz_needs_allow_fuzz_and_three_way_needs_allow_three_way(cli, project, upstream, command):
    path = fuzz_scene(project, upstream)
    before = path.read_bytes()
    manifest = (project.root / "manifests/t.toml").read_bytes()
    refused = maintain(cli, upstream, command, "--allow-three-way")
    assert refused.code == 1 and "--allow-fuzz" in refused.out
    assert path.read_bytes() == before and (project.root / "manifests/t.toml").read_bytes() == manifest
    dry = maintain(cli, upstream, command, "--allow-fuzz", "--dry-run")
    assert dry.code == 0, dry.out
    assert "fix (now)" in dry.out and "fix (refreshed)" in dry.out and "+ upstream changed 17" in dry.out
    assert path.read_bytes() == before
    done = maintain(cli, upstream, command, "--allow-fuzz")
    assert done.code == 0, done.out
    written = "rewrote 1 patch" if command == "refresh" else "refreshed fix (fuzz)"
    assert done.out.index("fix (refreshed)") < done.out.index(written)  # old against new, shown before writing
    after = path.read_bytes()
    assert f"Last-Update: {today()}\n".encode() in after and b"2020-01-01" not in after
    assert after.count(b"Last-Update:") == 1
    # every other byte of the message is kept
    assert after[: after.index(b"Last-Update:")] == before[: before.index(b"Last-Update:")]


@pytest.mark.parametrize("command", ["refresh", "bump"])
def test_three_way_is_refused_with_allow_fuzz_alone(cli, project, upstream, command):
    path = three_way_scene(project, upstream)
    before = path.read_bytes()
    refused = maintain(cli, upstream, command, "--allow-fuzz")
    assert refused.code == 1 and "--allow-three-way" in refused.out and path.read_bytes() == before
    done = maintain(cli, upstream, command, "--allow-three-way", "--json")
    assert done.code == 0, done.out
    (patch,) = done.json["patches"]
    assert patch["state"] == "three-way" and patch["interdiff"]  # old against new, in JSON too
    assert f"Last-Update: {today()}\n".encode() in path.read_bytes()


def test_bump_of_an_offset_patch_updates_its_last_update(cli, project, upstream):
    pin = upstream.head()
    path = project.root / "patches/lib/fix.patch"
    setup(
        project,
        upstream,
        {"fix": upstream.make_patch(pin, {"src/mod.py": lines_with({20: "fixed 20"})}, "Fix", fields=FIELDS_DATED)},
    )
    upstream.commit({"src/mod.py": lines_with({}, insert_top=3)}, "upstream adds 3 lines on top")
    result = maintain(cli, upstream, "bump")
    assert result.code == 0, result.out
    assert f"Last-Update: {today()}\n".encode() in path.read_bytes()


def test_help_texts_say_which_option_allows_what(cli):
    from typer.testing import CliRunner

    from patchmgr.cli.app import app

    for command in ("refresh", "bump"):
        text = " ".join(CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "400"}).output.split())
        assert "--allow-fuzz" in text and "apply only with fuzz" in text
        assert "need a 3-way merge (not fuzz" in text


# -- 3. --source/--against for an upstream the chosen target does not have ------------------------
def two_targets(project, upstream, other_manifest: str | None = None) -> str:
    pin = upstream.head()
    project.add_patch("lib", "fix", upstream.make_patch(pin, {"src/mod.py": lines_with({20: "fixed 20"})}, "Fix"))
    project.manifest("a", {"lib": {"git": "https://example.invalid/lib.git", "commit": pin, "patches": ["fix"]}})
    if other_manifest is None:
        project.manifest(
            "b",
            {
                "lib": {"git": "https://example.invalid/lib.git", "commit": pin, "patches": ["fix"]},
                "other": {"git": "https://example.invalid/other.git", "commit": pin, "patches": []},
            },
        )
    else:
        (project.root / "manifests/b.toml").write_text(other_manifest)
    return pin


def test_source_for_an_upstream_of_another_target_is_ignored_with_a_note(cli, project, upstream):
    two_targets(project, upstream)
    args = ("status", "--target", "a", "--source", f"lib={upstream.path}", "--source", "other=/srv/nowhere")
    result = cli(*args)
    assert result.code == 0, result.out + result.err
    assert "--source other: target a has no upstream other; ignored" in result.out
    doc = cli(*args, "--json").json
    assert doc["ok"] is True and "--source other: target a has no upstream other; ignored" in doc["notes"]
    against = cli(*args, "--against", "other=main", "--json")
    assert against.code == 0, against.out
    assert "--against other: target a has no upstream other; ignored" in against.json["notes"]
    # the other target has it: used there (status over every target)
    every = cli("status", "--json", "--source", f"lib={upstream.path}", "--source", f"other={upstream.path}")
    assert every.code == 0, every.out
    # refresh and bump take it the same way
    refresh = cli(
        "refresh",
        "--target",
        "a",
        "--upstream",
        "lib",
        "--to",
        "main",
        "--source",
        f"lib={upstream.path}",
        "--source",
        "other=/srv/nowhere",
        "--json",
    )
    assert refresh.code == 0 and "--source other: target a has no upstream other; ignored" in refresh.json["notes"]


def test_source_for_an_upstream_no_manifest_names_stays_an_error(cli, project, upstream):
    two_targets(project, upstream)
    for option in ("--source", "--against"):
        result = cli("status", "--target", "a", "--source", f"lib={upstream.path}", option, "nosuch=main")
        assert result.code == 2
        assert "no upstream 'nosuch' in target a" in result.err and "no manifest names 'nosuch'" in result.err
    assert cli("status", "--target", "a", "--upstream", "other").code == 2  # --upstream selects: never ignored


def test_source_named_only_by_a_broken_manifest_is_ignored_too(cli, project, upstream):
    two_targets(project, upstream, '[target]\nname = "b"\n[upstreams.other]\ncommit = \n')
    result = cli(
        "refresh",
        "--target",
        "a",
        "--upstream",
        "lib",
        "--to",
        "main",
        "--source",
        f"lib={upstream.path}",
        "--source",
        "other=/srv/x",
        "--json",
    )
    assert result.code == 0, result.out + result.err
    assert "--source other: target a has no upstream other; ignored" in result.json["notes"]


# -- 4. only the chosen target's manifest must parse --------------------------------------------
BROKEN = '[target]\nname = "b"\n[upstreams.lib]\ncommit = \npatches = ["fix"]\n'


def test_a_broken_other_manifest_does_not_fail_status_of_this_target(cli, project, upstream):
    two_targets(project, upstream, BROKEN)
    result = cli("status", "--target", "a", "--source", f"lib={upstream.path}", "--json")
    assert result.code == 0, result.out + result.err
    (warning,) = result.json["warnings"]
    assert "b.toml" in warning and "invalid TOML" in warning and "patchmgr lint" in warning
    # every target is what status without --target works on: the broken one is an error then
    everything = cli("status", "--source", f"lib={upstream.path}")
    assert everything.code == 2 and "b.toml" in everything.err
    # lint still reads every manifest and reports the broken one
    lint = cli("lint")
    assert lint.code == 1 and "b.toml" in lint.out


def test_bump_notes_a_broken_other_manifest_without_failing(cli, project, upstream):
    two_targets(project, upstream, BROKEN)
    upstream.commit({"src/mod.py": lines_with({}, insert_top=3)}, "upstream adds 3 lines on top")
    result = cli("bump", "--target", "a", "--upstream", "lib", "--to", "main", "--source", f"lib={upstream.path}")
    assert result.code == 0, result.out + result.err
    assert "b (its manifest does not load)" in result.out
    assert upstream.head() in (project.root / "manifests/a.toml").read_text()


# -- 5. a cache standing in for an unreachable --source says so ---------------------------------
def test_a_warm_cache_standing_in_for_a_mistyped_source_says_so(cli, project, upstream, tmp_path):
    pin = upstream.head()
    setup(project, upstream, {"fix": upstream.make_patch(pin, {"src/mod.py": lines_with({20: "fixed 20"})}, "Fix")})
    warm = cli("status", "--target", "t", "--json", "--source", f"lib={upstream.path}")
    assert warm.code == 0 and warm.json["upstreams"][0]["source"] == f"git {upstream.path}"
    nowhere = tmp_path / "nonexistent" / "path"
    result = cli("status", "--target", "t", "--source", f"lib={nowhere}")
    assert result.code == 0, result.out + result.err
    said = f"from the cache (source {nowhere} not reachable: no such folder)"
    assert said in result.out and "(cached)" not in result.out
    doc = cli("status", "--target", "t", "--json", "--source", f"lib={nowhere}").json
    assert doc["upstreams"][0]["source"] == said[len("from ") :]
    (tmp_path / "plain").mkdir()
    plain = cli("status", "--target", "t", "--json", "--source", f"lib={tmp_path / 'plain'}").json
    assert plain["upstreams"][0]["source"].endswith("not reachable: not a git repository)")
    # a reachable source that the cache serves stays what it was
    again = cli("status", "--target", "t", "--json", "--source", f"lib={upstream.path}").json
    assert again["upstreams"][0]["source"] == f"git {upstream.path} (cached)"


# -- 6. output that is not a terminal is never cut at 80 columns --------------------------------
def test_status_into_a_pipe_prints_full_names_and_details_on_one_line(project, upstream, tmp_path):
    pin = upstream.head()
    long_id = "a-very-long-patch-name-that-says-exactly-what-it-fixes-in-the-module-and-why-it-matters-for-our-runs"
    setup(project, upstream, {long_id: upstream.make_patch(pin, {"src/mod.py": lines_with({20: "fixed 20"})}, "Fix")})
    upstream.commit({"src/mod.py": lines_with({}, insert_top=3)}, "upstream adds 3 lines on top")
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "FORCE_COLOR", "TERM")}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "patchmgr",
            "status",
            "--target",
            "t",
            "--root",
            str(project.root),
            "--source",
            f"lib={upstream.path}",
            "--against",
            "lib=main",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [line for line in done.stdout.splitlines() if long_id in line]
    assert rows, done.stdout  # the whole name on one line, not cut or folded
    (row,) = [line for line in rows if "offset" in line]
    assert "+3 lines" in row  # its detail on the same line: not wrapped into a tall table
    assert max(len(line) for line in done.stdout.splitlines()) > 80


def python_3_12() -> str | None:
    """Python 3.12 from pyenv (its shim answers only for the selected version, so look under its root), or
    the system's."""
    import shutil

    roots = []
    if shutil.which("pyenv"):
        done = subprocess.run(["pyenv", "root"], capture_output=True, text=True)
        roots = [Path(done.stdout.strip())] if done.returncode == 0 else []
    found = [str(p) for root in roots for p in sorted(root.glob("versions/3.12*/bin/python3.12"))]
    for candidate in [*found, "/usr/bin/python3.12", "/usr/local/bin/python3.12"]:
        if Path(candidate).is_file() and subprocess.run([candidate, "-c", "pass"]).returncode == 0:
            return candidate
    return None


def test_the_way_out_runs_the_checkout_on_an_interpreter_that_fits(scene, tmp_path):
    """`smoke --into DIR --python PATH`: DIR's tests on an interpreter the upstream declares, here pyenv's 3.12."""
    from conftest import require

    python312 = python_3_12()
    require(python312 is not None, "no Python 3.12 here (pyenv install 3.12)")
    venv = tmp_path / "py312"
    subprocess.run([python312, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "pytest>=8"], check=True)
    # a test that needs 3.12 (typing.override is new there), as v0.5.0's smoke tests do
    pinned_with_pyproject(scene, ">=3.12", "from typing import override  # noqa: F401\n\n" + DETECTS)

    if sys.version_info < (3, 12):
        code, doc = scene.smoke_json()
        assert code == 1 and verdicts(doc)["fix-add"][0] == "not-proven"

    code, doc = scene.smoke_json("--python", str(venv / "bin" / "python"))
    assert code == 0, doc
    assert verdicts(doc)["fix-add"][0] == "proven"
    (need,) = doc["python"]
    assert need["fits"] is True and need["version"].startswith("3.12")
    code, doc = scene.smoke_json("--python", str(venv / "bin" / "python"), "--unpatched")
    assert code == 0 and verdicts(doc)["fix-add"][0] == "proven", doc  # red there without the patch, for its reason
