"""The entry point: ``patchmgr --help``, ``--version`` and a bare ``patchmgr`` are answered from the command table
without typer, rich or any command module (``cli/toplevel.py``); a plain ``patchmgr status`` command line is
parsed from the command's own option values (``cli/optspec``) and run without typer; everything else goes
through the typer app. Whatever a command writes to stdout and stderr has its credentials masked
(``cli/streams``)."""

from __future__ import annotations

import errno
import importlib
import sys

from patchmgr.model.errors import PatchmgrError

FAST = ("status",)  # the commands whose module lists its options as values (OPTIONS) and imports no typer


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    from patchmgr.cli.toplevel import answer

    code = answer(args)
    if code is not None:
        return code
    from patchmgr.cli.streams import masked_output

    with masked_output():
        if args and args[0] in FAST:
            code = run_fast(args[0], args[1:])
            if code is not None:
                return code
        from patchmgr.cli.app import run_parser

        return run_parser(args)


def run_fast(name: str, args: list[str]) -> int | None:
    """Command ``name`` run with ``args`` parsed by ``optspec.parse``; None (nothing run) when that parser leaves
    the command line to typer. What the command raises ends as it does under typer (``cli/app.run_parser``)."""
    from patchmgr.cli.commands import COMMANDS
    from patchmgr.cli.optspec import parse

    module = importlib.import_module(f"patchmgr.cli.{COMMANDS[name].module}")
    values = parse(module.OPTIONS, args)
    if values is None:
        return None
    try:
        result = module.command(**values)
    except PatchmgrError as error:
        from patchmgr.render.console import report_error

        return report_error(error)
    except KeyboardInterrupt:  # as click's main: exit 130
        return 130
    except EOFError:
        print(file=sys.stderr)
        return 130
    except OSError as error:
        if error.errno != errno.EPIPE:
            raise
        from typer._click.utils import PacifyFlushWrapper  # as click's main: the closed pipe is not an error

        sys.stdout = PacifyFlushWrapper(sys.stdout)
        sys.stderr = PacifyFlushWrapper(sys.stderr)
        sys.exit(1)
    return result if isinstance(result, int) else 0


def run() -> None:
    sys.exit(main_ending_on_signals())


def main_ending_on_signals(argv: list[str] | None = None) -> int:
    """``main`` as the console script runs it: SIGTERM and SIGHUP end it as Ctrl-C does, cleanup first, and it
    returns what a shell reports for a command ended by that signal (``cli/termination``)."""
    from patchmgr.cli.termination import EndingAsInterrupts, Terminated

    code, received = 130, EndingAsInterrupts()
    try:
        with received:
            code = main(argv)
    except Terminated:  # past every handler of KeyboardInterrupt: cleanup has run
        pass
    return received.exit_code or code
