"""Installed environments and the journal never traceback, never mislead (issue 12, issue 14 item 5).

Every case goes through the real command line on a real virtual environment (``tinydist`` 1.0,
installed by pip from a wheel, as in tests/test_trust_installed.py) and asserts the exit code of
the policy (2 bad input, 1 an environment or state that is not as needed), exactly one ``error:``
line plus one ``hint:`` line, no traceback, and the environment hashed unchanged.

- A damaged RECORD (not UTF-8, a one-column row), saved originals that were deleted, a journal or
  a ledger of the wrong shape or with wrong field types.
- A read-only environment (a read-only tmpfs mount): writing commands fail with the real cause,
  reading ones still work.
- A missing distribution, or another version than the pin, is bad input (exit 2).
- ``smoke --python`` checks first that the interpreter can import pytest and what the smoke tests
  import (torch, and patchmgr's own dependencies when a conftest imports patchmgr's CLI), and that
  the device probe answers as a Python interpreter would.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.gitrepos import make_series
from support.reliability import replace_tree
from support.snapshot import snapshot
from support.tinydist import Tiny, core_with, site_packages

# tinydist is made up: its release is never looked up on a real package index
pytestmark = pytest.mark.usefixtures("no_package_index")


def assert_one_error(result, code: int, *needles: str) -> str:
    """Exit ``code``, and exactly one error line plus one hint line, no traceback; the error line."""
    text = result.out + result.err
    assert result.code == code, text
    assert "Traceback" not in text, text
    lines = result.err.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("error: ") and lines[1].startswith("hint: "), text
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def record_file(venv: Path) -> Path:
    return site_packages(venv) / "tinydist-1.0.dist-info" / "RECORD"


def state_folder(venv: Path) -> Path:
    return venv / "patchmgr-state"


@pytest.fixture
def applied(tiny, cli) -> Tiny:
    tiny.series(({"tinydist/core.py": core_with(500)}, "Core five"))
    result = cli("apply", *tiny.src())
    assert result.code == 0, result.out + result.err
    return tiny


# -- RECORD ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("command", ["status", "apply", "verify", "revert"])
def test_a_record_that_is_not_utf8(tiny, cli, command):
    tiny.series(({"tinydist/core.py": core_with(500)}, "Core five"))
    record = record_file(tiny.venv)
    record.write_bytes(record.read_bytes() + b"tinydist/caf\xe9.py,,\n")
    before = snapshot(tiny.venv)
    result = cli(command, *(tiny.src() if command in ("status", "apply") else tiny.args()))
    assert_one_error(result, 1, "tinydist", "damaged", "RECORD")
    assert snapshot(tiny.venv) == before


def test_a_record_that_turns_non_utf8_after_apply(applied, cli):
    record = record_file(applied.venv)
    record.write_bytes(record.read_bytes() + b"\xff\xfe\n")
    before = snapshot(applied.venv)
    for command in ("verify", "revert"):
        assert_one_error(cli(command, *applied.args()), 1, "damaged", "RECORD")
        assert snapshot(applied.venv) == before


def test_a_one_column_record_row(tiny, cli):
    """A row with the path alone (no hash, no size): apply writes a full row for it; verify reads one."""
    tiny.series(({"tinydist/core.py": core_with(500)}, "Core five"))
    record = record_file(tiny.venv)
    rows = record.read_text().splitlines()
    record.write_text(
        "\n".join("tinydist/core.py" if row.startswith("tinydist/core.py,") else row for row in rows) + "\n"
    )
    assert cli("apply", *tiny.src()).code == 0
    assert any(row.startswith("tinydist/core.py,sha256=") for row in record.read_text().splitlines())
    assert cli("verify", *tiny.args()).code == 0
    # a RECORD rewritten after apply with that row cut to its path: verify says so, no traceback
    record.write_text(
        "\n".join(
            "tinydist/core.py" if row.startswith("tinydist/core.py,") else row
            for row in record.read_text().splitlines()
        )
        + "\n"
    )
    result = cli("verify", *tiny.args())
    assert result.code == 1 and "Traceback" not in result.out + result.err
    assert "RECORD does not match" in result.out + result.err


# -- saved originals ------------------------------------------------------------------------------
@pytest.mark.parametrize("command", ["revert", "status", "apply"])
def test_saved_originals_that_were_deleted(applied, cli, command):
    shutil.rmtree(state_folder(applied.venv) / "t" / "originals")
    before = snapshot(applied.venv)
    result = cli(command, *(applied.src() if command in ("status", "apply") else applied.args()))
    error = assert_one_error(result, 1, "saved original of", "is gone")
    assert "tinydist" in error
    assert "reinstall" in result.err.splitlines()[1]
    assert snapshot(applied.venv) == before


def test_a_saved_original_that_was_changed(applied, cli):
    for saved in (state_folder(applied.venv) / "t" / "originals").rglob("*"):
        if saved.is_file():
            saved.write_bytes(b"not what apply kept\n")
    before = snapshot(applied.venv)
    assert_one_error(cli("revert", *applied.args()), 1, "saved original of", "damaged")
    assert snapshot(applied.venv) == before


# -- the environment's journal --------------------------------------------------------------------
DAMAGED_JOURNALS = [
    ("not JSON", "{"),
    ("not UTF-8", b"\xff\xfe{}"),
    ("a list", "[]"),
    ("state is a number", {"state": 5, "entries": []}),
    ("state is unknown", {"state": "half", "entries": []}),
    ("entries is not a list", {"state": "prepared", "entries": 5}),
    ("an entry without a path", {"state": "prepared", "entries": [{"saved": None}]}),
    ("a saved copy outside the journal", {"state": "prepared", "entries": [{"path": "/x", "saved": "../../x"}]}),
    ("moves of the wrong shape", {"state": "prepared", "entries": [], "moves": [["a"]]}),
]


# every damaged journal with verify; one of them with every command that reads the environment
JOURNAL_CASES = [("verify", content) for content in DAMAGED_JOURNALS] + [
    (command, DAMAGED_JOURNALS[3]) for command in ("status", "revert", "apply", "smoke")
]


@pytest.mark.parametrize(
    "command, content", [(c, j[1]) for c, j in JOURNAL_CASES], ids=[f"{c}-{j[0]}" for c, j in JOURNAL_CASES]
)
def test_damaged_environment_journal(applied, cli, command, content):
    journal = state_folder(applied.venv) / "journal"
    journal.mkdir()
    data = (
        content
        if isinstance(content, bytes)
        else (content if isinstance(content, str) else json.dumps(content)).encode()
    )
    (journal / "journal.json").write_bytes(data)
    before = snapshot(applied.venv)
    args = applied.src() if command in ("status", "apply") else applied.args()
    result = cli(command, *args, *(["--device", "cpu"] if command == "smoke" else []))
    assert_one_error(result, 1, "journal.json", "damaged")
    assert snapshot(applied.venv) == before


# -- the environment's ledger ---------------------------------------------------------------------
def _ledger_entry(**changes) -> dict:
    entry = {
        "name": "tinydist",
        "dist": "tinydist",
        "version": "1.0",
        "location": "/x",
        "editable": False,
        "pin": "a" * 40,
        "patches": [],
        "files": {},
        "record": None,
        "record_original": None,
        "bytecode": {},
    }
    return {**entry, **changes}


DAMAGED_LEDGERS = [
    ("not JSON", "{"),
    ("a list", [1]),
    ("target is a number", {"target": 5, "python": "p", "upstreams": []}),
    ("upstreams is an object", {"target": "t", "python": "p", "upstreams": {"tinydist": 1}}),
    ("editable is a string", {"target": "t", "python": "p", "upstreams": [_ledger_entry(editable="no")]}),
    ("patches is a string", {"target": "t", "python": "p", "upstreams": [_ledger_entry(patches="p")]}),
    ("files is a list", {"target": "t", "python": "p", "upstreams": [_ledger_entry(files=["a"])]}),
    (
        "an original that is a path",
        {
            "target": "t",
            "python": "p",
            "upstreams": [
                _ledger_entry(
                    files={"tinydist/core.py": {"installed": "/x", "original": "../../../etc/passwd", "patched": None}}
                )
            ],
        },
    ),
    (
        "a bytecode hash that is a number",
        {"target": "t", "python": "p", "upstreams": [_ledger_entry(bytecode={"/x.pyc": 5})]},
    ),
    ("a name with a slash", {"target": "t", "python": "p", "upstreams": [_ledger_entry(name="../tinydist")]}),
]


LEDGER_CASES = [("verify", content) for content in DAMAGED_LEDGERS] + [
    (command, DAMAGED_LEDGERS[7]) for command in ("status", "revert", "apply", "smoke")
]


@pytest.mark.parametrize(
    "command, content", [(c, j[1]) for c, j in LEDGER_CASES], ids=[f"{c}-{j[0]}" for c, j in LEDGER_CASES]
)
def test_damaged_environment_ledger(applied, cli, command, content):
    (state_folder(applied.venv) / "t" / "ledger.json").write_text(
        content if isinstance(content, str) else json.dumps(content)
    )
    before = snapshot(applied.venv)
    args = applied.src() if command in ("status", "apply") else applied.args()
    result = cli(command, *args, *(["--device", "cpu"] if command == "smoke" else []))
    assert_one_error(result, 1, "ledger.json", "damaged")
    assert snapshot(applied.venv) == before


# -- a read-only environment ----------------------------------------------------------------------
@pytest.fixture
def read_only(tmp_path):
    """A read-only mount to copy an environment into; skipped where this process cannot mount (not root)."""
    mount = tmp_path / "ro"
    mount.mkdir()
    if (
        os.geteuid() != 0
        or subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(mount)], capture_output=True).returncode != 0
    ):
        pytest.skip("needs root and mount(8) to make a read-only file system")

    def seal() -> None:
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)

    yield mount, seal
    subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_read_only_environment(tiny, cli, read_only):
    mount, seal = read_only
    tiny.series(({"tinydist/core.py": core_with(500)}, "Core five"))
    pristine_copy, patched_copy = mount / "pristine", mount / "patched"
    replace_tree(tiny.venv, pristine_copy)
    replace_tree(tiny.venv, patched_copy)
    source = ["--source", f"tinydist={tiny.repo.path}"]
    assert cli("apply", "--target", "t", "--python", str(patched_copy / "bin" / "python"), *source).code == 0
    seal()

    def python(venv: Path) -> list[str]:
        return ["--target", "t", "--python", str(venv / "bin" / "python")]

    before = snapshot(mount)
    for args in (["apply", *python(pristine_copy), *source], ["revert", *python(patched_copy)]):
        assert_one_error(cli(*args), 1, "Read-only file system", "nothing was changed")
        assert snapshot(mount) == before
    # reading needs no lock: status, a dry run and verify work on an environment nobody can write
    assert cli("status", *python(pristine_copy), *source).code == 0
    assert cli("apply", *python(pristine_copy), *source, "--dry-run").code == 0
    assert cli("verify", *python(patched_copy)).code == 0
    assert snapshot(mount) == before


# -- the exit-code policy: a missing distribution or another version is bad input ----------------
def test_missing_or_other_version_is_bad_input(tiny, cli, tmp_path):
    tiny.series(({"tinydist/core.py": core_with(500)}, "Core five"))
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    for command in ("status", "apply", "smoke"):  # (verify reports what differs from its ledger: exit 1)
        result = cli(command, "--target", "t", "--python", str(bare / "bin" / "python"))
        assert_one_error(result, 2, "tinydist is not installed (wanted 1.0)")
    manifest = tiny.project.root / "manifests" / "t.toml"
    manifest.write_text(manifest.read_text().replace('version = "1.0"', 'version = "1.1"'))
    before = snapshot(tiny.venv)
    for command in ("status", "apply", "smoke"):
        args = tiny.args() if command == "smoke" else tiny.src()
        assert_one_error(cli(command, *args), 2, "tinydist 1.0 is installed, but the pin is version 1.1")
    assert snapshot(tiny.venv) == before


# -- smoke --python: what the smoke tests need, checked before anything runs ----------------------
SMOKE_TEST = "tests/smoke/tinydist/test_core.py"


def _smoke_project(tiny: Tiny, cli, test: str, conftest: str | None = None) -> None:
    """Patch ``fix-1`` with its smoke test ``test``, applied into the environment (smoke tests what apply wrote)."""
    fields = f"Origin: vendor\nUpstream-Status: Pending\nSmoke-Test: {SMOKE_TEST}"
    mail = make_series(tiny.repo, tiny.pin, [({"tinydist/core.py": core_with(500)}, "Core five")], fields=fields)[0]
    tiny.project.add_patch("tinydist", "fix-1", mail)
    tiny.project.manifest(
        "t",
        {
            "tinydist": {
                "git": "https://example.invalid/tinydist.git",
                "commit": tiny.pin,
                "version": "1.0",
                "pypi": "tinydist",
                "patches": ["fix-1"],
            }
        },
    )
    path = tiny.project.root / SMOKE_TEST
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(test)
    (path.parent / "helper_here.py").write_text("VALUE = 1\n")
    if conftest is not None:
        (tiny.project.root / "tests" / "conftest.py").write_text(conftest)
    applied = cli("apply", *tiny.src())
    assert applied.code == 0, applied.out + applied.err


TORCH_TEST = (
    "import pytest\nimport torch\n\nimport helper_here\n\ntry:\n    import torch_npu\nexcept ImportError:\n"
    "    torch_npu = None\n\n\ndef test_core():\n    from megatron.core import utils\n"
    "    assert torch.tensor(1).item() == utils.ONE\n"
)


def test_smoke_names_what_the_environment_lacks(tiny, cli):
    """A --without-pip venv holds neither pytest nor torch: one error naming both and how to install them."""
    _smoke_project(tiny, cli, TORCH_TEST)
    # megatron.bridge is installed, megatron.core (another distribution in the same namespace) is not
    (site_packages(tiny.venv) / "megatron" / "bridge").mkdir(parents=True)
    (site_packages(tiny.venv) / "megatron" / "bridge" / "__init__.py").write_text("")
    before = snapshot(tiny.venv)
    result = cli("smoke", *tiny.args("--device", "cpu"))
    python = str(tiny.venv / "bin" / "python")
    assert_one_error(result, 2, f"--python {python} lacks pytest, megatron.core, torch", "nothing was run")
    hint = result.err.splitlines()[1]
    assert f"{python} -m pip install" in hint and "torch==" in hint and "megatron-core" in hint
    assert "torch_npu" not in result.err and "helper_here" not in result.err  # optional and local imports
    assert snapshot(tiny.venv) == before


def test_smoke_names_patchmgrs_own_dependencies_a_conftest_needs(tiny, cli):
    """A conftest that imports patchmgr's CLI needs typer, rich, ... in that environment: all named at once."""
    _smoke_project(tiny, cli, "def test_core():\n    assert True\n", conftest="from patchmgr.cli.app import app\n")
    site = site_packages(tiny.venv)
    (site / "pytest.py").write_text("")  # found by the check; the run never starts
    result = cli("smoke", *tiny.args("--device", "cpu"))
    error = assert_one_error(result, 2, "lacks typer", "rich", "tomlkit")
    assert "pytest" not in error.split(" lacks ")[1]


def test_smoke_device_probe_that_is_not_json(tiny, cli, tmp_path):
    """An interpreter that answers the environment probe but prints garbage to the device probe: exit 2."""
    _smoke_project(tiny, cli, "def test_core():\n    assert True\n")
    (site_packages(tiny.venv) / "pytest.py").write_text("")
    wrapper = tmp_path / "wrapped-python"
    wrapper.write_text(
        f"#!/bin/sh\ncase \"$2\" in *torch_npu*) echo 'no devices here'; exit 0;; esac\n"
        f'exec {tiny.venv / "bin" / "python"} "$@"\n'
    )
    wrapper.chmod(0o755)
    result = cli("smoke", "--target", "t", "--python", str(wrapper), "--device", "cpu")
    assert_one_error(result, 2, f"--python {wrapper} did not answer as a Python interpreter", "not JSON")
