"""Installed environments and the journal keep the user's work (issue 11, items 2, 7, 8 and 9).

A tiny distribution, ``tinydist`` 1.0 (tests/support/tinydist.py), is built as a wheel with a RECORD
and installed by pip (--no-deps) into a fresh virtual environment; its upstream is a real git
repository with the same package plus files a wheel does not ship (``tests/``, ``setup.py``). Every
run goes through the real command line.

- 2: a file the user edited after ``apply --python`` is never overwritten by ``revert`` or a
  re-``apply`` unless ``--force``, which first saves it under the state folder and says where.
- 7: only files inside the distribution's own packages are written into site-packages; other
  paths of a patch are left out with a note; a ``.pth`` or a new top-level module is refused.
- 8: a symbolic link anywhere in a state or journal path stops the run before it writes.
- 9: the temporary files of a killed ``apply --python`` are removed by the next run's recovery.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support.reliability import replace_tree, run, said
from support.snapshot import snapshot
from support.tinydist import CORE, Tiny, core_with, record_paths, site_packages

# tinydist is made up: its release is never looked up on a real package index
pytestmark = pytest.mark.usefixtures("no_package_index")


def one_error(result) -> str:
    """The run failed with exit 1 and one error line plus a hint, no traceback; the error line."""
    text = result.out + result.err
    assert result.code == 1, text
    assert "Traceback" not in text, text
    errors = [line for line in text.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, text
    return errors[0]


# -- item 2: edits after apply are kept ----------------------------------------------------------
def test_revert_refuses_to_discard_an_edit_and_force_saves_it_first(tiny, cli):
    tiny.series(({"tinydist/core.py": core_with(500)}, "Core five"))
    assert cli("apply", *tiny.src()).code == 0
    core = site_packages(tiny.venv) / "tinydist" / "core.py"
    edited = core_with(500) + "LOCAL_TUNING = True  # the user's own change\n"
    core.write_text(edited)
    before = snapshot(tiny.venv)

    assert cli("verify", *tiny.args()).code == 1
    result = cli("revert", *tiny.args())
    error = one_error(result)
    assert str(core) in error and "--force" in result.out + result.err
    assert "saved" in result.out + result.err  # the hint says where --force would save it
    assert snapshot(tiny.venv) == before  # nothing changed, the edit included

    result = cli("revert", *tiny.args("--json", "--force"))
    assert result.code == 0, result.out + result.err
    notes = " ".join(result.json["notes"])
    assert "saved 1 file" in notes and str(core) in notes, notes
    saved_dir = Path(notes.split(" under ")[1].split("/ ")[0])
    state = site_packages(tiny.venv).parents[2] / "patchmgr-state" / "t" / "saved"
    assert saved_dir.parent == state
    assert (saved_dir / "tinydist" / "tinydist" / "core.py").read_text() == edited
    manifest = json.loads((saved_dir / "manifest.json").read_text())
    assert manifest["tinydist/tinydist/core.py"]["installed"] == str(core)
    assert core.read_text() == CORE  # the original is back
    assert cli("revert", *tiny.args()).code == 0  # and nothing is left to revert


def test_reapply_refuses_to_overwrite_an_edit_dry_run_included(tiny, cli):
    tiny.series(({"tinydist/core.py": core_with(500)}, "Core five"))
    assert cli("apply", *tiny.src()).code == 0
    core = site_packages(tiny.venv) / "tinydist" / "core.py"
    core.write_text(core_with(500) + "LOCAL = 1\n")
    before = snapshot(tiny.venv)

    # the same series again: the edit makes verify fail, yet apply must not silently rewrite the file
    assert str(core) in one_error(cli("apply", *tiny.src()))
    assert snapshot(tiny.venv) == before

    tiny.series(({"tinydist/core.py": core_with(777)}, "Core five, better"))  # a changed series
    assert str(core) in one_error(cli("apply", *tiny.src("--dry-run")))
    assert str(core) in one_error(cli("apply", *tiny.src()))
    assert snapshot(tiny.venv) == before

    result = cli("apply", *tiny.src("--json", "--dry-run", "--force"))
    assert result.code == 0 and result.json["action"] == "dry-run", result.out
    assert "--force would save" in " ".join(result.json["notes"])
    assert snapshot(tiny.venv) == before

    result = cli("apply", *tiny.src("--json", "--force"))
    assert result.code == 0 and result.json["action"] == "applied", result.out + result.err
    assert any("saved 1 file" in note for note in result.json["notes"])
    assert core.read_text() == core_with(777)
    saved = list((tiny.venv / "patchmgr-state" / "t" / "saved").glob("*/tinydist/tinydist/core.py"))
    assert [p.read_text() for p in saved] == [core_with(500) + "LOCAL = 1\n"]
    assert cli("verify", *tiny.args()).code == 0
    assert "nothing to do" in cli("apply", *tiny.src()).out  # the no-op path is unchanged


# -- item 7: only the distribution's own package files go into site-packages ---------------------
def test_repo_files_outside_the_packages_are_left_out_with_a_note(tiny, cli):
    tiny.series(
        (
            {
                "tinydist/core.py": core_with(500),
                "tests/test_fix.py": "def test_fix():\n    pass\n",
                "tests/test_core.py": "def test_core():\n    assert 1\n",
                "docs/fix.md": "why\n",
                "setup.py": "from setuptools import setup\nsetup(name='tinydist', version='1.0')\n",
            },
            "Core five, with its test",
        ),
        (
            {"tinydist/extra/__init__.py": "X = 1\n", "tinydist/util.py": "def helper():\n    return 2\n"},
            "A subpackage",
        ),
    )
    site = site_packages(tiny.venv)
    status = cli("status", *tiny.src("--json"))
    applied = cli("apply", *tiny.src("--json"))
    for result in (status, applied):
        assert result.code == 0, result.out + result.err
        upstream = result.json["upstreams"][0]
        assert [p["state"] for p in upstream["patches"]] == ["clean", "clean"]
        note = next(n for n in upstream["notes"] if n.startswith("left out"))
        for path in ("tests/test_fix.py", "tests/test_core.py", "docs/fix.md", "setup.py"):
            assert path in note, note
    assert (site / "tinydist" / "core.py").read_text() == core_with(500)
    assert (site / "tinydist" / "extra" / "__init__.py").read_text() == "X = 1\n"
    assert not (site / "tests").exists() and not (site / "docs").exists() and not (site / "setup.py").exists()
    assert {p for p in record_paths(tiny.venv) if not p.startswith("tinydist")} == set(), record_paths(tiny.venv)
    assert cli("verify", *tiny.args()).code == 0
    assert cli("revert", *tiny.args()).code == 0
    assert not (site / "tinydist" / "extra" / "__init__.py").exists()


def test_package_root_upstream_leaves_out_what_lies_outside_the_root(tmp_path, project, env, cli):
    """With package-root "src", tests/ and README.md are not shipped: left out, not an error at apply."""
    tiny = Tiny(tmp_path, project, env, package_root="src")
    tiny.series(
        (
            {
                tiny.at("tinydist/core.py"): core_with(500),
                "tests/test_fix.py": "def test_fix():\n    pass\n",
                "README.md": "tinydist, patched\n",
            },
            "Core five, with its test",
        )
    )
    for verb in ("status", "apply"):
        result = cli(verb, *tiny.src("--json"))
        assert result.code == 0, result.out + result.err
        upstream = result.json["upstreams"][0]
        assert [p["state"] for p in upstream["patches"]] == ["clean"]
        note = next(n for n in upstream["notes"] if n.startswith("left out"))
        assert "tests/test_fix.py" in note and "README.md" in note, note
    site = site_packages(env)
    assert (site / "tinydist" / "core.py").read_text() == core_with(500)
    assert not (site / "tests").exists() and not (site / "README.md").exists()
    assert cli("verify", *tiny.args()).code == 0


@pytest.mark.parametrize(
    "path, why", [("zz_patch.pth", ".pth"), ("tinydist/hook.pth", ".pth"), ("newmodule.py", "new top-level module")]
)
def test_pth_files_and_new_top_level_modules_are_refused(tiny, cli, path, why):
    tiny.series(({"tinydist/core.py": core_with(500), path: "import os\n"}, "Core five, and a hook"))
    before = snapshot(tiny.venv)
    for verb in ("status", "apply"):
        result = cli(verb, *tiny.src("--json"))
        assert result.code == 1, result.out + result.err
        patch = result.json["upstreams"][0]["patches"][0]
        assert patch["state"] == "conflict" and path in patch["detail"] and why in patch["detail"], patch
    result = cli("apply", *tiny.src())
    assert result.code == 1 and "refused" in result.out and why in result.out, result.out
    assert snapshot(tiny.venv) == before


# -- item 8: no symbolic link in a state or journal path -----------------------------------------
def outside_folder(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    outside = tmp_path / "outside"
    (outside / "staging" / "keep").mkdir(parents=True)
    (outside / "precious.txt").write_text("not patchmgr's\n")
    (outside / "staging" / "keep" / "file").write_text("also not\n")
    (outside / "journal").mkdir()
    (outside / "journal" / "data").write_text("mine\n")
    return outside, snapshot(outside)


def test_apply_into_refuses_a_linked_state_folder(tmp_path, tiny, cli):
    tiny.series(({"tinydist/core.py": core_with(500)}, "Core five"))
    outside, before = outside_folder(tmp_path)
    into = tmp_path / "build"
    into.mkdir()
    (into / ".patchmgr-state").symlink_to(outside)
    sources = ["--source", f"tinydist={tiny.repo.path}"]
    for args in (
        ["apply", "--target", "t", "--into", str(into), *sources],
        ["verify", "--target", "t", "--into", str(into)],
    ):
        error = one_error(cli(*args))
        assert "symbolic link" in error and ".patchmgr-state" in error, error
        assert snapshot(outside) == before
    assert sorted(p.name for p in into.iterdir()) == [".patchmgr-state"]


def test_apply_into_refuses_a_linked_journal(tmp_path, tiny, cli):
    tiny.series(({"tinydist/core.py": core_with(500)}, "Core five"))
    outside, before = outside_folder(tmp_path)
    into = tmp_path / "build"
    (into / ".patchmgr-state").mkdir(parents=True)
    (into / ".patchmgr-state" / "journal").symlink_to(outside / "journal")
    error = one_error(cli("apply", "--target", "t", "--into", str(into), "--source", f"tinydist={tiny.repo.path}"))
    assert "journal" in error and "symbolic link" in error
    assert snapshot(outside) == before


@pytest.mark.parametrize(
    "link", ["patchmgr-state", "patchmgr-state/journal", "patchmgr-state/t", "patchmgr-state/t/originals"]
)
def test_apply_python_refuses_a_linked_state_path(tmp_path, tiny, cli, link):
    tiny.series(({"tinydist/core.py": core_with(500)}, "Core five"))
    if link != "patchmgr-state":  # a real state folder from an earlier apply and revert
        assert cli("apply", *tiny.src()).code == 0
        assert cli("revert", *tiny.args()).code == 0
    outside, _ = outside_folder(tmp_path)
    where = tiny.venv / link
    if where.exists():
        os.rename(where, tmp_path / "moved-away")
    where.parent.mkdir(parents=True, exist_ok=True)
    where.symlink_to(outside)
    before_outside, before_env = snapshot(outside), snapshot(tiny.venv)
    for args in (["apply", *tiny.src()], ["status", *tiny.src()], ["revert", *tiny.args()]):
        error = one_error(cli(*args))
        assert "symbolic link" in error and str(where) in error, error
        assert snapshot(outside) == before_outside and snapshot(tiny.venv) == before_env


# -- item 9: a killed apply leaves no temporary file behind --------------------------------------
def temp_files(venv: Path) -> list[Path]:
    return sorted(p for p in venv.rglob("*.patchmgr-tmp"))


def test_recovery_removes_the_temporary_files_of_a_killed_apply(tmp_path, tiny, cli, pristine):
    tiny.series(
        ({"tinydist/core.py": core_with(500)}, "Core five"),
        ({"tinydist/util.py": "def helper():\n    return 2\n", "tinydist/new.py": "N = 1\n"}, "Util"),
    )
    before = snapshot(tiny.venv)
    assert cli("apply", *tiny.src()).code == 0
    after = snapshot(tiny.venv)
    args = ["apply", *tiny.src(), "--root", str(tiny.project.root)]
    with_temp, step = [], 1
    while True:
        replace_tree(pristine, tiny.venv)
        code, output = run(args, {"PATCHMGR_FAULT_KILL_AT": str(step)})
        if code != -9:
            assert code == 0, output
            break
        left = [p for p in temp_files(tiny.venv) if "patchmgr-state" not in p.parts]
        if left:
            with_temp.append(step)
        result = cli("verify", *tiny.args("--json"))
        outcome = said(result.json["notes"])
        assert outcome in ("rolled-back", "not-started", "finished"), (step, result.json)
        assert temp_files(tiny.venv) == [], (step, left)
        state = snapshot(tiny.venv)
        assert state == (after if outcome == "finished" else before), (step, outcome)
        step += 1
    # a kill between writing a file's temporary copy and renaming it into place happened for every file
    assert len(with_temp) >= 4, with_temp
