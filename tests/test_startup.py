"""Start-up (issue 25, item 4): a command loads only what it needs.

``patchmgr --help``, ``--version`` and a bare ``patchmgr`` import no command module, no core package and
neither typer nor rich; ``patchmgr <command> --help`` imports that command's module and no other. What each
costs in time is measured in the benchmark (benchmarks/cases_startup.py), never here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from patchmgr.cli.commands import COMMANDS

ROOT = Path(__file__).resolve().parent.parent
CORE = ("engine", "maintain", "targets", "history", "smoke", "sources", "check", "render", "io")
COMMAND_MODULES = {f"patchmgr.cli.{entry.module}" for entry in COMMANDS.values()}


MARK = "modules imported: "
# runs ``python -m patchmgr ARGS`` as an installed patchmgr would (its __main__), then reports ``sys.modules``
CHILD = f"""
import json, runpy, sys
try:
    runpy.run_module("patchmgr", run_name="__main__", alter_sys=True)
except SystemExit as done:
    code = done.code
sys.stdout.flush()
sys.stderr.write("\\n{MARK}" + json.dumps(sorted(sys.modules)) + "\\n")
sys.exit(code)
"""


def imported_by(*args: str) -> tuple[set[str], subprocess.CompletedProcess]:
    """The modules that ``python -m patchmgr ARGS`` has imported when it exits, and the finished process."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100"},
        timeout=120,
    )
    reports = [line for line in done.stderr.splitlines() if line.startswith(MARK)]
    assert reports, done.stderr[-2000:]
    return set(json.loads(reports[-1].removeprefix(MARK))), done


def heavy(modules: set[str]) -> list[str]:
    return sorted(
        m
        for m in modules
        if m in COMMAND_MODULES
        or m.split(".")[0] in ("typer", "rich", "click")
        or (m.startswith("patchmgr.") and m.split(".")[1] in CORE)
    )


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["--version"], []], ids=["--help", "-h", "--version", "bare"])
def test_help_and_version_import_no_command_core_typer_or_rich(args):
    modules, done = imported_by(*args)
    assert done.returncode == (2 if not args else 0), done.stderr[-2000:]
    assert "patchmgr.cli.commands" in modules  # the table is what answers
    assert heavy(modules) == []


def test_help_lists_every_command_with_its_help_and_version_prints_the_version():
    from patchmgr import __version__

    _modules, help_done = imported_by("--help")
    flat = " ".join(help_done.stdout.replace("│", " ").split())
    for name, entry in COMMANDS.items():
        assert f" {name} {' '.join(entry.help.split()[:4])}" in flat, name
    _modules, version_done = imported_by("--version")
    assert version_done.stdout == f"patchmgr {__version__}\n"


@pytest.mark.parametrize("command", ["status", "bump", "import"])
def test_a_commands_help_imports_that_command_alone_and_no_core_package(command):
    modules, done = imported_by(command, "--help")
    assert done.returncode == 0, done.stderr[-2000:]
    assert modules & COMMAND_MODULES == {f"patchmgr.cli.{COMMANDS[command].module}"}
    assert [m for m in modules if m.startswith("patchmgr.") and m.split(".")[1] in CORE] == []


@pytest.mark.parametrize("width", [60, 80, 131])
def test_the_help_without_typer_is_typers_help_byte_for_byte(width, monkeypatch):
    """Off a terminal the table's help is what typer's rich help prints for the same app and width."""
    from typer.testing import CliRunner

    from patchmgr.cli.app import app
    from patchmgr.cli.toplevel import help_text

    monkeypatch.setenv("COLUMNS", str(width))
    monkeypatch.delenv("TERMINAL_WIDTH", raising=False)
    by_typer = CliRunner().invoke(
        app, ["--help"], env={"COLUMNS": str(width)}, terminal_width=width, prog_name="patchmgr"
    )
    assert by_typer.exit_code == 0
    assert by_typer.output == help_text(width) + "\n"


def test_a_plain_status_reads_git_dates_without_the_mail_packages(project, upstream):
    """git format-patch writes every patch's Date header in one form, read without email.utils (about 10 ms of
    imports); a date in another form still goes through it (tests/test_patch_parsing.py)."""
    pin = upstream.head()
    data = upstream.make_patch(pin, {"README": "patched\n"}, "Readme")
    assert b"\nDate: " in data
    project.add_patch("lib", "fix", data)
    project.manifest("t", {"lib": {"git": "https://example.invalid/lib.git", "commit": pin, "patches": ["fix"]}})
    modules, done = imported_by(
        "status", "--target", "t", "--root", str(project.root), "--source", f"lib={upstream.path}"
    )
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    assert sorted(m for m in modules if m.split(".")[0] == "email") == []


def test_status_with_sources_from_the_environment_loads_no_rich_off_a_terminal(project, upstream, monkeypatch):
    """Issue 39, item 8: with the source from ``PATCHMGR_SOURCES`` the run says where it comes from in a
    ``note:`` line; off a terminal that line is plain text, and rich, most of a start-up, is not loaded for it."""
    pin = upstream.head()
    project.add_patch("lib", "fix", upstream.make_patch(pin, {"README": "patched\n"}, "Readme"))
    project.manifest("t", {"lib": {"git": "https://example.invalid/lib.git", "commit": pin, "patches": ["fix"]}})
    monkeypatch.setenv("PATCHMGR_SOURCES", f"lib={upstream.path}")
    modules, done = imported_by("status", "--target", "t", "--root", str(project.root))
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    assert "note: " in done.stdout + done.stderr and "PATCHMGR_SOURCES" in done.stdout + done.stderr
    assert sorted(m for m in modules if m.split(".")[0] == "rich") == []
