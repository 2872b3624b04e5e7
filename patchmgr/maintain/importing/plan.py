"""Plan an import, every byte of it, before anything is written: find the base, split, classify, prove.

For each monolithic patch (one per upstream):

1. the upstream is fetched into the cache (``--source`` or its git URL), the pin given (``--pin``, the
   Dockerfile's ``git checkout`` or the version folder's tag) resolved, and the base found (``pin``);
2. the patch is split into pieces at the base (``split``), each with DEP-3 stub headers;
3. the pieces are classified at the pin, in series order. Where the pin is a later commit than the base,
   pieces upstream already carries there are reported with their evidence (the commit with the piece's
   patch-id, or the commit from which its reverse applies) and left out; when another piece does not
   apply at the given pin, that pin is wrong and the base is pinned instead, with a note (``pieces``);
4. the result is proven with git (``prove``), and the manifest and patch files are computed and checked
   (``write``). Writing is the caller's next step.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path

from patchmgr.engine.results import State
from patchmgr.io.confine import shown
from patchmgr.io.git import GitRepo
from patchmgr.maintain.importing.exported import Given, declared_by_record, recorded_series
from patchmgr.maintain.importing.pieces import (
    Piece,
    carried_files,
    classify_pieces,
    piece_changes_at,
    pieces_at_pin,
    render_pieces,
    said_at_given_pin,
)
from patchmgr.maintain.importing.pin import Base, FoundBy, find_base
from patchmgr.maintain.importing.prove import Proof, prove
from patchmgr.maintain.importing.pypi import Release, release_of_pin
from patchmgr.maintain.importing.repeated import file_notes
from patchmgr.maintain.importing.scratch import Scratch
from patchmgr.maintain.importing.shared import share_pieces
from patchmgr.maintain.importing.sources import Declared, Monolith, origin_of, without_empty_commits
from patchmgr.maintain.importing.split import SplitMode, plan_pieces
from patchmgr.maintain.importing.tags import Tags
from patchmgr.maintain.importing.write import UpstreamEntry, plan_writes, write_import
from patchmgr.model.errors import PatchmgrError, UsageError
from patchmgr.model.lint import is_stub
from patchmgr.model.manifest import Upstream, url_problem
from patchmgr.model.project import Project
from patchmgr.model.urls import mask_url, without_credentials
from patchmgr.sources.abbreviated import is_abbreviated
from patchmgr.sources.refs import UnknownRef
from patchmgr.sources.store import Store
from patchmgr.sources.upstream import GitSource, Sources


@dataclass(frozen=True)
class ImportOptions:
    target: str
    mode: SplitMode = SplitMode.FILE
    mapping: Mapping[str, list[str]] | None = None
    git: Mapping[str, str] = field(default_factory=dict)
    pins: Mapping[str, str] = field(default_factory=dict)
    search: Mapping[str, str] = field(default_factory=dict)
    declared: Mapping[str, Declared] = field(default_factory=dict)
    notes: tuple[str, ...] = ()  # from reading the inputs (a --build-arg no ARG declares)


@dataclass
class UpstreamImport:
    name: str
    source: str  # the monolithic patch, as named
    git: str
    base: Base
    pin: str
    pieces: list[Piece] = field(default_factory=list)
    proofs: list[Proof] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def proven(self) -> bool:
        return bool(self.proofs) and all(p.ok for p in self.proofs)


class ImportAction(StrEnum):
    PLANNED = "planned"
    IMPORTED = "imported"
    DRY_RUN = "dry-run"
    REFUSED = "refused"


@dataclass
class ImportOutcome:
    target: str
    upstreams: list[UpstreamImport]
    action: ImportAction = ImportAction.PLANNED
    notes: list[str] = field(default_factory=list)
    writes: dict[Path, bytes | None] = field(default_factory=dict, repr=False)
    expected: dict[Path, bytes | None] = field(default_factory=dict, repr=False)
    # the patches of a quilt series, each kept whole as it is; else pieces split out of monolithic patches
    # (and made again at the pin where they apply only at an offset there)
    kept_whole: bool = False

    @property
    def ok(self) -> bool:
        return self.action is not ImportAction.REFUSED and all(u.proven for u in self.upstreams)

    @property
    def stubs(self) -> int:
        """How many of the patch files it writes still hold the DEP-3 stub (pieces split here do; the patches an
        export recorded, imported back, keep their own headers)."""
        patches = [data for path, data in self.writes.items() if path.suffix == ".patch" and data is not None]
        return sum(is_stub(data.decode("utf-8", "replace")) for data in patches)


def plan_import(project: Project, monoliths: list[Monolith], sources: Sources, options: ImportOptions) -> ImportOutcome:
    check_names(options, [m.upstream for m in monoliths])
    existing = existing_of(project, options.target)
    outcome = ImportOutcome(options.target, [], notes=list(options.notes))
    monoliths, skipped = without_empty_commits(monoliths)
    outcome.notes += skipped
    entries = []
    unused = {entry for entries_ in (options.mapping or {}).values() for entry in entries_}
    with Scratch() as scratch:
        for monolith in monoliths:
            said: list[str] = []
            recorded = recorded_series(
                project, monolith, sources, scratch, _given_to(options, monolith, existing), said
            )
            if recorded is not None:  # the patches export --format series wrote beside it
                base, entry, used = recorded.base, recorded.entry, set[str]()
                result = UpstreamImport(entry.name, monolith.shown, entry.git, base, base.commit, *recorded.proven)
            else:  # split as any other, from the URL and pin export recorded when nothing else gives them
                declared = declared_by_record(monolith, options.declared.get(monolith.upstream, Declared()))
                recorded_options = replace(options, declared={**options.declared, monolith.upstream: declared})
                result, entry, used = _one(
                    project, monolith, sources, recorded_options, existing.get(monolith.upstream), scratch
                )
            result.notes[:0] = said
            unused -= used
            outcome.upstreams.append(result)
            entries.append(entry)
    if unused:
        raise UsageError(
            f"--map names what no imported patch changes: {', '.join(sorted(unused))}; nothing was written",
            "check the paths against the patch (hunks are numbered from 1)",
        )
    if not all(u.proven for u in outcome.upstreams):
        # nothing is written: no piece is imported, and none has a file
        refused = [
            replace(u, pieces=[replace(p, imported=False, path=None) for p in u.pieces]) for u in outcome.upstreams
        ]
        return replace(outcome, upstreams=refused, action=ImportAction.REFUSED)
    description = f"imported from {', '.join(m.shown for m in monoliths)}"
    outcome.writes, outcome.expected = plan_writes(project, options.target, description, entries)
    return outcome


def _given_to(options: ImportOptions, monolith: Monolith, existing: Mapping[str, Upstream]) -> Given:
    name = monolith.upstream
    other = options.mapping is not None or options.mode is not SplitMode.FILE
    return Given(
        options.git.get(name), options.pins.get(name), options.declared.get(name, Declared()), existing.get(name), other
    )


def finish_import(project: Project, outcome: ImportOutcome, dry_run: bool) -> ImportOutcome:
    """A planned import carried out (its files written in one transaction) or, with ``dry_run``, shown as a dry
    run: a new outcome; one that is not planned (refused) is returned as it is."""
    if outcome.action is not ImportAction.PLANNED:
        return outcome
    if dry_run:
        return replace(outcome, action=ImportAction.DRY_RUN)
    write_import(project, outcome.writes, outcome.expected)
    return replace(outcome, action=ImportAction.IMPORTED)


def check_names(options: ImportOptions, imported: list[str]) -> None:
    """A --pin, --git or --search for an upstream no patch is imported for is a typo, not something to ignore."""
    for option, given in (("--pin", options.pins), ("--git", options.git), ("--search", options.search)):
        for name in given:
            if name not in imported:
                raise UsageError(
                    f"{option} {name}: no patch imported here is for upstream {name!r} (the patches are "
                    f"for {', '.join(sorted(set(imported)))}); nothing was written",
                    f"check the name, or name the patch's upstream with --upstream {name}",
                )


def existing_of(project: Project, target: str) -> dict[str, Upstream]:
    if not (project.manifests_dir / f"{target}.toml").is_file():
        return {}
    return {u.name: u for u in project.target(target).upstreams}  # a manifest that does not load: its error


def _one(
    project: Project,
    monolith: Monolith,
    sources: Sources,
    options: ImportOptions,
    existing: Upstream | None,
    scratch: Scratch,
) -> tuple[UpstreamImport, UpstreamEntry, set[str]]:
    name = monolith.upstream
    declared = options.declared.get(name, Declared())
    notes: list[str] = []
    git = _git_url(name, options, declared, existing, monolith, notes)
    store = sources.store
    urls = sources.urls(Upstream(name, git, (), "", None, None, "", ()))  # the upstream before its pin is known
    given = _given(store, name, urls, options, declared, existing, monolith, notes)
    searched: list[str] = []

    def search() -> str:
        if not searched:
            searched.append(store.resolve_ref(name, options.search.get(name, "HEAD"), urls).commit)
        return searched[0]

    if given is not None:
        fetched = store.fetch_commit(name, given, urls)
    else:
        fetched = store.resolve_ref(name, options.search.get(name, "HEAD"), urls)
        searched.append(fetched.commit)
    repo, location = fetched.repo, fetched.url or urls[0]

    patch = monolith.patch
    tags = Tags(sources, Upstream(name, git, (), given or "", None, None, "", ()), repo)
    base = find_base(repo, location, patch, given, search, tags, options.search.get(name, "HEAD"))
    notes += tags.notes
    specs, split_notes, used = plan_pieces(patch, options.mode, options.mapping, monolith.shown)
    notes += split_notes
    origin = f"vendor, imported from {origin_of(monolith)}, made against {name} commit {base.commit}"
    base_reader = GitSource(repo, base.commit, location)
    notes += file_notes(patch, base_reader)  # repeated files, diffs edited by hand
    base_pieces = render_pieces(
        scratch, repo, base.commit, piece_changes_at(patch, specs, base_reader, monolith), origin, name
    )
    paths = patch.touched_paths
    proofs = [prove(scratch, base_reader, base.commit, patch.data, paths, [data for _, data in base_pieces])]
    pin = existing.commit if existing else (given or base.commit)
    results = classify_pieces(sources, name, git, repo, location, base.commit, pin, base_pieces)
    blockers = [r for r in results if not r.state.applies and r.state is not State.UPSTREAM]
    at_given: dict[str, str] = {}
    if blockers and pin != base.commit and not existing:
        at_given = {r.patch.id: said_at_given_pin(r, pin) for r in results}
        notes.extend(
            f"{r.patch.id} at the given pin {pin[:12]}: {r.detail or 'upstream carries it'}"
            for r in results
            if r.state is State.UPSTREAM
        )
        notes.append(
            f"the given pin {pin[:12]} does not fit: "
            + "; ".join(f"{r.patch.id} is {r.state.value} there" for r in blockers)
            + f"; pinned the base {base.commit[:12]} instead"
        )
        pin = base.commit
        results = classify_pieces(sources, name, git, repo, location, base.commit, pin, base_pieces)
        blockers = [r for r in results if not r.state.applies and r.state is not State.UPSTREAM]
    if blockers:
        raise UsageError(
            f"{name}: the pieces do not apply at the target's pin {pin[:12]}: "
            + "; ".join(f"{r.patch.id} is {r.state.value}" for r in blockers)
            + "; nothing was written",
            f"import into a new target, or bump {name} to the base {base.commit[:12]} first",
        )
    pieces, data = pieces_at_pin(scratch, repo, location, pin, results, specs, origin, name, project)
    for piece in pieces:
        piece.at_given_pin = at_given.get(piece.id)
    pieces, shared_notes = share_pieces(project, options.target, name, pieces, data)
    notes += shared_notes
    if pin != base.commit:
        carried, partly = carried_files(patch, specs, pieces)
        proofs.insert(0, prove(scratch, GitSource(repo, pin, location), pin, patch.data, paths, data, carried, partly))
    releases = sources.store.releases
    release = release_of_pin(repo, pin, tags, monolith.version, releases, paths) if not existing else Release()
    notes += release.notes
    notes += _other_line(repo, declared, base, given)
    result = UpstreamImport(name, monolith.shown, git, base, pin, pieces, proofs, base.notes + notes)
    comment = _comment(
        monolith.shown + (f" at commit {monolith.commit[:12]}" if monolith.commit else ""), base, pin
    ) + _branch(declared, existing)
    entry = UpstreamEntry(
        name,
        git,
        pin,
        comment,
        release.version,
        release.pypi,
        tuple((p.id, d) for p, d in zip([p for p in pieces if p.imported], data, strict=False)),
    )
    return result, entry, used


def _git_url(
    name: str,
    options: ImportOptions,
    declared: Declared,
    existing: Upstream | None,
    monolith: Monolith,
    notes: list[str],
) -> str:
    """The upstream's URL as the manifest names it and import fetches it: credentials (a token in a
    Dockerfile's clone URL, or given with --git) are left out of both, and a note says so."""
    given: str | None
    if name in options.git:
        given, where = options.git[name], f"--git {name}"
    elif declared.url:
        given, where = declared.url, declared.where
    else:
        given, where = (existing.git if existing else None), f"the manifest of {options.target}"
    if not given:
        raise UsageError(
            f"no git URL for upstream {name} ({monolith.shown})",
            f"pass --git {name}=URL, or --dockerfile with its git clone line",
        )
    git = without_credentials(given)
    problem = url_problem(git)  # a control character included
    if problem:
        raise UsageError(
            f"the git URL of {name} ({where}: {shown(mask_url(git))}): {problem}",
            f"pass --git {name}=https://... (and --source {name}=PATH for a local clone)",
        )
    if git != given:
        notes.append(
            f"the git URL of {name} ({where}) holds credentials: the manifest names it without them "
            f"({git}), and import fetched it so too; give git the credentials (a credential helper), or "
            f"fetch with --source {name}=LOCATION"
        )
    return git


def _branch(declared: Declared, existing: Upstream | None) -> str:
    """The Dockerfile's branch (or tag) the pin was resolved from, for the manifest comment."""
    if not declared.branch or existing is not None:
        return ""
    return f"; the Dockerfile checks out {declared.branch}, resolved to this commit at import"


def _other_line(repo: GitRepo, declared: Declared, base: Base, given: str | None) -> list[str]:
    """A warning when the patch's base is not on the line of the branch the Dockerfile checks out."""
    if (
        not declared.branch
        or given is None
        or base.commit == given
        or repo.merge_base(base.commit, given) == base.commit
    ):
        return []
    return [
        f"warning: the base {base.commit[:12]} the patch was made against is not on the line of "
        f"{declared.branch} ({given[:12]}, {declared.where}); check the branch, or pass --search"
    ]


def _comment(shown: str, base: Base, pin: str) -> str:
    """The manifest comment on the imported upstream: one plain sentence."""
    if pin != base.commit:
        return f"imported from {shown}, which was made against commit {base.commit[:12]}"
    if base.how is FoundBy.GIVEN:
        return f"imported from {shown}, which applies at this pin as given"
    if base.how is FoundBy.INDEX:
        tag = f" (tag {base.tag})" if base.tag else ""
        if base.partial:
            return (
                f"imported from {shown}; only {base.matched} of {base.of} files' index-line blobs match this "
                f"commit{tag}"
            )
        return f"imported from {shown}, which was made against this commit{tag} (its index lines' blobs match)"
    return f"imported from {shown}, which applies at this commit (found by trying it along the history)"


def _given(
    store: Store,
    name: str,
    urls: tuple[str, ...],
    options: ImportOptions,
    declared: Declared,
    existing: Upstream | None,
    monolith: Monolith,
    notes: list[str],
) -> str | None:
    """The commit the user or the Dockerfile says the patch belongs at (None: unknown)."""
    if existing is not None:
        return existing.commit
    ref = options.pins.get(name) or declared.ref
    if ref:
        try:
            commit = store.resolve_ref(name, ref, urls).commit  # an abbreviated id: on any branch or tag of the source
        except UnknownRef:
            where = f"--pin {name}={ref}" if name in options.pins else f"{declared.where}: git checkout {ref}"
            raise UsageError(f"{where}: upstream {name} has no such commit or ref", "check the pin") from None
        if is_abbreviated(ref) and commit.startswith(ref.lower()):  # not a branch or tag that looks like one
            notes.append(f"the abbreviated pin {ref} is {commit}")
        return commit
    for tag in (f"v{monolith.version}", monolith.version) if monolith.version else ():
        try:
            commit = store.resolve_ref(name, tag, urls).commit
            notes.append(f"the version folder {monolith.version} names tag {tag} ({commit[:12]})")
            return commit
        except PatchmgrError:
            continue
    return None
