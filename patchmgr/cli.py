"""The command line: parse options, call the core, render its values. Nothing else.

Exit codes: 0 everything applies (clean or offset) / verified; 1 something needs
attention (another state, an unavailable upstream, a failed verify or lint);
2 bad input or usage.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from patchmgr.errors import PatchmgrError, UsageError
from patchmgr.project import Project

if TYPE_CHECKING:
    from rich.console import Console

    from patchmgr.installed import EnvOutcome
    from patchmgr.manifest import Target
    from patchmgr.store import Store

# Each command imports the core modules it uses when it runs: a process that runs
# one command should not load GitPython, rich tables, PyPI and history code for all
# of them (benchmarks/RESULTS.md has the start-up cost that this keeps down).

EXIT_CODES = "Exit codes: 0 fine; 1 the check ran and found trouble; 2 bad input or usage."

app = typer.Typer(
    help="Keep .patch files against pinned upstream commits: check, apply, verify. " + EXIT_CODES,
    no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

RootOpt = Annotated[Path, typer.Option("--root", help="Project root (holds manifests/ and patches/).")]
TargetOpt = Annotated[Optional[str], typer.Option("--target", "-t", help="Target name (manifests/<target>.toml).")]
SourceOpt = Annotated[Optional[list[str]], typer.Option(
    "--source", help="NAME=LOCATION: fetch upstream NAME from this URL or local repository instead.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")]
PythonOpt = Annotated[Optional[str], typer.Option(
    "--python", help="Interpreter of an installed environment to work on (instead of --into checkouts).")]
ForceOpt = Annotated[bool, typer.Option(
    "--force", help="Proceed over local work that would be lost, after saving it (the output says where).")]
UpstreamOpt = Annotated[Optional[list[str]], typer.Option(
    "--upstream", "-u", help="Restrict the run to this upstream (repeatable).")]


def _console(stderr: bool) -> Console:
    """Every console the CLI prints through: markup off, so no user-controlled text (a path such as
    ``out/x[/]``, a header value) is ever read as rich markup; styles come only from ``style=`` and
    ``Text``. Off a terminal (a pipe, a CI log) lines are not cut at 80 columns."""
    from rich.console import Console
    probe = Console(stderr=stderr)
    width = None if probe.is_terminal else 4000
    return Console(stderr=stderr, markup=False, highlight=False, soft_wrap=True, width=width)


def _out(json_mode: bool) -> Console:
    return _console(stderr=json_mode)


def _store(json_mode: bool) -> Store:
    from patchmgr.store import Store
    err = _console(stderr=True)
    show = err.is_terminal and not json_mode
    return Store(progress=(lambda message: err.print(f"… {message}", style="dim")) if show else None)


def _required_target(target: Optional[str]) -> str:
    if not target:
        raise UsageError("--target is required here", "name a target: patchmgr status lists them")
    return target


@app.command(help="Classify every patch of a target at its pins (or --against refs). " + EXIT_CODES)
def status(
    target: TargetOpt = None,
    against: Annotated[Optional[list[str]], typer.Option(
        "--against", help="NAME=REF: check upstream NAME at a branch, tag or commit (or, for an upstream "
        "with `pypi`, a release version) instead of its pin.")] = None,
    upstream: UpstreamOpt = None,
    python: PythonOpt = None,
    source: SourceOpt = None,
    json_output: JsonOpt = False,
    root: RootOpt = Path("."),
) -> int:
    from patchmgr import report
    from patchmgr.checking import check_target, require_upstreams
    from patchmgr.sources import parse_against, parse_source_overrides
    project = Project.at(root)
    overrides, refs = parse_source_overrides(source), parse_against(against)
    targets = project.targets(target)
    if not targets:
        raise UsageError(f"{project.manifests_dir} holds no manifests", "add manifests/<target>.toml")
    require_upstreams(targets, overrides, refs, {name: "" for name in upstream or ()})
    if python and refs:
        raise UsageError("--python checks the installed files; it cannot be combined with --against",
                         "drop one of the two")
    store = _store(json_output)
    try:
        if python:
            from patchmgr.installed import check_environment
            statuses = [check_environment(project, t, store, overrides, python, upstream or ())[0] for t in targets]
        else:
            statuses = [check_target(project, t, store, overrides, refs, upstream or ()) for t in targets]
    finally:
        store.close()
    unlisted = project.unlisted_patches(targets if not target else project.targets())
    for status_ in statuses:
        status_.warnings += [f"{p.relative_to(project.root)} is listed by no manifest" for p in unlisted]
    if json_output:
        print(report.status_json(statuses, single=bool(target)))
    else:
        report.render_status(_out(False), statuses)
    return 0 if all(s.ok for s in statuses) else 1


@app.command(help="Check out each upstream at its pin under DIR and apply the series, all or nothing. "
             + EXIT_CODES)
def apply(
    target: TargetOpt = None,
    into: Annotated[Optional[Path], typer.Option(
        "--into", help="Folder that receives one checkout per upstream.")] = None,
    python: PythonOpt = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Check everything, write nothing.")] = False,
    force: ForceOpt = False,
    upstream: UpstreamOpt = None,
    source: SourceOpt = None,
    json_output: JsonOpt = False,
    root: RootOpt = Path("."),
) -> int:
    from patchmgr import report
    from patchmgr.checking import require_upstreams
    from patchmgr.sources import parse_source_overrides
    project = Project.at(root)
    _one_place("apply", into, python)
    selected = project.target(_required_target(target))
    overrides = parse_source_overrides(source)
    require_upstreams([selected], overrides, {name: "" for name in upstream or ()})
    store = _store(json_output)
    try:
        if python:
            from patchmgr.installed import apply_environment
            env_outcome = apply_environment(project, selected, store, overrides, python, upstream or (), dry_run,
                                            force)
        else:
            from patchmgr.checkout import apply_into
            outcome = apply_into(project, selected, store, overrides, into, dry_run, upstream or (), force)
    finally:
        store.close()
    if python:
        return _render_env(env_outcome, json_output)
    _emit(json_output, report.apply_json, report.render_apply, outcome)
    return 0 if outcome.ok else 1


@app.command(help="Prove that DIR holds exactly the pinned upstreams with exactly the target's patches. "
             + EXIT_CODES)
def verify(
    target: TargetOpt = None,
    into: Annotated[Optional[Path], typer.Option("--into", help="Folder that apply wrote.")] = None,
    python: PythonOpt = None,
    upstream: UpstreamOpt = None,
    json_output: JsonOpt = False,
    root: RootOpt = Path("."),
) -> int:
    from patchmgr import report
    from patchmgr.checking import require_upstreams
    project = Project.at(root)
    _one_place("verify", into, python)
    selected = project.target(_required_target(target))
    require_upstreams([selected], {name: "" for name in upstream or ()})
    if python:
        from patchmgr.installed import verify_environment
        return _render_env(verify_environment(project, selected, python, upstream or ()), json_output)
    from patchmgr.checkout import verify_into
    outcome = verify_into(project, selected, into, upstream or ())
    _emit(json_output, report.verify_json, report.render_verify, outcome)
    return 0 if outcome.ok else 1


@app.command(help="Check manifests and patch files: well-formed, documented (DEP-3), all listed. "
             + EXIT_CODES)
def lint(json_output: JsonOpt = False, root: RootOpt = Path(".")) -> int:
    from patchmgr import report
    from patchmgr.lint import lint_project
    project = Project.at(root)
    problems, checked = lint_project(project)
    _emit(json_output, report.lint_json, report.render_lint, problems, checked)
    return 1 if problems else 0


# -- commands: smoke, installed environments (lead) --
@app.command(help="Run each patch's smoke tests against the upstream code in DIR; exit 0 only when every patch is "
             "proven by tests that ran (--unpatched: against the pinned upstream without the patches, which must "
             "fail). " + EXIT_CODES)
def smoke(
    target: TargetOpt = None,
    into: Annotated[Optional[Path], typer.Option("--into", help="Folder that apply wrote.")] = None,
    device: Annotated[str, typer.Option("--device", help="auto, cpu, cuda or npu.")] = "auto",
    unpatched: Annotated[bool, typer.Option(
        "--unpatched", help="Run against the pinned upstream without the patches; exit 0 only if every "
        "patch's tests fail there by assertion (each detects its bug).")] = False,
    upstream: UpstreamOpt = None,
    python: PythonOpt = None,
    json_output: JsonOpt = False,
    root: RootOpt = Path("."),
) -> int:
    from patchmgr import report
    from patchmgr.checking import require_upstreams
    from patchmgr.smoke import run_smoke
    project = Project.at(root)
    _one_place("smoke", into, python)
    selected = project.target(_required_target(target))
    require_upstreams([selected], {name: "" for name in upstream or ()})
    only = upstream or ()
    if python:
        from patchmgr.installed import environment_trees
        trees = environment_trees(selected, python, only)
    else:
        from patchmgr.smoke import checkout_trees
        trees = checkout_trees(selected, into, only)
    result = run_smoke(project, selected, trees, device, unpatched, python)
    _emit(json_output, report.smoke_json, report.render_smoke, result)
    return 0 if result.ok else 1



@app.command(help="Fill the cache with each upstream at its pin (every file of the commit, or the pinned "
             "release), so a later apply needs no network: the download layer of an image build. " + EXIT_CODES)
def fetch(
    target: TargetOpt = None,
    upstream: UpstreamOpt = None,
    source: SourceOpt = None,
    json_output: JsonOpt = False,
    root: RootOpt = Path("."),
) -> int:
    from patchmgr import report
    from patchmgr.checking import require_upstreams
    from patchmgr.sources import fetch_upstream, parse_source_overrides
    project = Project.at(root)
    selected = project.target(_required_target(target))
    overrides = parse_source_overrides(source)
    require_upstreams([selected], overrides, {name: "" for name in upstream or ()})
    store = _store(json_output)
    fetched: dict[str, dict] = {}
    try:
        for entry in selected.upstreams:
            if upstream and entry.name not in upstream:
                continue
            try:
                where, absent = fetch_upstream(store, entry, overrides)
                fetched[entry.name] = {"ok": True, "source": where, "absent": absent}
            except PatchmgrError as exc:
                fetched[entry.name] = {"ok": False, "error": exc.message}
    finally:
        store.close()
    _emit(json_output, report.fetch_json, report.render_fetch, selected.name, fetched)
    return 0 if all(f["ok"] for f in fetched.values()) else 1


@app.command(help="Put back the original bytes of every file `apply --python` changed, and the original "
             "RECORD. " + EXIT_CODES)
def revert(
    target: TargetOpt = None,
    python: PythonOpt = None,
    force: ForceOpt = False,
    upstream: UpstreamOpt = None,
    json_output: JsonOpt = False,
    root: RootOpt = Path("."),
) -> int:
    from patchmgr.checking import require_upstreams
    from patchmgr.installed import revert_environment
    project = Project.at(root)
    if not python:
        raise UsageError("revert needs --python PATH",
                         "a checkout made with --into is reverted by removing it: rm -r DIR")
    selected = project.target(_required_target(target))
    require_upstreams([selected], {name: "" for name in upstream or ()})
    return _render_env(revert_environment(selected, python, upstream or (), force), json_output)


def _emit(json_output: bool, as_json, render, *values) -> None:
    """One JSON document on stdout, or the rich rendering for people."""
    if json_output:
        print(as_json(*values))
    else:
        render(_out(False), *values)


def _one_place(verb: str, into: Optional[Path], python: Optional[str]) -> None:
    if into is None and python is None:
        raise UsageError(f"{verb} needs --into DIR or --python PATH",
                         f"for example: patchmgr {verb} --target ascend --into build/")
    if into is not None and python is not None:
        raise UsageError(f"{verb} takes --into DIR or --python PATH, not both", "pick one")
    _folder_option("--into", into)


def _folder_option(option: str, path: Optional[Path]) -> None:
    """A folder option naming something else is bad input, refused before anything reads or writes there."""
    if path is not None and (path.exists() or path.is_symlink()) and not path.is_dir():
        raise UsageError(f"{option} {path} is not a folder", f"give a folder for {option}")


def _render_env(outcome: EnvOutcome, json_output: bool) -> int:
    from patchmgr import report
    _emit(json_output, report.env_json, report.render_env, outcome)
    return 0 if outcome.ok else 1


# -- commands: bisect, refresh, bump, edit, export (issue 6) --
NameOpt = Annotated[Optional[str], typer.Option("--upstream", "-u", help="The upstream, by its name in the manifest.")]
ToOpt = Annotated[Optional[str], typer.Option("--to", help="Branch, tag or commit of the upstream to go to.")]
AllowThreeWayOpt = Annotated[bool, typer.Option(
    "--allow-three-way", help="Also rewrite patches that need fuzz or a 3-way merge, after showing old and new.")]


def _upstream_of(project: Project, target: Optional[str], upstream: Optional[str],
                 overrides: dict[str, str]) -> Target:
    from patchmgr.checking import require_upstreams
    selected = project.target(_required_target(target))
    if not upstream:
        raise UsageError("--upstream is required here",
                         f"name one of: {', '.join(u.name for u in selected.upstreams)}")
    selected.upstream(upstream)
    require_upstreams([selected], overrides)
    return selected


def _required_ref(to: Optional[str]) -> str:
    if not to:
        raise UsageError("--to is required here", "give the branch, tag or commit to move to, e.g. --to v0.5.0")
    return to


@app.command(help="Name the upstream commit between the pin and --to where each patch stops applying, with its "
             "state there and its pull request; no checkout. " + EXIT_CODES)
def bisect(
    target: TargetOpt = None,
    upstream: NameOpt = None,
    to: ToOpt = None,
    patch: Annotated[Optional[list[str]], typer.Option(
        "--patch", help="Only this patch, whatever its state at --to (repeatable).")] = None,
    source: SourceOpt = None,
    json_output: JsonOpt = False,
    root: RootOpt = Path("."),
) -> int:
    from patchmgr import report
    from patchmgr.history import bisect_upstream
    from patchmgr.sources import parse_source_overrides
    project, overrides = Project.at(root), parse_source_overrides(source)
    selected = _upstream_of(project, target, upstream, overrides)
    store = _store(json_output)
    try:
        result = bisect_upstream(project, selected.upstream(upstream), store, overrides, _required_ref(to),
                                 patch or ())
    finally:
        store.close()
    _emit(json_output, report.bisect_json, report.render_bisect, result)
    return 0 if result.ok else 1


@app.command(help="Rewrite the patches that apply with offsets at --to so they apply exactly there, keeping "
             "their messages; refuses fuzz and 3-way unless allowed, and conflicts. " + EXIT_CODES)
def refresh(
    target: TargetOpt = None,
    upstream: NameOpt = None,
    to: ToOpt = None,
    allow_three_way: AllowThreeWayOpt = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would change, write nothing.")] = False,
    source: SourceOpt = None,
    root: RootOpt = Path("."),
) -> int:
    from patchmgr import report
    from patchmgr.refresh import plan_refresh, write_refresh
    from patchmgr.sources import parse_source_overrides
    project, overrides = Project.at(root), parse_source_overrides(source)
    selected = _upstream_of(project, target, upstream, overrides)
    store = _store(False)
    try:
        plan = plan_refresh(project, selected.upstream(upstream), store, overrides, _required_ref(to),
                            allow_three_way, selected.name)
    finally:
        store.close()
    report.render_interdiffs(_out(False), plan)
    if plan.ok and not dry_run:
        write_refresh(plan)
    report.render_refresh(_out(False), plan, dry_run)
    return 0 if plan.ok else 1


@app.command(help="Refresh the patches at --to, then move the pin (and version) there; drops patches that are "
             "upstream unless --keep; refuses while a patch is conflict or missing. " + EXIT_CODES)
def bump(
    target: TargetOpt = None,
    upstream: NameOpt = None,
    to: ToOpt = None,
    keep: Annotated[bool, typer.Option("--keep", help="Keep patches that are already upstream.")] = False,
    allow_three_way: AllowThreeWayOpt = False,
    version: Annotated[Optional[str], typer.Option(
        "--version", help="The upstream's version at --to (default: from a tag such as v0.5.0).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would change, write nothing.")] = False,
    source: SourceOpt = None,
    root: RootOpt = Path("."),
) -> int:
    from patchmgr import report
    from patchmgr.bump import plan_bump, write_bump
    from patchmgr.sources import parse_source_overrides
    project, overrides = Project.at(root), parse_source_overrides(source)
    selected = _upstream_of(project, target, upstream, overrides)
    store = _store(False)
    try:
        outcome = plan_bump(project, selected, upstream, store, overrides, _required_ref(to), keep,
                            allow_three_way, version)
    finally:
        store.close()
    report.render_interdiffs(_out(False), outcome.plan)
    if outcome.action == "planned" and not dry_run:
        write_bump(outcome)
    report.render_bump(_out(False), outcome)
    return 0 if outcome.ok else 1


@app.command(help="Check the upstream out at its pin in DIR with each patch as one commit, to edit them with git; "
             "write them back with export. " + EXIT_CODES)
def edit(
    target: TargetOpt = None,
    upstream: NameOpt = None,
    into: Annotated[Optional[Path], typer.Option("--into", help="New folder for the checkout.")] = None,
    force: ForceOpt = False,
    source: SourceOpt = None,
    root: RootOpt = Path("."),
) -> int:
    from patchmgr import report
    from patchmgr.roundtrip import edit_checkout
    from patchmgr.sources import parse_source_overrides
    project, overrides = Project.at(root), parse_source_overrides(source)
    selected = _upstream_of(project, target, upstream, overrides)
    if into is None:
        raise UsageError("edit needs --into DIR", "give a new folder for the checkout")
    _folder_option("--into", into)
    store = _store(False)
    try:
        outcome = edit_checkout(project, selected, upstream, store, overrides, into, force)
    finally:
        store.close()
    report.render_edit(_out(False), outcome)
    return 0


@app.command(help="Write the commits of an edit checkout back as patch files and update the series; an "
             "unchanged commit leaves its file byte for byte. " + EXIT_CODES)
def export(
    target: TargetOpt = None,
    upstream: NameOpt = None,
    from_dir: Annotated[Optional[Path], typer.Option("--from", help="The folder that patchmgr edit made.")] = None,
    root: RootOpt = Path("."),
) -> int:
    from patchmgr import report
    from patchmgr.roundtrip import export_checkout
    project = Project.at(root)
    selected = _upstream_of(project, target, upstream, {})
    if from_dir is None:
        raise UsageError("export needs --from DIR", "give the folder that `patchmgr edit --into` made")
    _folder_option("--from", from_dir)
    outcome = export_checkout(project, selected, upstream, from_dir)
    report.render_export(_out(False), outcome)
    return 0



def main(argv: list[str] | None = None) -> int:
    command = typer.main.get_command(app)
    try:
        result = command.main(args=argv, prog_name="patchmgr", standalone_mode=False)
    except PatchmgrError as error:
        from patchmgr import report
        report.render_error(_console(stderr=True), error)
        return error.exit_code
    except typer.Exit as exit_:
        return exit_.exit_code
    except typer.Abort:
        return 130
    except typer.TyperException as error:  # usage errors from the parser
        error.show()
        return 2
    return result if isinstance(result, int) else 0


def run() -> None:
    sys.exit(main())
