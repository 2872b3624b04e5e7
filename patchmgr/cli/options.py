"""The options the commands share, and the parsing and checking of their values.

A value that is wrong is a ``UsageError`` (exit 2) with the same wording whichever command got it.
Options that a command cannot run without say ``[required]`` in their help; patchmgr checks them
itself (not typer), so that a missing one gets patchmgr's own ``error:``/``hint:`` lines.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from patchmgr.model.errors import UsageError
from patchmgr.model.urls import mask_url

if TYPE_CHECKING:
    from patchmgr.model.manifest import Target

REQUIRED = " \\[required]"  # escaped: typer reads help text as rich markup

RootOpt = Annotated[Path, typer.Option("--root", help="Project root (holds manifests/ and patches/).")]
NeededTargetOpt = Annotated[
    Optional[str], typer.Option("--target", "-t", help="Target name (manifests/<target>.toml)." + REQUIRED)
]
AgainstOpt = Annotated[
    Optional[list[str]],
    typer.Option(
        "--against",
        help="NAME=REF: check upstream NAME at a branch, tag or commit (or, for an upstream "
        "with `pypi`, a release version) instead of its pin.",
    ),
]

SourceOpt = Annotated[
    Optional[list[str]],
    typer.Option(
        "--source",
        help="NAME=LOCATION: fetch upstream NAME from this URL or local repository instead. Set once: "
        "PATCHMGR_SOURCES='NAME=LOCATION ...', .patchmgr.local.toml or ~/.config/patchmgr/config.toml "
        "(their sources table).",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")]
PythonOpt = Annotated[
    Optional[str],
    typer.Option("--python", help="Interpreter of an installed environment to work on (instead of --into DIR)."),
]
ForceOpt = Annotated[
    bool,
    typer.Option(
        "--force", help="Proceed over local work that would be lost, after saving it (the output says where)."
    ),
]
UpstreamsOpt = Annotated[
    Optional[list[str]], typer.Option("--upstream", "-u", help="Restrict the run to this upstream (repeatable).")
]
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
SmokeAtRefOpt = Annotated[
    bool,
    typer.Option(
        "--smoke",
        help="Also run each patch's smoke tests at the ref, in a scratch checkout, with and without the patch: "
        "proven, upstream (by smoke: every test passes without it), partly upstream (some do), failed, or not "
        "proven, per patch.",
    ),
]


def missing(command: str, usage: str, hint: str) -> UsageError:
    """A required option left out, one wording for every command: ``--into is required: edit needs --into DIR``."""
    options = " or ".join(part.split()[0] for part in usage.split(" or "))
    return UsageError(f"{options} is required: {command} needs {usage}", hint)


def required_target(command: str, target: Optional[str], known: Callable[[], list[str]]) -> str:
    """``--target NAME``, given (a name ``Project.target`` then looks up); the hint names the ``known`` targets."""
    if not target:
        names = known()
        which = f"the project's targets: {', '.join(names)}" if names else "the project has no manifests/ yet"
        raise missing(command, "--target NAME", f"{which} (`patchmgr targets` lists them with their pins)")
    return target


def required_ref(command: str, to: Optional[str]) -> str:
    """``--to REF``, given."""
    if not to:
        raise missing(command, "--to REF", "give the branch, tag or commit to move to, e.g. --to v0.5.0")
    return to


def required_folder(command: str, option: str, path: Optional[Path], hint: str) -> Path:
    """A folder option a command cannot run without: given, and not naming something other than a folder."""
    if path is None:
        raise missing(command, f"{option} DIR", hint)
    folder_option(option, path)
    return path


Place = Path | str
"""Where a command works: ``--into DIR`` (a ``Path``: checkouts) or ``--python PATH`` (a ``str``: the interpreter of
an installed environment)."""


def one_place(command: str, into: Optional[Path], python: Optional[str]) -> Place:
    """``--into DIR`` or ``--python PATH``: exactly one of them, returned (``Place``)."""
    if into is None and python is None:
        raise missing(
            command, "--into DIR or --python PATH", f"for example: patchmgr {command} --target ascend --into build/"
        )
    if into is not None and python is not None:
        raise UsageError(f"{command} takes --into DIR or --python PATH, not both", "pick one")
    if into is not None:
        folder_option("--into", into)
        return into
    if not python:  # --python "": no interpreter named (it once fell through to --into and its None)
        raise UsageError(
            "--python is empty: it takes the path of an interpreter",
            f"for example: patchmgr {command} --target ascend --python .venv/bin/python",
        )
    return python


def folder_option(option: str, path: Optional[Path]) -> None:
    """A folder option naming something else is bad input, refused before anything reads or writes there."""
    if path is not None and (path.exists() or path.is_symlink()) and not path.is_dir():
        raise UsageError(f"{option} {path} is not a folder", f"give a folder for {option}")


class NamedOptions(dict):
    """``NAME=VALUE`` options by upstream name, remembering their option (``--source``, ``--against``).

    A name the chosen target lacks but another target of the project has is ignored with a note (the README's
    flags serve every target); a name no manifest has is a usage error (a typo)."""

    def __init__(self, option: str) -> None:
        super().__init__()
        self.option = option


def source_overrides(values: list[str] | None) -> dict[str, str]:
    """``--source NAME=LOCATION`` options as a mapping; a malformed one is a usage error."""
    from patchmgr.model.manifest import url_problem  # here: `patchmgr <command> --help` needs no manifest code

    overrides: dict[str, str] = NamedOptions("--source")
    for value in values or []:
        name, sep, location = value.partition("=")
        if not sep or not name or not location:
            raise UsageError(
                f"--source {value!r} is not NAME=LOCATION", "for example --source mindspeed=/srv/mirrors/MindSpeed"
            )
        problem = url_problem(location, from_command_line=True)
        if problem:
            raise UsageError(f"--source {mask_url(value)!r}: {problem}", "give a URL or a local path")
        overrides[name] = location
    return overrides


def against_refs(values: list[str] | None) -> dict[str, str]:
    """``--against NAME=REF`` options as a mapping; a malformed one is a usage error."""
    refs: dict[str, str] = NamedOptions("--against")
    for value in values or []:
        name, sep, ref = value.partition("=")
        if not sep or not name or not ref:
            raise UsageError(f"--against {value!r} is not NAME=REF", "for example --against mbridge=main")
        refs[name] = ref
    return refs


def require_upstreams(
    targets: list[Target],
    *option_maps: Mapping[str, str] | list[str] | tuple[str, ...],
    elsewhere: Callable[[], set[str]] = set,
) -> list[str]:
    """An option naming an upstream that no selected target has is a usage error, not a silent no-op.

    Except ``--source``/``--against`` (``NamedOptions``) naming an upstream that another target of the project
    has (``elsewhere()``: their names): a note says it is ignored (returned; ``for_targets`` leaves it out of
    the mapping the command uses). The mappings given are not changed."""
    known = {u.name for t in targets for u in t.upstreams}
    where = ", ".join(t.name for t in targets)
    notes: list[str] = []
    for names in option_maps:
        for name in list(names):
            if name in known:
                continue
            if isinstance(names, NamedOptions) and name in elsewhere():
                notes.append(f"{names.option} {name}: target {where} has no upstream {name}; ignored")
                continue
            raise UsageError(
                f"no upstream {name!r} in target {where} (it has: {', '.join(sorted(known))})",
                "use an upstream name from the manifest"
                + (
                    f" ({names.option} for an upstream of another target is ignored; no manifest names {name!r})"
                    if isinstance(names, NamedOptions)
                    else ""
                ),
            )
    return notes


def for_targets(targets: list[Target], options: Mapping[str, str]) -> dict[str, str]:
    """``options`` for the upstreams of ``targets`` only, as a new mapping: the names ``require_upstreams`` let
    through with a note (another target's upstreams) left out."""
    known = {u.name for t in targets for u in t.upstreams}
    return {name: value for name, value in options.items() if name in known}
