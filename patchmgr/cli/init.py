"""patchmgr init: start a project: the manifest of one target with one upstream pinned, and the files around it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from patchmgr.cli import options
from patchmgr.cli.session import Session
from patchmgr.model.errors import UsageError

GitOpt = Annotated[
    Optional[str],
    typer.Option(
        "--git", help="The upstream's git URL (https://, ssh:// or git://) for the manifest." + options.REQUIRED
    ),
]
PinOpt = Annotated[
    Optional[str],
    typer.Option("--pin", help="Tag, branch or commit to pin; the manifest holds its full commit." + options.REQUIRED),
]
NameOpt = Annotated[
    Optional[str],
    typer.Option(
        "--upstream", "-u", help="The upstream's name (default: from the URL: Megatron-Bridge.git: megatron-bridge)."
    ),
]
VersionOpt = Annotated[
    Optional[str],
    typer.Option("--version", help="The upstream's version at the pin (default: from a release tag such as v0.4.2)."),
]
PypiOpt = Annotated[
    Optional[str],
    typer.Option("--pypi", help="The upstream's PyPI project: its release stands in when git is out of reach."),
]
PackageRootOpt = Annotated[
    Optional[str],
    typer.Option("--package-root", help="The folder of the repository that holds the package (e.g. src)."),
]
DescriptionOpt = Annotated[Optional[str], typer.Option("--description", help="One line on what the target is for.")]


def command(
    target: options.NeededTargetOpt = None,
    git: GitOpt = None,
    pin: PinOpt = None,
    upstream: NameOpt = None,
    version: VersionOpt = None,
    pypi: PypiOpt = None,
    package_root: PackageRootOpt = None,
    description: DescriptionOpt = None,
    source: options.SourceOpt = None,
    json_output: options.JsonOpt = False,
    root: options.RootOpt = Path("."),
) -> int:
    from patchmgr.maintain.start import StartRequest, check_request, plan_start, write_start
    from patchmgr.render.maintain.start import render_start, start_json

    if not root.is_dir():
        raise UsageError(f"--root {root} is not a folder", "make the folder first, or run patchmgr init inside it")
    if not target:
        raise options.missing("init", "--target NAME", "name the target to start: --target main")
    if not git:
        raise options.missing("init", "--git URL", "give the upstream's URL: --git https://github.com/org/lib.git")
    if not pin:
        raise options.missing("init", "--pin REF", "give the tag, branch or commit to pin: --pin v1.2.0")
    request = StartRequest(target, git, pin, upstream, version, pypi, package_root, description)
    name = check_request(root, request)
    overrides = options.source_overrides(source)
    others = sorted(set(overrides) - {name})
    if others:
        raise UsageError(
            f"--source {others[0]}: the new target has no upstream {others[0]!r} (it has: {name})",
            f"name the upstream: --source {name}=PATH_OR_URL",
        )
    session = Session("init", root, json_output, new=True)
    with session.sources(overrides) as sources:
        outcome, writes = plan_start(session.project.root, request, name, sources)
    write_start(outcome, writes)
    return session.emit(0, start_json, render_start, outcome)
