"""patchmgr edit: the upstream at its pin in DIR with each patch as one commit, to edit them with git;
with --onto REF the series moved onto a new upstream ref there, stopping where a person must resolve a conflict
(then --continue, --skip or --abort)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from patchmgr.cli import options
from patchmgr.cli.session import Session
from patchmgr.model.errors import UsageError

EditTargetOpt = Annotated[
    Optional[str],
    typer.Option(
        "--target",
        "-t",
        help="Target name (manifests/<target>.toml)." + options.REQUIRED + " (--continue, --skip and --abort "
        "read it from DIR)",
    ),
]
NewCheckoutOpt = Annotated[
    Optional[Path], typer.Option("--into", help="New folder for the checkout." + options.REQUIRED)
]
OntoOpt = Annotated[
    Optional[str],
    typer.Option(
        "--onto", help="Branch, tag or commit of the upstream to move the series onto (the pin moves on export)."
    ),
]
ContinueOpt = Annotated[
    bool,
    typer.Option(
        "--continue", help="After resolving and git add-ing a stopped patch in --into DIR: commit it, apply the rest."
    ),
]
SkipOpt = Annotated[
    bool, typer.Option("--skip", help="Leave the stopped patch out of the series (export removes it), apply the rest.")
]
AbortOpt = Annotated[
    bool,
    typer.Option(
        "--abort", help="Give up the move: DIR goes back to the series at the pin (resolved work kept on a branch)."
    ),
]


def command(
    target: EditTargetOpt = None,
    upstream: options.UpstreamOpt = None,
    into: NewCheckoutOpt = None,
    onto: OntoOpt = None,
    continue_: ContinueOpt = False,
    skip: SkipOpt = False,
    abort: AbortOpt = False,
    force: options.ForceOpt = False,
    source: options.SourceOpt = None,
    json_output: options.JsonOpt = False,
    root: options.RootOpt = Path("."),
) -> int:
    from patchmgr.render.maintain import edit_json, onto_json, render_edit, render_onto

    session = Session("edit", root, json_output)
    resume = [name for name, on in (("continue", continue_), ("skip", skip), ("abort", abort)) if on]
    if len(resume) > 1 or (resume and onto):
        given = [f"--{name}" for name in resume] + (["--onto"] if onto else [])
        raise UsageError(f"{' and '.join(given)} do not go together", "give one of --onto, --continue, --skip, --abort")
    if resume:
        into = options.required_folder("edit", "--into", into, "give the folder that patchmgr edit --onto made")
        return _resume(session, target, upstream, into, resume[0])
    selected, upstream, overrides = session.sourced_upstream(target, upstream, source)
    into = options.required_folder("edit", "--into", into, "give a new folder for the checkout")
    with session.sources(overrides) as sources:
        from patchmgr.maintain.roundtrip import EditRequest, edit_checkout, edit_onto

        request = EditRequest(session.project, selected, upstream, sources, into, force)
        if onto:
            moved = edit_onto(request, onto)
            return session.emit(0 if moved.finished and moved.guards_hold else 1, onto_json, render_onto, moved)
        outcome = edit_checkout(request)
    return session.emit(0, edit_json, render_edit, outcome)


def _resume(session: Session, target: Optional[str], upstream: Optional[str], into: Path, action: str) -> int:
    from patchmgr.maintain.onto_resume import ResumeAction, resume_onto
    from patchmgr.render.maintain import onto_json, render_onto

    moved = resume_onto(session.project, into, ResumeAction(action), target, upstream)
    return session.emit(0 if moved.finished and moved.guards_hold else 1, onto_json, render_onto, moved)
