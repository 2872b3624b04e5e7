"""The entry point: ``patchmgr --help``, ``--version`` and a bare ``patchmgr`` are answered from the command table
without typer, rich or any command module (``cli/toplevel.py``); everything else goes through the typer app."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    from patchmgr.cli.toplevel import answer

    code = answer(args)
    if code is not None:
        return code
    from patchmgr.cli.app import run_parser

    return run_parser(args)


def run() -> None:
    sys.exit(main())
