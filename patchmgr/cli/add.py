"""patchmgr add: a change (commits of an edit checkout or a clone, or a diff file) as a documented patch at the end
of an upstream's series."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from patchmgr.cli import options
from patchmgr.cli.session import Session
from patchmgr.model.errors import UsageError

PatchIdArg = Annotated[
    Optional[str], typer.Argument(help="The new patch's id: patches/<upstream>/<id>.patch.", show_default=False)
]
FromEditOpt = Annotated[
    Optional[Path],
    typer.Option("--from-edit", help="An edit checkout: its commits on top of the series become the patch."),
]
CommitOpt = Annotated[
    Optional[str],
    typer.Option("--commit", help="A commit (its change against its parent) or a range A..B of the clone --repo DIR."),
]
RepoOpt = Annotated[
    Optional[Path], typer.Option("--repo", help="The clone of the upstream that holds --commit (default: .).")
]
DiffOpt = Annotated[
    Optional[Path], typer.Option("--diff", help="A diff file (git diff, diff -u, or a patch mail) to add.")
]
OriginOpt = Annotated[
    Optional[str],
    typer.Option("--origin", help="The DEP-3 Origin field (default: the commit or range; a diff file's own)."),
]
SmokeTestOpt = Annotated[
    Optional[str],
    typer.Option(
        "--smoke-test",
        help="An existing smoke test to name in Smoke-Test (default: tests/smoke/<upstream>/test_<id>.py, "
        "written as a stub that fails until you write it).",
    ),
]


def command(
    patch_id: PatchIdArg = None,
    target: options.NeededTargetOpt = None,
    upstream: options.UpstreamOpt = None,
    from_edit: FromEditOpt = None,
    commit: CommitOpt = None,
    repo: RepoOpt = None,
    diff: DiffOpt = None,
    origin: OriginOpt = None,
    smoke_test: SmokeTestOpt = None,
    source: options.SourceOpt = None,
    json_output: options.JsonOpt = False,
    root: options.RootOpt = Path("."),
) -> int:
    from patchmgr.maintain import add_change
    from patchmgr.maintain.add_patch import AddRequest, check_request, plan_add, write_add
    from patchmgr.render.maintain.start import add_json, render_add

    session = Session("add", root, json_output)
    if not patch_id:
        raise UsageError("add needs the new patch's id", "for example: patchmgr add fix-typo --target main ...")
    given = options.source_overrides(source)
    selected, upstream = session.upstream_target(target, upstream, given)
    ways = [name for name, value in (("--from-edit", from_edit), ("--commit", commit), ("--diff", diff)) if value]
    if len(ways) != 1:
        raise UsageError(
            "add takes one of --from-edit DIR, --commit REV, --diff FILE"
            + (f", not {' and '.join(ways)}" if ways else ""),
            "--from-edit DIR (an edit checkout), --commit REV[..REV] --repo CLONE, or --diff FILE",
        )
    if repo is not None and commit is None:
        raise UsageError("--repo goes with --commit", "give --commit REV --repo CLONE")
    request = AddRequest(selected, upstream, patch_id, origin, smoke_test)
    check_request(session.project, request)
    if from_edit is not None:
        options.folder_option("--from-edit", from_edit)
        change = add_change.from_edit(from_edit.resolve(), selected, upstream)
    elif commit is not None:
        change = add_change.from_commits((repo or Path(".")).resolve(), commit)
    else:
        assert diff is not None
        change = add_change.from_diff(diff)
    if change.is_empty:
        from patchmgr.render.maintain.start import render_skipped, skipped_json

        return session.emit(0, skipped_json, render_skipped, add_change.empty_commits_note(change.skipped))
    with session.sources(options.for_targets([selected], given)) as sources:
        outcome, writes = plan_add(session.project, request, change, sources)
    write_add(session.project, outcome, writes, change.checkout)
    return session.emit(0, add_json, render_add, outcome)
