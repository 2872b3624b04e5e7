"""docs/reference.md, made from the command table and each command's own options, so it says what --help says.

``python -m patchmgr.cli.reference > docs/reference.md`` writes it; ``tests/test_docs.py`` fails while the
committed file differs from what this module makes of the CLI now.
"""

from __future__ import annotations

import re
from typing import Any

from patchmgr.cli.app import build_command
from patchmgr.cli.commands import APP_HELP, COMMANDS, VERSION_HELP
from patchmgr.cli.optspec import REQUIRED

HEADER = """# Command reference

<!-- Made by `python -m patchmgr.cli.reference > docs/reference.md` from the CLI itself; do not edit by hand:
tests/test_docs.py fails while this file differs from what the CLI says. -->

{app_help}

`patchmgr --version`: {version_help} `patchmgr COMMAND --help` shows a command's options in the terminal.

Commands: {index}.
"""


def cell(text: str) -> str:
    """Text for a markdown table cell: rich's escapes undone, pipes escaped, on one line."""
    text = re.sub(r"\\\[", "[", text)
    return " ".join(text.replace("|", "\\|").split())


def option_row(param: Any) -> str:
    names = ", ".join(f"`{name}`" for name in [*param.opts, *param.secondary_opts])
    is_flag = bool(getattr(param, "is_flag", False))
    kind = {"str": "text"}.get(param.type.name, param.type.name)
    value = "" if is_flag else f"`{param.metavar or kind.upper()}`"
    help_text = getattr(param, "help", None) or ""
    facts = []
    if param.required:
        facts.append("required")
    if getattr(param, "multiple", False):
        facts.append("repeatable")
    shown = param.default
    if not is_flag and not param.required and shown not in (None, (), [], False):
        facts.append(f"default `{shown}`")
    if facts and REQUIRED not in help_text:  # the help already says it is required
        help_text = f"{help_text} ({', '.join(facts)})" if help_text else ", ".join(facts)
    return f"| {names} | {value} | {cell(help_text)} |"


def command_section(name: str) -> str:
    command = build_command(name)
    context = command.context_class(command, info_name=f"patchmgr {name}")
    usage = " ".join(command.collect_usage_pieces(context))
    lines = [f"## patchmgr {name}", "", "```text", f"patchmgr {name} {usage}".rstrip(), "```", ""]
    lines += [cell(command.help or ""), ""]
    arguments = [param for param in command.params if param.param_type_name == "argument"]
    for argument in arguments:
        lines.append(f"Argument `{(argument.name or '').upper()}`" + (" (required)." if argument.required else "."))
    if arguments:
        lines.append("")
    options = [param for param in command.params if param.param_type_name == "option"]
    if options:
        lines += ["| option | value | what it does |", "|---|---|---|"]
        lines += [option_row(option) for option in options]
        lines.append("")
    return "\n".join(lines)


def reference() -> str:
    index = ", ".join(f"[`{name}`](#patchmgr-{name})" for name in COMMANDS)
    parts = [HEADER.format(app_help=APP_HELP, version_help=VERSION_HELP, index=index)]
    parts += [command_section(name) for name in COMMANDS]
    return "\n".join(parts).rstrip() + "\n"


if __name__ == "__main__":
    print(reference(), end="")
