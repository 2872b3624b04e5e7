"""patchmgr export: the commits of an edit checkout back as patch files, and the series updated; or, with
``--format series --into DIR``, a target written as the old image-repository layout."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from patchmgr.cli import options, optspec
from patchmgr.cli.optspec import Kind, Option
from patchmgr.cli.session import Session
from patchmgr.model.errors import UsageError

if TYPE_CHECKING:
    from patchmgr.model.manifest import Target
    from patchmgr.smoke.at_ref import RefSmoke

FORMATS = ("patches", "series", "quilt")
FORMAT = Option(
    "form",
    ("--format",),
    Kind.VALUE,
    "patches: the commits of an edit checkout (--from) back as the project's patch files; series: the target as an "
    "image repository keeps it, in --into DIR: one monolithic patch per upstream (git diff of its series at the "
    "pin), series.conf, the pins as Dockerfile ARG lines, and what import needs to give the patches back.",
    default="patches",
)
OPTIONS = (
    optspec.NEEDED_TARGET,
    Option(
        "upstream",
        ("--upstream", "-u"),
        Kind.VALUE,
        "The upstream, by its name in the manifest (required with --from; with --format series: only this "
        "upstream, default all).",
    ),
    Option(
        "from_dir",
        ("--from",),
        Kind.VALUE,
        "The folder that patchmgr edit made (required, but with --format series or quilt).",
        Path,
    ),
    Option(
        "version",
        ("--version",),
        Kind.VALUE,
        "From an edit --onto checkout: the upstream's version at the new ref (default: from a tag such as v0.5.0).",
    ),
    FORMAT,
    Option("into", ("--into",), Kind.VALUE, "With --format series or quilt: the folder to write (new or empty).", Path),
    Option(
        "force",
        ("--force",),
        Kind.FLAG,
        "With --format series or quilt: write into a folder that is not empty, replacing only export's files.",
        default=False,
    ),
    optspec.OWN_COPY,
    optspec.ALSO_TARGET,
    optspec.SOURCE,
    optspec.SMOKE_AT_REF,
    optspec.JSON,
    optspec.ROOT,
)
"""The options of ``patchmgr export``, in the order its help lists them; ``command`` takes them by ``param``."""


def command(
    *,
    target: str | None,
    upstream: str | None,
    from_dir: Path | None,
    version: str | None,
    form: str,
    into: Path | None,
    force: bool,
    own_copy: bool,
    also_target: list[str] | None,
    source: list[str] | None,
    smoke: bool,
    json_output: bool,
    root: Path,
) -> int:
    if smoke and form != "patches":
        raise UsageError(
            "--smoke goes with an export of an edit checkout (--from DIR); nothing was written",
            "run patchmgr status --against or --newest-release with --smoke for a target's refs",
        )
    if form not in FORMATS:
        raise UsageError(
            f"--format {form!r} is not one of: {', '.join(FORMATS)}", "use --format series or quilt, or leave it out"
        )
    if form in ("series", "quilt") and (own_copy or also_target):
        raise UsageError(
            f"{'--own-copy' if own_copy else '--also-target'} goes with an export of an edit checkout (--from DIR); "
            "--format series writes no patch file of the project; nothing was written",
            "leave it out",
        )
    if form == "quilt":
        return _quilt(target, upstream, from_dir, version, into, force, source, json_output, root)
    if form == "series":
        return _series(target, upstream, from_dir, version, into, force, source, json_output, root)
    if into is not None or force or source:
        given = "--into" if into is not None else "--force" if force else "--source"
        raise UsageError(
            f"{given} goes with --format series; nothing was written",
            "export an edit checkout with --from DIR, or write the series layout with --format series --into DIR",
        )
    from patchmgr.maintain.roundtrip import export_checkout
    from patchmgr.maintain.shared_files import Sharing
    from patchmgr.render.maintain import export_json, render_export

    session = Session("export", root, json_output)
    selected, upstream = session.upstream_target(target, upstream)
    from_dir = options.required_folder("export", "--from", from_dir, "give the folder that `patchmgr edit --into` made")
    ref_smoke = _smoke_checkout(session, selected, upstream, from_dir, json_output) if smoke else None
    if ref_smoke is not None and not ref_smoke.ok:  # a patch fails its tests in the checkout: the pin stays
        from patchmgr.render.smoke_ref import ref_smoke_json, render_refused_export

        return session.emit(
            1, lambda s: {"action": "refused", "smoke": ref_smoke_json(s)}, render_refused_export, ref_smoke
        )
    sharing = Sharing.given(own_copy, also_target)
    outcome = export_checkout(session.project, selected, upstream, from_dir, version, sharing)
    if ref_smoke is not None:
        from patchmgr.render.smoke_ref import export_smoke_json, render_export_smoke

        return session.emit(0 if outcome.guards_hold else 1, export_smoke_json, render_export_smoke, outcome, ref_smoke)
    return session.emit(0 if outcome.guards_hold else 1, export_json, render_export, outcome)


def _smoke_checkout(
    session: Session, target: Target, upstream: str, folder: Path, json_output: bool
) -> RefSmoke | None:
    """The smoke verdicts of the edit checkout's patches at its ref, before anything is written (None while its move
    is unfinished: export refuses that and says why)."""
    from patchmgr.cli.smoke import smoke_progress
    from patchmgr.maintain.edit_record import checkout_base
    from patchmgr.smoke.at_ref import SmokeOptions, smoke_checkout

    base = checkout_base(folder.resolve())
    if base is None:
        return None
    ref, commit, left_out = base
    options_ = SmokeOptions(progress=smoke_progress(session, json_output))
    at = (ref, commit)
    upstream_ = target.upstream(upstream)
    with session.sources({}) as sources:  # the pin, for a test that passes in the checkout without its patch
        return smoke_checkout(session.project, target, upstream_, folder.resolve(), at, left_out, sources, options_)


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

    refuse_edit_options("series", "the target at its pins", from_dir, version)
    session = Session("export", root, json_output)
    selected, overrides, only = session.sourced_target(target, source, [upstream] if upstream else None)
    into = options.required_folder("export", "--into", into, "give the folder to write the series layout into")
    with session.sources(overrides) as sources:
        outcome = export_series(session.project, selected, sources, into, only, force)
    return session.emit(0, series_export_json, render_series_export, outcome)


def _quilt(
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
    from patchmgr.maintain.quilt_export import export_quilt
    from patchmgr.render.maintain import quilt_export_json, render_quilt_export

    refuse_edit_options("quilt", "the series at its pin", from_dir, version)
    session = Session("export", root, json_output)
    selected, overrides, _ = session.sourced_target(target, source, [upstream] if upstream else None)
    into = options.required_folder("export", "--into", into, "give the folder to write the quilt series into")
    with session.sources(overrides) as sources:
        outcome = export_quilt(session.project, selected, sources, into, upstream, force)
    return session.emit(0, quilt_export_json, render_quilt_export, outcome)


def refuse_edit_options(form: str, writes: str, from_dir: Path | None, version: str | None) -> None:
    """``--from`` and ``--version`` name an edit checkout, which ``--format FORM`` (writing ``writes``) has none of."""
    if from_dir is not None or version is not None:
        raise UsageError(
            f"{'--from' if from_dir is not None else '--version'} goes with an edit checkout, not --format {form}; "
            "nothing was written",
            f"leave it out: --format {form} writes {writes}",
        )
