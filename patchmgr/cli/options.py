"""The options the commands share, as typer declares them, and the checks of their values (``option_values``,
re-exported here; the names and help of the options ``status`` takes are values in ``optspec``).

A value that is wrong is a ``UsageError`` (exit 2) with the same wording whichever command got it.
Options that a command cannot run without say ``[required]`` in their help; patchmgr checks them
itself (not typer), so that a missing one gets patchmgr's own ``error:``/``hint:`` lines.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from patchmgr.cli import optspec
from patchmgr.cli.option_values import (
    NamedOptions,
    Place,
    against_refs,
    folder_option,
    for_targets,
    missing,
    one_place,
    require_upstreams,
    required_folder,
    required_ref,
    required_target,
    source_overrides,
)
from patchmgr.cli.optspec import REQUIRED


def typer_option(option: optspec.Option) -> Any:
    """``option`` as typer declares it in a signature (``Annotated[type, typer_option(...)]``)."""
    return typer.Option(*option.names, help=option.help, metavar=option.metavar)


def typer_callback(command: Callable[..., int], options: tuple[optspec.Option, ...]) -> Callable[..., int]:
    """``command`` (keyword parameters named as ``options``) with the signature typer reads its options from:
    a command that lists its options as values (``OPTIONS``) has them from there alone."""

    def callback(**values: Any) -> int:
        return command(**values)

    callback.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter(
                option.param,
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
                default=option.default,
                annotation=Annotated[option.annotation, typer_option(option)],
            )
            for option in options
        ]
    )
    return callback


RootOpt = Annotated[Path, typer_option(optspec.ROOT)]
NeededTargetOpt = Annotated[Optional[str], typer_option(optspec.NEEDED_TARGET)]
AgainstOpt = Annotated[Optional[list[str]], typer_option(optspec.AGAINST)]
SourceOpt = Annotated[Optional[list[str]], typer_option(optspec.SOURCE)]
OwnCopyOpt = Annotated[bool, typer_option(optspec.OWN_COPY)]
AlsoTargetOpt = Annotated[Optional[list[str]], typer_option(optspec.ALSO_TARGET)]
JsonOpt = Annotated[bool, typer_option(optspec.JSON)]
PythonOpt = Annotated[Optional[str], typer_option(optspec.PYTHON)]
ForceOpt = Annotated[
    bool,
    typer.Option(
        "--force", help="Proceed over local work that would be lost, after saving it (the output says where)."
    ),
]
UpstreamsOpt = Annotated[Optional[list[str]], typer_option(optspec.UPSTREAMS)]
UpstreamOpt = Annotated[
    Optional[str], typer.Option("--upstream", "-u", help="The upstream, by its name in the manifest." + REQUIRED)
]
ToOpt = Annotated[
    Optional[str], typer.Option("--to", help="Branch, tag or commit of the upstream to go to." + REQUIRED)
]
AllowThreeWayOpt = Annotated[
    bool,
    typer.Option(
        "--allow-three-way",
        help="Also rewrite patches that need a 3-way merge (not fuzz: see --allow-fuzz); each "
        "one's old and new patch are shown before anything is written (with --dry-run: shown only).",
    ),
]
AllowFuzzOpt = Annotated[
    bool,
    typer.Option(
        "--allow-fuzz",
        help="Also rewrite patches that apply only with fuzz (context lines ignored); each one's old "
        "and new patch are shown before anything is written (with --dry-run: shown only).",
    ),
]
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Show what would change, write nothing.")]
NewIntoOpt = Annotated[
    Optional[Path],
    typer.Option(
        "--into", help="Folder that receives one checkout per upstream. --into DIR or --python PATH is required."
    ),
]
EnvPythonOpt = Annotated[
    Optional[str],
    typer.Option("--python", help="Interpreter of the installed environment that apply --python patched." + REQUIRED),
]
AppliedIntoOpt = Annotated[
    Optional[Path], typer.Option("--into", help="Folder that apply wrote. --into DIR or --python PATH is required.")
]
SmokeTimeoutOpt = Annotated[
    Optional[float],
    typer.Option(
        "--timeout",
        metavar="SECONDS",
        help="Time limit of each smoke test (default 300): a test past it is not proven and its whole process "
        "tree is ended.",
    ),
]
SmokeAtRefOpt = Annotated[bool, typer_option(optspec.SMOKE_AT_REF)]


__all__ = [
    "REQUIRED",
    "NamedOptions",
    "Place",
    "against_refs",
    "folder_option",
    "for_targets",
    "missing",
    "one_place",
    "require_upstreams",
    "required_folder",
    "required_ref",
    "required_target",
    "source_overrides",
    "typer_callback",
    "typer_option",
]
