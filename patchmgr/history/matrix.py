"""matrix: every patch of an upstream at its pin, at each of its release tags and at its branch tip.

The columns come from one ``git ls-remote`` of the upstream's source (tags, and the
branch its HEAD names; the upstreams' listings run together); a tag commit the cache
already holds is not fetched again. They are in time order (commit date), the tip last,
the pin among the tags where its date puts it (only older tags asked for come before it).
Each column's commit is checked as ``status --against`` checks it (the engine, then
the patch-id evidence for a patch that stopped applying), once per distinct commit.
Each row then names the first commit where the patch changed: for the first column
where it stops applying (else the first where its state differs from the pin's),
the carrying commit when one has the patch's patch-id, else the commit that
``history.Walk`` finds between the merge base and that column, the walk that
``bisect`` uses: only commits touching the patch's files are classified. Each cell and
the first changes toward a column are kept in the cache by row (``matrix_cache``): a warm
matrix checks nothing again, and after an edit only the rows that stand on the edited
patch are checked, with the earlier patches they stand on.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import cast

from patchmgr.engine.results import CheckResult, State
from patchmgr.history.at_ref import check_at_ref
from patchmgr.history.backports import BackportCheck, Landed, named_by, named_text, same_repository
from patchmgr.history.carriers import carrier_candidates
from patchmgr.history.evidence import explain_upstream
from patchmgr.history.matrix_cache import CellCache, stands_on
from patchmgr.history.matrix_share import same_walk
from patchmgr.history.releases import RELEASES_SINCE_PIN, RemoteRefs, TagChoice, TagResolver, remote_refs
from patchmgr.history.tracking import ChosenRef, tracked_refs
from patchmgr.history.walk import Walk, broken_guards, pr_number
from patchmgr.io import children
from patchmgr.io.git import GitRepo
from patchmgr.model.errors import GitError, PatchmgrError, SourceError, StateError
from patchmgr.model.manifest import Target, Upstream
from patchmgr.model.patchfile import PatchFile
from patchmgr.model.project import Project
from patchmgr.model.references import patch_references
from patchmgr.model.urls import mask_url
from patchmgr.sources.cache_errors import CacheError
from patchmgr.sources.refs import validate_ref
from patchmgr.sources.upstream import GitSource, Sources


class ColumnKind(StrEnum):
    PIN = "pin"
    TAG = "tag"
    TIP = "tip"


@dataclass(frozen=True)
class Column(ChosenRef):
    """A ref the matrix checks, and as what: the pin (``name`` its tag, else its short commit id), a tag after it
    or the branch tip; ``rule`` says why it is a column ("newest release candidate (track = prereleases)")."""

    kind: ColumnKind


@dataclass(frozen=True)
class Change:
    """The first commit where a row's patch changed, toward the column ``column``."""

    column: str
    state: State
    commit: str | None = None
    subject: str = ""
    carrier: bool = False  # the commit has the patch's own patch-id
    guards_broken: tuple[str, ...] = ()  # the patch's guards that break at the commit ("guard: offense")
    monotonic: bool = True
    commits_checked: int = 0
    note: str = ""
    named: str = ""  # the commit is one the patch names: "the backport's prerequisite PR #4888 landed"

    @property
    def pr(self) -> int | None:
        return pr_number(self.subject) if self.subject else None


@dataclass
class Row:
    patch: PatchFile
    cells: list[CheckResult]  # one per column
    change: Change | None = None  # None: the same state in every column
    # per column, each pull request or commit the patch names and whether that column has it (history.backports)
    backports: list[tuple[Landed, ...]] = field(default_factory=list)


@dataclass
class Matrix:
    upstream: Upstream
    source: str
    columns: list[Column]
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    error: str | None = None  # set when no source could provide the upstream (as in status)
    hint: str | None = None
    decides: ChosenRef | None = None  # the ref that decides the verdict (tracking's choice; None: the pin)

    @property
    def pin_column(self) -> int:
        """The pin's column: the first, unless older tags were asked for (columns are in time order)."""
        return next((i for i, c in enumerate(self.columns) if c.kind is ColumnKind.PIN), 0)

    @property
    def verdict_column(self) -> int:
        """The column that decides ``ok``: the ref that ``tracking`` chose (``decides``: the branch tip, or the
        newest release tag by version, release candidates too when it follows them; with ``--refs``, a
        pre-release or a tag that is no version decides only when no tag is a release), the ref that
        ``status --newest-release`` checks; else the pin."""
        if self.decides is None:
            return self.pin_column
        chosen = (self.decides.name, self.decides.commit)
        found = (i for i, c in enumerate(self.columns) if c.kind is not ColumnKind.PIN and (c.name, c.commit) == chosen)
        return next(found, self.pin_column)

    @property
    def ok(self) -> bool:
        """Every patch applies, its guards holding, at the newest release (``verdict_column``)."""
        if self.error is not None:
            return False
        index = self.verdict_column
        return all(row.cells[index].ok for row in self.rows)


def build_matrices(
    project: Project, target: Target, sources: Sources, only: Sequence[str] = (), choice: TagChoice = RELEASES_SINCE_PIN
) -> list[Matrix]:
    """A matrix per upstream of ``target`` (or of those in ``only``). An upstream that no source provides is a
    matrix with its ``error``, as in status; bad input (a ``--since`` ref no source has, a malformed patch)
    stops the run."""
    matrices = []
    upstreams = [u for u in target.upstreams if not only or u.name in only]
    listings = _list_ahead(sources, upstreams)
    for upstream in upstreams:
        try:
            listed = listings.get(upstream.name)
            matrices.append(build_matrix(project, upstream, sources, choice, listed))
        except CacheError:
            raise  # a cache this machine cannot use: one error, as in status
        except (SourceError, GitError, StateError) as exc:
            matrices.append(Matrix(upstream, "", [], error=exc.message, hint=exc.hint))
    return matrices


def _list_ahead(sources: Sources, upstreams: Sequence[Upstream]) -> dict[str, Future[RemoteRefs]]:
    """Each upstream's ``git ls-remote``, side by side in threads (``children.worker_pool``: each is a process that
    mostly waits, and at most a handful run at once), after the
    cached clones open together (``Store.open_ahead``). A clone that cannot be opened is left out here: its
    matrix meets the problem itself, in order, with its own message."""
    if len(upstreams) < 2:
        return {}
    sources.store.open_ahead({u.name: u.commit for u in upstreams if sources.urls(u)})()
    ready = []
    for upstream in upstreams:
        try:
            if sources.urls(upstream):
                sources.store.repo(upstream.name)  # opened here, in this thread: the threads only run git
                ready.append(upstream)
        except PatchmgrError:
            continue
    if not ready:
        return {}
    pool = children.worker_pool(len(ready), "ls-remote")
    listings = {u.name: pool.submit(remote_refs, sources, u) for u in ready}
    pool.shutdown(wait=False)
    return listings


def build_matrix(
    project: Project,
    upstream: Upstream,
    sources: Sources,
    choice: TagChoice = RELEASES_SINCE_PIN,
    listed: Future[RemoteRefs] | None = None,
) -> Matrix:
    """The matrix of ``upstream``'s patches: pin and the tags ``choice`` chooses in time order, then the tip.
    ``listed``: its source's refs, being listed already (``_list_ahead``)."""
    if choice.since is not None:
        validate_ref(choice.since)
    patches = project.patches(upstream)
    pin_source = sources.open_git(upstream, None)
    refs = listed.result() if listed is not None else remote_refs(sources, upstream)
    repo, location = pin_source.repo, pin_source.location
    resolver = TagResolver(sources, upstream, repo)
    notes: list[str] = []

    tracked = tracked_refs(refs, upstream, resolver, choice, notes)
    columns = [Column(tag.name, tag.commit, tag.rule, ColumnKind.TAG) for tag in tracked.tags]
    # in time order: the pin among the tags where its commit date puts it (a release branch's tag of a newer
    # version may be committed before the pin); older versions only when asked for (choice.include_older)
    times = resolver.repo.commit_times([upstream.commit, *(c.commit for c in columns)]) if columns else {}
    pin_time = times.get(upstream.commit, 0)
    at = next((i for i, c in enumerate(columns) if times.get(c.commit, 0) >= pin_time), len(columns))
    columns.insert(at, Column(tracked.pin, upstream.commit, "the pin", ColumnKind.PIN))
    if tracked.tip is not None:
        columns.append(Column(tracked.tip.name, tracked.tip.commit, tracked.tip.rule, ColumnKind.TIP))
    repo = resolver.repo

    cache = CellCache(sources.store.cache_dir, upstream, patches)
    commits = list(dict.fromkeys(c.commit for c in columns))
    missing = {c: rows for c in commits if (rows := cache.missing(c))}
    if missing:
        # only the rows not kept, with the earlier patches they stand on: checked alone, in series order, that part
        # of the series gives them the results the whole series would (matrix_cache.stands_on)
        part = stands_on(patches, sorted({i for rows in missing.values() for i in rows}))
        checked = _check_columns(sources, upstream, repo, location, [patches[i] for i in part], list(missing))
        for commit, cells in checked.items():
            for index, cell in zip(part, cells, strict=True):
                cache.keep(commit, index, cell)
    results = {c: [cast(CheckResult, cache.cell(c, i)) for i in range(len(patches))] for c in commits}
    matrix = Matrix(upstream, f"git {mask_url(location)}", columns, notes=notes, decides=tracked.next)
    histories = _Histories(repo, location, upstream, patches)
    named = BackportCheck(repo, upstream, patches)
    for index, patch in enumerate(patches):
        row = Row(patch, [results[c.commit][index] for c in columns])
        change = _cached_change(cache, histories, index, row, columns)
        references = [r for r in named.references.get(patch.id, ()) if same_repository(r, upstream)]
        reference = named_by(references, change.commit, change.subject) if change and change.commit else None
        row.change = replace(change, named=named_text(reference)) if change and reference else change
        if patch.id in named.references:
            row.backports = [named.at(c.commit)[patch.id] for c in columns]
        matrix.rows.append(row)
    cache.save()
    return matrix


def _check_columns(
    sources: Sources, upstream: Upstream, repo: GitRepo, location: str, patches: list[PatchFile], commits: list[str]
) -> dict[str, list[CheckResult]]:
    """Each commit checked as ``status --against`` checks it: the engine, then ``explain_upstream``.

    One log over all the columns' ranges at once first says which patches have any commit with their
    patch-id (``carriers.carrier_candidates``). A result is then settled without ``explain_upstream`` when exactly
    one is on its column's first-parent line and another column already had it explained (the same carrier,
    the same evidence); ``explain_upstream`` runs for the rest (a commit the patch's Origin names, or the walk
    seeing it turn upstream before its lines changed, can carry it without its patch-id), so each cell reads
    as ``status --against`` that column says.
    """
    # the engine and the guards per column here, the evidence below: the explanation is check_at_ref's, batched
    checked = {
        commit: check_at_ref(sources, upstream, GitSource(repo, commit, location), patches, explain=False)
        for commit in commits
    }
    pending = {c: [i for i, r in enumerate(checked[c]) if not r.state.applies] for c in commits if c != upstream.commit}
    merge_bases = {c: repo.merge_base(upstream.commit, c) for c, indexes in pending.items() if indexes}
    bases = {c: base for c, base in merge_bases.items() if base is not None and base != c}  # else nothing to search
    candidates = carrier_candidates(repo, bases, patches, sorted({i for c in bases for i in pending[c]}))
    known: dict[str, CheckResult] = {}  # carrier commit -> a result explained by it (its evidence text)
    lines: dict[str, set[str]] = {}  # column -> the commits of its first-parent line from its merge base
    engine = dict(checked)  # each column's results before any explanation
    done: list[str] = []  # the columns explained so far, in column (time) order
    # a commit a patch names carries it from the first column that reaches it, whatever its files did
    names_commits = [any(r.commit for r in patch_references(patch)) for patch in patches]
    for commit, base in bases.items():
        results, settled = checked[commit], {}
        for i in pending[commit]:
            found = candidates.get((base, i))
            if results[i].state is State.UPSTREAM or not found:
                # explain_upstream names where its reverse starts to apply, or the commit its Origin names, or
                # where the walk saw it turn upstream before its lines changed (as status and bisect do), unless
                # an earlier column had the same walk (matrix_share) and no commit the patch names can differ
                earlier = same_walk(repo, engine, done, bases, lines, patches, commit, i)
                if earlier is not None and (checked[earlier][i].carrier or not names_commits[i]):
                    settled[i] = checked[earlier][i]
                continue
            if commit not in lines:
                lines[commit] = set(repo.first_parent_path(base, commit))
            on_line = found & lines[commit]
            if len(on_line) == 1 and (carrier := next(iter(on_line))) in known:
                # the one commit find_carrier can name here, already explained at another column: the same
                # new result as evidence._explained makes
                settled[i] = replace(
                    results[i], state=State.UPSTREAM, evidence=known[carrier].evidence, carrier=carrier, notes=[]
                )
        done.append(commit)
        if len(settled) == len(pending[commit]):
            checked[commit] = [settled.get(i, r) for i, r in enumerate(results)]
            continue
        # explain_upstream looks at every result that does not apply: those settled above are shown to it as
        # applying, and keep their own results
        shown = [replace(r, state=State.CLEAN) if i in settled else r for i, r in enumerate(results)]
        explained = explain_upstream(sources, upstream, GitSource(repo, commit, location), shown)
        checked[commit] = [settled[i] if i in settled else r for i, r in enumerate(explained)]
        known.update({r.carrier: r for r in explained if r.carrier})
    # a column where a patch the engine merged in (three-way, fuzz) reads upstream: bump drops that patch, so the
    # patches after it are checked again without it, as status --against checks them (at_ref)
    for commit in bases:
        if any(r.state is State.UPSTREAM and r.files for r in checked[commit]):
            checked[commit] = check_at_ref(sources, upstream, GitSource(repo, commit, location), patches)
    return checked


@dataclass
class _Histories:
    """What the first-change walks of one upstream share: its repository, series and walks by column."""

    repo: GitRepo
    location: str
    upstream: Upstream
    patches: list[PatchFile]
    walks: dict[str, Walk | None] = field(default_factory=dict)


def _cached_change(
    cache: CellCache, histories: _Histories, index: int, row: Row, columns: list[Column]
) -> Change | None:
    """``_first_change``, kept in the entry of the column it looks toward (the walk is most of a warm run)."""
    toward = _toward(row, columns)
    if toward is None:
        return None
    column, cell = columns[toward], row.cells[toward]
    key = (
        cache.keys[index],
        column.name,
        column.commit,
        cell.state.value,
        tuple(broken_guards(cell)),
        cell.carrier or "",
    )
    entry = cache.entry(column.commit)
    if key not in entry.changes:
        entry.changes[key] = _first_change(histories, index, column, cell)
        entry.dirty = True
    return cast(Change | None, entry.changes[key])


def _toward(row: Row, columns: list[Column]) -> int | None:
    """The column a row's first change leads to: the first after the pin where the patch stops applying (or a
    guard breaks), else the first whose state differs from the pin's; None when it never changes."""
    pin = next((i for i, c in enumerate(columns) if c.kind is ColumnKind.PIN), 0)
    cells, later = row.cells, range(pin + 1, len(columns))
    toward = next((j for j in later if not cells[j].ok), None)
    if toward is None:
        toward = next((j for j in later if cells[j].state is not cells[pin].state), None)
    return toward


def _first_change(histories: _Histories, index: int, column: Column, cell: CheckResult) -> Change:
    """Where the patch changed toward ``column`` (``_toward``'s), whose result is ``cell``."""
    repo, location, upstream, patches, walks = (
        histories.repo,
        histories.location,
        histories.upstream,
        histories.patches,
        histories.walks,
    )
    if cell.carrier:
        info = repo.commit_info(cell.carrier)
        return Change(column.name, State.UPSTREAM, info.sha, info.subject, carrier=True)
    if column.commit not in walks:
        base = repo.merge_base(upstream.commit, column.commit)
        walks[column.commit] = Walk(repo, base, column.commit, location, patches) if base else None
    walk = walks[column.commit]
    if walk is None:
        return Change(column.name, cell.state, note=f"the pin and {column.name} share no history")
    history = walk.history(index, cell.state, None, broken_guards(cell))
    stops = not cell.ok
    step = history.first_commit if stops else None
    if step is None:
        # a knock-on failure's commit broke the earlier patch (walk.PatchHistory.note says so), not this one
        wanted = (lambda s: not s.applies and not s.needs) if stops else (lambda s: s.state is cell.state)
        step = next((s for s in history.transitions if wanted(s)), None)
    if step is None:
        return Change(
            column.name,
            cell.state,
            monotonic=history.monotonic,
            commits_checked=history.commits_checked,
            note=history.note
            or f"no commit from the merge base {walk.base[:12]} to {column.name} that "
            "touches its files changes it: the pin's own line differs",
        )
    return Change(
        column.name,
        step.state,
        step.commit,
        step.subject,
        guards_broken=step.guards_broken,
        monotonic=history.monotonic,
        commits_checked=history.commits_checked,
        note=history.note,
    )
