"""patchmgr export: the commits of an edit checkout back as patch files, and the series updated; or, with
``--format series --into DIR``, a target written as the old image-repository layout."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from patchmgr.cli import options
from patchmgr.cli.session import Session
from patchmgr.model.errors import UsageError

FORMATS = ("patches", "series")
FormatOpt = Annotated[
    str,
    typer.Option(
        "--format",
        help="patches: the commits of an edit checkout (--from) back as the project's patch files; series: the "
        "target as an image repository keeps it, in --into DIR: one monolithic patch per upstream (git diff of "
        "its series at the pin), series.conf, the pins as Dockerfile ARG lines, and what import needs to give "
        "the patches back.",
    ),
]
IntoOpt = Annotated[
    Optional[Path], typer.Option("--into", help="With --format series: the folder to write (new or empty).")
]
ReplaceOpt = Annotated[
    bool,
    typer.Option(
        "--force", help="With --format series: write into a folder that is not empty, replacing only export's files."
    ),
]
ExportUpstreamOpt = Annotated[
    Optional[str],
    typer.Option(
        "--upstream",
        "-u",
        help="The upstream, by its name in the manifest (required with --from; with --format "
        "series: only this upstream, default all).",
    ),
]
EditCheckoutOpt = Annotated[
    Optional[Path],
    typer.Option("--from", help="The folder that patchmgr edit made (required, but with --format series)."),
]
VersionOpt = Annotated[
    Optional[str],
    typer.Option(
        "--version",
        help="From an edit --onto checkout: the upstream's version at the new ref (default: from a "
        "tag such as v0.5.0).",
    ),
]


def command(
    target: options.NeededTargetOpt = None,
    upstream: ExportUpstreamOpt = None,
    from_dir: EditCheckoutOpt = None,
    version: VersionOpt = None,
    form: FormatOpt = "patches",
    into: IntoOpt = None,
    force: ReplaceOpt = False,
    source: options.SourceOpt = None,
    json_output: options.JsonOpt = False,
    root: options.RootOpt = Path("."),
) -> int:
    if form not in FORMATS:
        raise UsageError(
            f"--format {form!r} is not one of: {', '.join(FORMATS)}", "use --format series or leave it out"
        )
    if form == "series":
        return _series(target, upstream, from_dir, version, into, force, source, json_output, root)
    if into is not None or force or source:
        given = "--into" if into is not None else "--force" if force else "--source"
        raise UsageError(
            f"{given} goes with --format series; nothing was written",
            "export an edit checkout with --from DIR, or write the series layout with --format series --into DIR",
        )
    from patchmgr.maintain.roundtrip import export_checkout
    from patchmgr.render.maintain import export_json, render_export

    session = Session("export", root, json_output)
    selected, upstream = session.upstream_target(target, upstream)
    from_dir = options.required_folder("export", "--from", from_dir, "give the folder that `patchmgr edit --into` made")
    outcome = export_checkout(session.project, selected, upstream, from_dir, version)
    return session.emit(0 if outcome.guards_hold else 1, export_json, render_export, outcome)


def _series(
    target: str | None,
    upstream: str | None,
    from_dir: Path | None,
    version: str | None,
    into: Path | None,
    force: bool,
    source: list[str] | None,
    json_output: bool,
    root: Path,
) -> int:
    from patchmgr.maintain.series_export import export_series
    from patchmgr.render.maintain import render_series_export, series_export_json

    if from_dir is not None or version is not None:
        raise UsageError(
            f"{'--from' if from_dir is not None else '--version'} goes with an edit checkout, not --format series; "
            "nothing was written",
            "leave it out: --format series writes the target at its pins",
        )
    session = Session("export", root, json_output)
    selected, overrides, only = session.sourced_target(target, source, [upstream] if upstream else None)
    into = options.required_folder("export", "--into", into, "give the folder to write the series layout into")
    with session.sources(overrides) as sources:
        outcome = export_series(session.project, selected, sources, into, only, force)
    return session.emit(0, series_export_json, render_series_export, outcome)
