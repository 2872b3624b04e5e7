"""The typer application: the lazy command group, the ``--version`` option, and the one error-to-exit-code mapping.

The group lists the commands from ``cli/commands.py`` and imports a command's module only when that command is
asked for (``get_command``), the way click documents a ``LazyGroup``: a process that runs one command does not
load the others and what they import (benchmarks/RESULTS.md has the start-up cost that this keeps down).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping
from typing import Annotated, Any

import typer

# typer 0.28 (pinned <0.29 in pyproject.toml) carries click inside it: the parser's usage errors are this
# ClickException, the one subclass of the public typer.TyperException, and the one that has show()
from typer._click.core import Command as ClickCommand
from typer._click.exceptions import ClickException, NoArgsIsHelpError
from typer.core import TyperGroup
from typer.main import get_command_from_info
from typer.models import CommandInfo

from patchmgr.cli.commands import APP_HELP, COMMANDS, VERSION_HELP
from patchmgr.cli.options import typer_callback
from patchmgr.cli.toplevel import version_line
from patchmgr.model.errors import PatchmgrError


def build_command(name: str) -> ClickCommand:
    """The click command of ``name``, from its module's ``command`` function and the table's help."""
    entry = COMMANDS[name]
    module = importlib.import_module(f"patchmgr.cli.{entry.module}")
    callback = module.command
    if hasattr(module, "OPTIONS"):  # options given as values (cli/optspec): the signature typer reads is made
        callback = typer_callback(module.command, module.OPTIONS)
    info = CommandInfo(name=name, callback=callback, help=entry.help)
    return get_command_from_info(
        info, pretty_exceptions_short=app.pretty_exceptions_short, rich_markup_mode=app.rich_markup_mode
    )


class CommandsByName(MutableMapping[str, ClickCommand]):
    """The group's ``commands``: every name of the table is in it, and its command is built when first read, so
    code that reads ``group.commands`` (typer's parser, the tests) sees them all without importing them all."""

    def __init__(self) -> None:
        self.built: dict[str, ClickCommand] = {}

    def __getitem__(self, name: str) -> ClickCommand:
        if name not in self.built:
            if name not in COMMANDS:
                raise KeyError(name)
            self.built[name] = build_command(name)
        return self.built[name]

    def __setitem__(self, name: str, command: ClickCommand) -> None:
        self.built[name] = command

    def __delitem__(self, name: str) -> None:
        del self.built[name]

    def __contains__(self, name: object) -> bool:
        return name in COMMANDS or name in self.built

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*COMMANDS, *self.built]))

    def __len__(self) -> int:
        return len(set(COMMANDS) | set(self.built))


class LazyCommands(TyperGroup):
    """The typer group whose commands are the table's, each imported when it is asked for."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = CommandsByName()


app = typer.Typer(
    cls=LazyCommands,
    help=APP_HELP,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def print_version(given: bool) -> None:
    if given:
        print(version_line())
        raise typer.Exit(0)


@app.callback()
def top_level_options(
    version: Annotated[
        bool, typer.Option("--version", help=VERSION_HELP, is_eager=True, callback=print_version)
    ] = False,
) -> None:
    pass


def run_parser(argv: list[str] | None) -> int:
    """The command line through typer: parse, run the command, map what it raises to an exit code."""
    command = typer.main.get_command(app)
    try:
        result = command.main(args=argv, prog_name="patchmgr", standalone_mode=False)
    except PatchmgrError as error:
        from patchmgr.render.console import report_error

        return report_error(error)
    except typer.Exit as exit_:
        return exit_.exit_code
    except typer.Abort:
        return 130
    except ClickException as error:  # usage errors from the parser: patchmgr's error/hint pair
        if isinstance(error, NoArgsIsHelpError):  # a group asked for without a command: its help
            error.show()
            return 2
        from patchmgr.cli.usage import from_click
        from patchmgr.render.console import make_console, render_error

        usage = from_click(error, list(argv or []))
        render_error(make_console(stderr=True), usage)
        return usage.exit_code
    return result if isinstance(result, int) else 0


__all__ = ["app", "run_parser"]
