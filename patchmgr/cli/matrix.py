"""patchmgr matrix: every patch at the pin, at each release tag of its upstream and at the branch tip."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from patchmgr.cli import options
from patchmgr.cli.session import Session
from patchmgr.model.errors import UsageError

MatrixUpstreamOpt = Annotated[
    Optional[list[str]],
    typer.Option("--upstream", "-u", help="Only this upstream (repeatable); default: every upstream of the target."),
]
RefsOpt = Annotated[
    Optional[str],
    typer.Option(
        "--refs",
        help="Columns: the tags matching this glob (e.g. 'v0.5.*'), pre-releases included; newer than the pin "
        "(or --since) unless --include-older.",
    ),
]
IncludeOlderOpt = Annotated[
    bool,
    typer.Option("--include-older", help="Also the tags older than the pin (or --since): columns stay in time order."),
]
SinceOpt = Annotated[
    Optional[str],
    typer.Option(
        "--since",
        help="Columns: the release tags (or --refs tags) newer than this tag (or not contained in this branch or "
        "commit); default: since the pin.",
    ),
]
# a str, not a Path: a Path drops the trailing "/" that says the name is a folder's
HtmlOpt = Annotated[Optional[str], typer.Option("--html", help="Also write the matrix as one self-contained page.")]


def command(
    target: options.NeededTargetOpt = None,
    upstream: MatrixUpstreamOpt = None,
    refs: RefsOpt = None,
    since: SinceOpt = None,
    include_older: IncludeOlderOpt = False,
    html: HtmlOpt = None,
    source: options.SourceOpt = None,
    smoke: options.SmokeAtRefOpt = False,
    json_output: options.JsonOpt = False,
    root: options.RootOpt = Path("."),
) -> int:
    session = Session("matrix", root, json_output)
    selected, overrides, only = session.sourced_target(target, source, upstream)
    if refs is not None and not refs.strip():
        raise UsageError("--refs needs a pattern", "for example --refs 'v0.*'")
    if html is not None:
        from patchmgr.io.files import check_output_file

        check_output_file(html, "--html")
    from patchmgr.history.matrix import build_matrices
    from patchmgr.history.releases import TagChoice
    from patchmgr.render.matrix import matrix_json, render_matrix

    ref_smoke = None
    with session.sources(overrides) as sources:
        matrices = build_matrices(session.project, selected, sources, only, TagChoice(refs, since, include_older))
        # with --smoke, at each upstream's verdict column (its newest release tag, or the tip with track = branch,
        # else the pin)
        if smoke:
            from patchmgr.cli.smoke import smoke_progress
            from patchmgr.smoke.at_ref import SmokeOptions, smoke_matrices

            at_ref = SmokeOptions(progress=smoke_progress(session, json_output))
            ref_smoke = smoke_matrices(session.project, selected, matrices, sources, at_ref)
    written = None
    if html is not None:
        from patchmgr.history.provenance import provenance
        from patchmgr.io.files import write_output
        from patchmgr.render.matrix_html import render_matrix_html

        page = render_matrix_html(matrices, selected.name, provenance(selected.path))
        if ref_smoke is not None:
            from patchmgr.render.smoke_ref import with_smoke_html

            page = with_smoke_html(page, ref_smoke)
        write_output(html, page.encode(), "--html")
        written = str(html)
    code = 0 if all(m.ok for m in matrices) and (ref_smoke is None or ref_smoke.ok) else 1
    if ref_smoke is not None:
        from patchmgr.render.smoke_ref import matrix_smoke_json, render_matrix_smoke

        return session.emit(code, matrix_smoke_json, render_matrix_smoke, matrices, selected.name, written, ref_smoke)
    return session.emit(code, matrix_json, render_matrix, matrices, selected.name, written)
