"""Options as values: each one's names, kind, help and default, written once, without typer.

The typer app builds its options from these (``cli/options.py``: the ``...Opt`` aliases of the commands'
signatures, and ``typer_callback`` for a command that lists its options as a tuple of ``Option``), and
``parse`` reads a command line with them without typer at all: the fast path of ``patchmgr status``
(``cli/entry.py``). ``parse`` takes only what it is sure of (a known option, its value, a flag) and
hands anything else (an unknown option, ``--help``, a value missing or starting with ``-``, an argument,
``--``) back to typer, so that every error is typer's and says the same; tests/test_startup.py runs both
parsers over the same command lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Optional

REQUIRED = " \\[required]"  # escaped: typer reads help text as rich markup


class Kind(StrEnum):
    FLAG = "flag"  # no value: True when given
    VALUE = "value"  # one value (the last one wins when given twice)
    MANY = "many"  # repeatable: every value, in order


@dataclass(frozen=True)
class Option:
    param: str  # the parameter of the command function that receives it
    names: tuple[str, ...]  # the long name first, then a short one
    kind: Kind
    help: str
    value: type = str  # what a value is made into: str or Path
    default: object = None
    metavar: str | None = None

    @property
    def annotation(self) -> object:
        """The type typer reads from the command's signature."""
        if self.kind is Kind.FLAG:
            return bool
        if self.kind is Kind.MANY:
            return Optional[list[self.value]]  # type: ignore[name-defined]  # noqa: UP045
        return self.value if self.default is not None else Optional[self.value]  # noqa: UP045


ROOT = Option("root", ("--root",), Kind.VALUE, "Project root (holds manifests/ and patches/).", Path, Path("."))
NEEDED_TARGET = Option("target", ("--target", "-t"), Kind.VALUE, "Target name (manifests/<target>.toml)." + REQUIRED)
AGAINST = Option(
    "against",
    ("--against",),
    Kind.MANY,
    "NAME=REF: check upstream NAME at a branch, tag or commit (or, for an upstream "
    "with `pypi`, a release version) instead of its pin.",
)
SOURCE = Option(
    "source",
    ("--source",),
    Kind.MANY,
    "NAME=LOCATION: fetch upstream NAME from this URL or local repository instead. Set once: "
    "PATCHMGR_SOURCES='NAME=LOCATION ...', .patchmgr.local.toml or ~/.config/patchmgr/config.toml "
    "(their sources table).",
)
JSON = Option("json_output", ("--json",), Kind.FLAG, "Print one JSON document on stdout.", default=False)
PYTHON = Option(
    "python", ("--python",), Kind.VALUE, "Interpreter of an installed environment to work on (instead of --into DIR)."
)
UPSTREAMS = Option("upstream", ("--upstream", "-u"), Kind.MANY, "Restrict the run to this upstream (repeatable).")
SMOKE_AT_REF = Option(
    "smoke",
    ("--smoke",),
    Kind.FLAG,
    "Also run each patch's smoke tests at the ref, in a scratch checkout, with and without the patch: "
    "proven, upstream (by smoke: every test passes without it there, and failed without it and passed with it "
    "at the pin), "
    "partly upstream (some do), failed, or not proven, per patch.",
    default=False,
)

OWN_COPY = Option(
    "own_copy",
    ("--own-copy",),
    Kind.FLAG,
    "Where another target lists a patch file this rewrites: write this target's own copy instead, "
    "patches/<upstream>/<id>-<target>.patch, listed in its series in the file's place; the other target keeps the "
    "file as it is (without this, or --also-target, such a rewrite is refused).",
    default=False,
)
ALSO_TARGET = Option(
    "also_target",
    ("--also-target",),
    Kind.MANY,
    "Target NAME, which lists the same series of the upstream at the same pin, takes the same change: the patch "
    "files both list are rewritten for both, and its manifest changes as this one's does.",
    metavar="NAME",
)


def parse(options: tuple[Option, ...], argv: list[str]) -> dict[str, object] | None:
    """``argv`` (what follows the command's name) as the command function's keyword arguments, every option's
    default filled in; None when it holds anything but the plain forms of these options (typer then parses it,
    and says what is wrong)."""
    by_name = {name: option for option in options for name in option.names}
    values: dict[str, object] = {option.param: option.default for option in options}
    index = 0
    while index < len(argv):
        arg = argv[index]
        index += 1
        name, equals, attached = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        option = by_name.get(name)
        if option is None:
            return None
        if option.kind is Kind.FLAG:
            if equals:
                return None
            values[option.param] = True
            continue
        if equals:
            value = attached
        elif index < len(argv):
            value = argv[index]
            index += 1
        else:
            return None
        if not value or value.startswith("-"):
            return None
        made = option.value(value)
        if option.kind is Kind.MANY:
            values[option.param] = [*(values[option.param] or []), made]  # type: ignore[misc]
        else:
            values[option.param] = made
    return values
