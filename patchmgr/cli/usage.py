"""The parser's usage errors as patchmgr's own: one ``error:`` line, one ``hint:`` line, exit 2.

click (inside typer) raises its ``UsageError`` for an unknown option or command, an option without its value
or with one it does not take, a missing argument, an extra argument. Each becomes a ``model.errors.UsageError``
here, the one place that does it: click's suggestion ("Possible options: --against", "Did you mean 'status'?")
kept as ``(did you mean ...?)``, the hint naming the help that lists what is valid.
"""

from __future__ import annotations

import re

# typer 0.28 carries click inside it (cli/app.py says why these are imported from there)
from typer._click.exceptions import ClickException, NoSuchOption
from typer._click.exceptions import UsageError as ClickUsageError

from patchmgr.cli.commands import COMMANDS
from patchmgr.model.errors import UsageError

_DID_YOU_MEAN = re.compile(r"\.? Did you mean (?P<what>.+?)\?$")


def from_click(error: ClickException, argv: list[str]) -> UsageError:
    """``error`` (from the parser, given ``argv``) as one ``error:``/``hint:`` pair."""
    if isinstance(error, NoSuchOption):
        message = error.message
        if error.possibilities:
            message += f" (did you mean {' or '.join(sorted(error.possibilities))}?)"
    else:
        message = _DID_YOU_MEAN.sub(lambda found: f" (did you mean {found['what']}?)", error.format_message())
    message = message.rstrip(".").replace(" requires an argument", " needs a value")
    context = error.ctx if isinstance(error, ClickUsageError) else None
    # an option's value missing or given to a flag: the parser has no context yet, argv names the command
    named = next((arg for arg in argv if not arg.startswith("-")), None)
    path = context.command_path if context is not None else f"patchmgr {named}" if named in COMMANDS else "patchmgr"
    if " " not in path:  # the top level: a command name or a top-level option
        hint = "`patchmgr --help` lists the commands"
    else:
        hint = f"`{path} --help` lists its options"
    return UsageError(message[:1].lower() + message[1:], hint)
