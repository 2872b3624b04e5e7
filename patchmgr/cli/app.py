"""The command line: the typer application, one module per command, and the one error-to-exit-code mapping.

Each command module imports the core modules it uses when it runs: a process that runs one
command does not load rich tables, PyPI and history code for all of them (benchmarks/RESULTS.md
has the start-up cost that this keeps down).
"""

from __future__ import annotations

import sys

import typer

# typer 0.28 (pinned <0.29 in pyproject.toml) carries click inside it: the parser's usage errors are this
# ClickException, the one subclass of the public typer.TyperException, and the one that has show()
from typer._click.exceptions import ClickException

from patchmgr.cli import (
    apply,
    bisect,
    bump,
    edit,
    export,
    fetch,
    import_,
    lint,
    matrix,
    refresh,
    revert,
    roots,
    smoke,
    status,
    verify,
)
from patchmgr.model.errors import PatchmgrError

EXIT_CODES = "Exit codes, the same for every command: 0 fine; 1 the check ran and found trouble; 2 bad input or usage."

app = typer.Typer(
    help="Keep .patch files against pinned upstream commits: check, apply, verify. " + EXIT_CODES,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

COMMANDS = {
    "status": status,
    "apply": apply,
    "verify": verify,
    "lint": lint,
    "smoke": smoke,
    "fetch": fetch,
    "revert": revert,
    "bisect": bisect,
    "refresh": refresh,
    "bump": bump,
    "edit": edit,
    "export": export,
    "roots": roots,
    "matrix": matrix,
    "import": import_,
}
for _name, _module in COMMANDS.items():
    app.command(name=_name, help=_module.HELP)(_module.command)


def main(argv: list[str] | None = None) -> int:
    command = typer.main.get_command(app)
    try:
        result = command.main(args=argv, prog_name="patchmgr", standalone_mode=False)
    except PatchmgrError as error:
        from patchmgr.render.console import make_console, render_error

        render_error(make_console(stderr=True), error)
        return error.exit_code
    except typer.Exit as exit_:
        return exit_.exit_code
    except typer.Abort:
        return 130
    except ClickException as error:  # usage errors from the parser
        error.show()
        return 2
    return result if isinstance(result, int) else 0


def run() -> None:
    sys.exit(main())
