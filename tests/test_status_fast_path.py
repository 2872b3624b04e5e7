"""``patchmgr status`` without typer (issue 25, item 4): the entry point parses a plain command line from the
command's own option values (``cli/optspec``), and typer builds ``patchmgr status --help`` from the same
values. Both parsers read every command line alike, and what the fast one is unsure of goes to typer, so an
error is typer's, word for word. Off a terminal the table is written without rich, for a log."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.scenes import pin_fixes

from patchmgr.cli import status as status_module
from patchmgr.cli.entry import main
from patchmgr.cli.optspec import parse

ROOT = Path(__file__).resolve().parent.parent

ACCEPTED = [
    [],
    ["--target", "ascend"],
    ["-t", "ascend", "--json"],
    ["--target=ascend"],
    ["--target", "a", "--target", "b"],
    ["-u", "a", "--upstream", "b", "-u", "c"],
    ["--against", "x=1", "--against=y=2"],
    ["--source", "mindspeed=/srv/m", "--source=verl=https://example.invalid/v.git"],
    ["--root", "some/dir", "--newest-release", "--format", "junit"],
    ["--python", "/usr/bin/python3", "--json", "--json"],
    ["-tascend"],
    ["--target", "-x"],
]
REJECTED = [
    ["--bogus"],
    ["--target"],
    ["-t"],
    ["--json=yes"],
    ["--newest-release=1"],
    ["extra"],
    ["--targ", "x"],
    ["--format"],
    ["--", "x"],
    ["-t", "a", "--upstream"],
]


def typer_params(argv: list[str]) -> dict | None:
    """What typer hands the command function for ``argv`` (its keyword arguments); None: typer refuses it."""
    from typer._click.exceptions import ClickException
    from typer.main import get_command_from_info
    from typer.models import CommandInfo

    from patchmgr.cli.app import app
    from patchmgr.cli.options import typer_callback

    seen: dict = {}

    def record(**values: object) -> int:
        seen.update(values)
        return 0

    info = CommandInfo(name="status", callback=typer_callback(record, status_module.OPTIONS))
    command = get_command_from_info(
        info, pretty_exceptions_short=app.pretty_exceptions_short, rich_markup_mode=app.rich_markup_mode
    )
    try:
        command.main(args=list(argv), prog_name="patchmgr status", standalone_mode=False)
    except ClickException:
        return None
    return seen


@pytest.mark.fast
@pytest.mark.parametrize("argv", ACCEPTED + REJECTED, ids=" ".join)
def test_the_fast_parser_reads_a_command_line_as_typer_does_or_leaves_it_to_typer(argv):
    fast, by_typer = parse(status_module.OPTIONS, argv), typer_params(argv)
    if argv in REJECTED:
        assert by_typer is None
    if by_typer is None:
        assert fast is None  # typer says what is wrong, in its words
    if fast is not None:
        assert fast == by_typer


@pytest.mark.fast
def test_the_accepted_forms_are_taken_by_the_fast_parser():
    left = [argv for argv in ACCEPTED if parse(status_module.OPTIONS, argv) is None]
    assert left == [["-tascend"], ["--target", "-x"]]  # only the forms it is unsure of go on to typer


@pytest.mark.fast
def test_the_command_takes_exactly_the_options_its_help_lists():
    from patchmgr.cli.app import build_command

    params = [p.name for p in build_command("status").params if p.name != "help"]
    assert params == [o.param for o in status_module.OPTIONS]
    assert list(inspect.signature(status_module.command).parameters) == params


@pytest.mark.parametrize(
    "argv",
    [
        ["status", "--target", "nope"],
        ["status"],
        ["status", "--json", "--format", "junit"],
        ["status", "--format", "html"],
        ["status", "--target", "t", "--source", "lib"],
        ["status", "--target", "t", "--upstream", "other"],
        ["status", "--bogus"],
        ["status", "--target"],
    ],
    ids=" ".join,
)
def test_errors_are_the_same_through_the_fast_path_and_through_typer(argv, project, upstream, capsys):
    from patchmgr.cli.app import run_parser

    pin_fixes(project, upstream, {"fix": {20: "fixed 20"}})
    args = [*argv, "--root", str(project.root)]
    outcomes = []
    for run in (main, run_parser):
        capsys.readouterr()
        code = run(list(args))
        captured = capsys.readouterr()
        outcomes.append((code, captured.out, captured.err))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][0] == 2 and "error: " in outcomes[0][2]


def test_the_log_table_and_json_match_what_typer_runs(project, upstream, capsys):
    from patchmgr.cli.app import run_parser

    pin_fixes(project, upstream, {"fix": {20: "fixed 20"}, "other": {40: "fixed 40"}})
    main(["fetch", "--target", "t", "--source", f"lib={upstream.path}", "--root", str(project.root)])
    for extra in ([], ["--json"], ["--format", "markdown"]):
        args = ["status", "--target", "t", "--source", f"lib={upstream.path}", *extra, "--root", str(project.root)]
        outcomes = []
        for run in (main, run_parser):
            capsys.readouterr()
            code = run(list(args))
            outcomes.append((code, capsys.readouterr().out))
        assert outcomes[0] == outcomes[1]
        assert outcomes[0][0] == 0


def test_off_a_terminal_status_loads_neither_typer_nor_rich_and_writes_a_plain_table(project, upstream, tmp_path):
    pin_fixes(project, upstream, {"fix": {20: "fixed 20"}})
    child = (
        "import json, runpy, sys\n"
        "try:\n    runpy.run_module('patchmgr', run_name='__main__', alter_sys=True)\n"
        "except SystemExit as done:\n    code = done.code\n"
        "sys.stdout.flush()\n"
        "sys.stderr.write(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('typer', 'rich'))))\n"
        "sys.exit(code)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE"):
        env.pop(name, None)

    def status(*args: str, extra: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, *args, "status", "--target", "t", "--source", f"lib={upstream.path}", *extra]
            + ["--root", str(project.root)],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=120,
        )

    plain = status("-m", "patchmgr")  # the first run fetches: its progress is asked for a terminal without rich
    lines = plain.stdout.splitlines()
    assert lines[:3] == ["target t", "upstream  patch  state  detail", "lib       fix    clean"]
    assert all(line == line.rstrip() for line in lines)
    for extra in ((), ("--json",)):
        done = status("-c", child, extra=extra)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stderr.splitlines()[-1]) == []
    assert done.stdout.startswith("{")
