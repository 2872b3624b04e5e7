"""``patchmgr --help``, ``patchmgr --version`` and a bare ``patchmgr``, answered from the command table alone.

These are what people and scripts run to find their way, so they start in the time of a bare interpreter:
no typer, no rich, no command module (tests/test_startup.py holds that). The help is laid out as typer lays
it out without a terminal (the usage, the description, an Options and a Commands panel, as wide as the
console); tests/test_startup.py compares the two byte for byte. On a terminal it is the same text without
colours. Anything else on the command line, ``patchmgr <command> --help`` included, goes to the typer app.
"""

from __future__ import annotations

import os
import sys

from patchmgr.cli.commands import APP_HELP, COMMANDS, VERSION_HELP

HELP_OPTIONS = ("-h", "--help")
USAGE = "Usage: patchmgr [OPTIONS] COMMAND [ARGS]..."
OPTIONS = (("--version", "", VERSION_HELP), ("--help", "-h", "Show this message and exit."))


def answer(args: list[str]) -> int | None:
    """The exit code when ``args`` ask only for the help or the version (printed here); ``None`` otherwise."""
    if args == ["--version"]:
        print(version_line())
        return 0
    if len(args) == 1 and args[0] in HELP_OPTIONS:
        sys.stdout.write(help_text(console_width()) + "\n")
        return 0
    if not args:  # the parser's no_args_is_help: the help on stdout, an empty usage error on stderr, exit 2
        sys.stdout.write(help_text(console_width()))
        sys.stderr.write("\n")
        return 2
    return None


def version_line() -> str:
    from patchmgr import __version__

    return f"patchmgr {__version__}"


def console_width() -> int:
    """The width rich gives typer's help console: TERMINAL_WIDTH, COLUMNS, the first std stream that is a
    terminal, else 80 (a dumb terminal is always 80)."""
    if os.environ.get("TERM") in ("dumb", "unknown") and sys.stdout.isatty():
        return 80
    for variable in ("TERMINAL_WIDTH", "COLUMNS"):
        value = os.environ.get(variable, "")
        if value.isdigit() and int(value):
            return int(value)
    for descriptor in (0, 1, 2):
        try:
            return os.get_terminal_size(descriptor).columns or 80
        except (AttributeError, ValueError, OSError):
            continue
    return 80


def help_text(width: int) -> str:
    """The top-level help, every line ``width`` columns wide, ending in a newline."""
    blank = " " * width
    lines = [blank, *padded([USAGE], width), blank, *padded(wrapped(APP_HELP, width - 2), width), blank]
    name_width = max(len(name) for name, _short, _help in OPTIONS)
    short_width = max(len(short) for _name, short, _help in OPTIONS)
    lines += panel(
        "Options",
        [(f"{name:<{name_width}}  {short:<{short_width}}" + " " * 8, text) for name, short, text in OPTIONS],
        width,
    )
    command_width = max(len(name) for name in COMMANDS)
    lines += panel("Commands", [(f"{name:<{command_width}}  ", c.help) for name, c in COMMANDS.items()], width)
    return "\n".join(lines) + "\n"


def wrapped(text: str, width: int) -> list[str]:
    import textwrap  # here: the typer app imports this module for version_line alone

    return textwrap.wrap(text, max(width, 1), break_on_hyphens=False) or [""]


def padded(lines: list[str], width: int) -> list[str]:
    """Each line after one space of margin, filled with spaces to ``width``."""
    return [f" {line}".ljust(width) for line in lines]


def panel(title: str, rows: list[tuple[str, str]], width: int) -> list[str]:
    """A rounded box titled ``title``: each row's lead, then its text wrapped beside it."""
    inner = width - 4  # the borders and one space inside each
    top = f"╭─ {title} ".ljust(width - 1, "─") + "╮"
    lines = [top]
    for lead, text in rows:
        for index, line in enumerate(wrapped(text, inner - len(lead))):
            start = lead if index == 0 else " " * len(lead)
            lines.append(f"│ {(start + line).ljust(inner)} │")
    return [*lines, "╰" + "─" * (width - 2) + "╯"]
