"""patchmgr import: adopt a monolithic patch set as a pinned series of documented pieces."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from patchmgr.cli import options
from patchmgr.cli.session import Session
from patchmgr.model.errors import UsageError

PathsArg = Annotated[
    Optional[list[Path]],
    typer.Argument(
        help="series.conf (or its folder), a quilt series (debian/patches/series, or its folder), a per-version "
        "folder (<version>/<upstream>.patch), or patch files.",
        show_default=False,
    ),
]


def _pairs(option: str, values: list[str] | None, example: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for value in values or []:
        name, sep, rest = value.partition("=")
        if not sep or not name or not rest:
            raise UsageError(f"{option} {value!r} is not NAME=VALUE", f"for example {option} {example}")
        pairs[name] = rest
    return pairs


ImportUpstreamOpt = Annotated[
    Optional[str],
    typer.Option(
        "--upstream",
        "-u",
        help="The upstream of a single patch file (default: the file's name) or of a quilt series (default: a "
        "Debian package's source name).",
    ),
]
GitOpt = Annotated[
    Optional[list[str]],
    typer.Option(
        "--git", help="NAME=URL: the upstream's git URL for the manifest (default: the Dockerfile's git clone)."
    ),
]
PinOpt = Annotated[
    Optional[list[str]],
    typer.Option(
        "--pin",
        help="NAME=REF: the commit the patch belongs at, if known (default: the Dockerfile's git checkout, "
        "else found from the patch).",
    ),
]
DockerfileOpt = Annotated[
    Optional[Path],
    typer.Option(
        "--dockerfile",
        help="Read git URLs, pins and the patch files applied to each clone from it (ARG/ENV as docker build "
        "reads them); with no paths, import the patch files it applies.",
    ),
]
ScriptOpt = Annotated[
    Optional[Path],
    typer.Option(
        "--script",
        help="A build script that clones the upstreams and applies the patches (read as a shell reads it, run from "
        "its own folder; nothing is run); with no paths, import the patches it applies.",
    ),
]
CheckoutOpt = Annotated[
    Optional[list[str]],
    typer.Option(
        "--checkout",
        help="FOLDER=NAME[@REF]: a folder the recipe applies patches in that it does not clone (one its base image "
        "holds) is a checkout of upstream NAME at REF (its URL from --git NAME=URL).",
    ),
]
SearchOpt = Annotated[
    Optional[list[str]],
    typer.Option(
        "--search",
        help="NAME=REF: the branch whose line is searched first for the base (default: HEAD), before every "
        "branch and tag.",
    ),
]
SplitOpt = Annotated[
    str,
    typer.Option("--split", help="One piece per `file` (per diff of a file the patch changes twice) or per `hunk`."),
]
MapOpt = Annotated[
    Optional[Path],
    typer.Option(
        "--map",
        help='TOML file: topic = ["path", "path#N,M"], one piece per topic. A file the patch changes in several '
        "diffs: `path` takes all of them, and its hunks are numbered from 1 across its diffs in the patch's order.",
    ),
]
BuildArgOpt = Annotated[
    Optional[list[str]],
    typer.Option("--build-arg", help="NAME=VALUE: a Dockerfile ARG's value, as docker build --build-arg sets it."),
]
OnlyOpt = Annotated[
    Optional[list[str]], typer.Option("--only", help="NAME: import only this upstream of the patch set (repeatable).")
]
VersionOpt = Annotated[
    Optional[str],
    typer.Option(
        "--version",
        help="Of a per-version folder, the version to import (default: the one --dockerfile copies, else the highest).",
    ),
]


def command(
    paths: PathsArg = None,
    target: options.NeededTargetOpt = None,
    upstream: ImportUpstreamOpt = None,
    git: GitOpt = None,
    pin: PinOpt = None,
    dockerfile: DockerfileOpt = None,
    script: ScriptOpt = None,
    checkout: CheckoutOpt = None,
    search: SearchOpt = None,
    split: SplitOpt = "file",
    mapping: MapOpt = None,
    version: VersionOpt = None,
    build_arg: BuildArgOpt = None,
    only: OnlyOpt = None,
    dry_run: options.DryRunOpt = False,
    source: options.SourceOpt = None,
    json_output: options.JsonOpt = False,
    root: options.RootOpt = Path("."),
) -> int:
    from patchmgr.maintain.importing.dockerfile import Recipe, import_inputs
    from patchmgr.maintain.importing.plan import ImportOptions, finish_import, plan_import
    from patchmgr.maintain.importing.quilt import plan_quilt_import, quilt_series_file, read_quilt
    from patchmgr.maintain.importing.split import MODES, SplitMode, read_mapping
    from patchmgr.model.manifest import NAME
    from patchmgr.render.importing import import_json, render_import

    if not (root / "manifests").is_dir():
        raise UsageError(
            f"{root.resolve()} has no manifests/ folder",
            "make the project first (mkdir -p manifests patches) and import there, or pass --root DIR",
        )
    session = Session("import", root, json_output)
    if not target:
        raise options.missing("import", "--target NAME", "name the target to create or add to: --target ascend")
    if not NAME.fullmatch(target):
        raise UsageError(f"--target {target!r} cannot name a manifest", "use lower-case letters, digits, '.', '_', '-'")
    if split not in MODES:
        raise UsageError(f"--split {split!r} is not one of: {', '.join(MODES)}", "use --split file or --split hunk")
    if mapping is not None and split != "file":
        raise UsageError("--map and --split hunk both say how to split", "pick one")
    # read in this order: the first wrong option is the error
    mode, mapped = SplitMode(split), read_mapping(mapping) if mapping else None
    pairs = (
        _pairs("--git", git, "mbridge=https://..."),
        _pairs("--pin", pin, "mbridge=v0.1.0"),
        _pairs("--search", search, "mbridge=main"),
    )
    overrides = options.source_overrides(source)
    build_args = _pairs("--build-arg", build_arg, "PATCH_VERSION=latest")
    quilt = quilt_series_file(list(paths or [])) if dockerfile is None and script is None else None
    if quilt is not None:  # a quilt series: its patches kept whole, not split
        if mapping is not None or split != "file" or version or only:
            raise UsageError(
                "--split, --map, --version and --only go with a monolithic patch set; a quilt series is imported "
                "patch by patch as it is",
                "leave them out",
            )
        read = read_quilt(quilt, upstream)
        with session.sources(overrides) as sources:
            planned = plan_quilt_import(session.project, read, sources, ImportOptions(target, mode, None, *pairs))
        outcome = finish_import(session.project, planned, dry_run)
        return session.emit(0 if outcome.ok else 1, import_json, render_import, outcome)
    checkouts = _pairs("--checkout", checkout, "/vllm-workspace/vllm-ascend=vllm-ascend@v0.11.0")
    recipe = Recipe(dockerfile, script, build_args, checkouts)
    with session.sources(overrides) as sources:  # a recipe may copy a patch out of a clone it makes
        inputs = import_inputs(list(paths or []), recipe, upstream, version, only or [], sources)
        chosen = ImportOptions(target, mode, mapped, *pairs, inputs.declared, inputs.notes)
        planned = plan_import(session.project, inputs.monoliths, sources, chosen)
    outcome = finish_import(session.project, planned, dry_run)
    return session.emit(0 if outcome.ok else 1, import_json, render_import, outcome)
