"""The command line: the command table, the typer application (one module per command, each imported only when
it runs) and the one error-to-exit-code mapping."""

from patchmgr.cli.entry import main, run

__all__ = ["main", "run"]
