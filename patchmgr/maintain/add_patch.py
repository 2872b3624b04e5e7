"""Add a patch to a series (``patchmgr add``): a change made a documented patch, checked, and listed.

The change (``add_change``) gets its DEP-3 fields: Description and Author from its commits, ``Origin`` (the
commit, the range, or ``--origin``), ``Upstream-Status: Pending`` unless its message says otherwise,
``Last-Update`` today, and ``Smoke-Test`` naming its test (a stub that fails until a person writes it, unless
``--smoke-test`` names one). The patch must apply exactly (``clean``) at the pin on top of the series; only then
are the patch file, the manifest's series (only the ``patches`` list changes) and the stub written, in one
journaled transaction: all of them, or none. Added from an ``edit`` checkout, the checkout's record takes the new
commit too, so that a later ``export`` leaves the file as it is.
"""

from __future__ import annotations

import re
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

from patchmgr.engine.results import State
from patchmgr.history.at_ref import check_at_ref, preimages
from patchmgr.maintain import manifest_edit
from patchmgr.maintain.add_change import Change, ChangeKind, empty_commits_note
from patchmgr.maintain.edit_checkout import locked_edit
from patchmgr.maintain.edit_record import EditRecord, PatchCommit, record_path
from patchmgr.maintain.importing.scratch import Scratch
from patchmgr.maintain.start_files import smoke_stub_text
from patchmgr.model.dep3 import read_header
from patchmgr.model.dep3_edit import set_last_update
from patchmgr.model.errors import StateError, UsageError
from patchmgr.model.lint import DEP3_PROFILE, SMOKE_DIR, lacks_full_index, smoke_test_problem
from patchmgr.model.manifest import PATCH_ID, Target
from patchmgr.model.patchfile import PatchFile, is_mail, parse_patch
from patchmgr.model.project import Project
from patchmgr.model.records import sha256_bytes
from patchmgr.model.text import as_bytes, as_text
from patchmgr.sources.upstream import GitSource, Sources
from patchmgr.targets.project_files import write_files

DESCRIBE_STUB = "Description: TODO: describe what this fixes and why\n"


@dataclass(frozen=True)
class AddRequest:
    target: Target
    upstream: str
    patch_id: str
    origin: str | None = None  # --origin: the Origin field, whatever the change says
    smoke_test: str | None = None  # --smoke-test: an existing test instead of a stub


@dataclass
class AddOutcome:
    target: str
    upstream: str
    patch_id: str
    path: Path  # relative to the project's root
    kind: ChangeKind
    commits: tuple[str, ...]
    pin: str
    smoke_test: str
    stub: bool  # the smoke test is a stub written now
    series: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def check_request(project: Project, request: AddRequest) -> None:
    """What can be refused before any change is read: the id, an existing file, a listed id, ``--smoke-test``."""
    upstream = request.target.upstream(request.upstream)
    if not PATCH_ID.match(request.patch_id):
        raise UsageError(
            f"{request.patch_id!r} is not a patch id", "use letters, digits, '.', '_', '+', '-' (the file's name)"
        )
    if request.patch_id in upstream.patch_ids:
        raise UsageError(f"{upstream.name} already lists {request.patch_id}", "pick another patch id")
    path = project.patch_path(upstream.name, request.patch_id)
    if path.exists() or path.is_symlink():
        raise UsageError(
            f"{path} exists; nothing was written",
            f"pick another patch id, or list it in manifests/{request.target.name}.toml by hand",
        )
    if request.origin is not None and (not request.origin.strip() or not request.origin.isprintable()):
        raise UsageError("--origin is empty or holds a control character", "give one line: a URL, or a commit")
    if request.smoke_test is not None:
        problem = smoke_test_problem(project, upstream.name, request.smoke_test)
        if problem:
            raise UsageError(f"--smoke-test {request.smoke_test!r} {problem}", "name an existing smoke test")


def plan_add(project: Project, request: AddRequest, change: Change, sources: Sources) -> tuple[AddOutcome, dict]:
    """The patch made from ``change`` and checked at the pin on top of the series, the manifest's new series and
    the stub: ``(outcome, writes)``, nothing written (``writes``: path -> (new bytes, bytes it holds now))."""
    target, upstream = request.target, request.target.upstream(request.upstream)
    path = project.patch_path(upstream.name, request.patch_id)
    smoke, stub = _smoke_test(project, request)
    dep3 = target.lint_profile == DEP3_PROFILE  # add accepts what lint accepts: DEP-3 takes an Author for Origin
    said = read_header(change.message).first(*(("Origin", "Author", "From") if dep3 else ("Origin",)))
    if request.origin is None and change.origin is None and said is None:
        raise UsageError(
            "the diff says nothing of where it comes from (no Origin field"
            + (", no Author or From" if dep3 else "")
            + "); nothing was written",
            "say it with --origin, e.g. --origin vendor or --origin https://github.com/org/lib/pull/12",
        )
    message = _fields(change.message or DESCRIBE_STUB, request, change.origin, smoke, dep3)
    source = sources.open_git(upstream, None)
    series = project.patches(upstream)
    patch = _checked(parse_patch(as_bytes(message + "---\n" + change.diff), path, upstream.name))
    results = check_at_ref(sources, upstream, source, [*series, patch])
    if lacks_full_index(change.diff):
        # a diff without git's full blob ids (diff -u, an abbreviated git diff): made again by git, as lint asks
        patch = _checked(_with_git_diff(patch, message, results, source))
        results = check_at_ref(sources, upstream, source, [*series, patch])
    result = results[-1]
    if result.state is not State.CLEAN:
        raise UsageError(
            f"{request.patch_id} does not apply exactly at the pin {upstream.commit[:12]} on top of the series: "
            f"{result.state.value}" + (f" ({result.detail})" if result.detail else "") + "; nothing was written",
            f"make the change on the pin with the series applied (patchmgr edit --target {target.name} "
            f"--upstream {upstream.name} --into DIR), then add it with --from-edit DIR",
        )
    outcome = AddOutcome(
        target.name,
        upstream.name,
        request.patch_id,
        path.relative_to(project.root) if path.is_relative_to(project.root) else path,  # as lint and status name it
        change.kind,
        change.commits,
        upstream.commit,
        smoke,
        stub,
        [*upstream.patch_ids, request.patch_id],
    )
    if change.skipped:
        outcome.notes.append(empty_commits_note(change.skipped))
    broken = [r.patch.id for r in results[:-1] if not r.ok]
    if broken:
        outcome.notes.append(f"checked on top of the series as it applies: {', '.join(broken)} do not apply exactly")
    writes: dict[Path, tuple[bytes, bytes | None]] = {path: (patch.data, None)}
    try:
        text = target.path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise StateError(f"cannot read {target.path}: {exc}", "fix the file, then run again") from None
    new_text = manifest_edit.series_text(text, target.path, upstream.name, outcome.series)
    manifest_edit.check_manifest(target.path, new_text, project.patches_dir, {path})
    writes[target.path] = (new_text.encode("utf-8"), text.encode("utf-8"))
    if stub:
        file = f"test_{_module(request.patch_id)}.py"
        text = smoke_stub_text(target.name, upstream.name, request.patch_id, patch.subject or request.patch_id, file)
        writes[project.root / smoke] = (text.encode("utf-8"), None)
    if change.record is not None:
        _record_commit(change, request.patch_id, patch.data, writes, outcome)
    return outcome, writes


def write_add(project: Project, outcome: AddOutcome, writes: dict, checkout: Path | None) -> AddOutcome:
    """Write the planned files in one journaled transaction (under the edit checkout's lock, when added from one)."""
    with locked_edit(checkout, outcome.notes) if checkout is not None else nullcontext():
        new = {path: data for path, (data, _) in writes.items()}
        write_files(project.root, new, {path: old for path, (_, old) in writes.items()})
    return outcome


def _smoke_test(project: Project, request: AddRequest) -> tuple[str, bool]:
    """The Smoke-Test value, and whether a stub is to be written there (not when the test is there)."""
    if request.smoke_test is not None:
        return request.smoke_test, False
    value = "/".join((*SMOKE_DIR, request.upstream, f"test_{_module(request.patch_id)}.py"))
    return value, not (project.root / value).exists()


def _module(patch_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", patch_id)


def _fields(message: str, request: AddRequest, origin: str | None, smoke: str, dep3: bool = False) -> str:
    """``message`` with the DEP-3 fields a patch needs: those it has are kept (``--origin`` replaces Origin);
    under the DEP-3 profile, fields are named in any case, and an Author or From stands for Origin."""
    lines = message.splitlines(keepends=True)
    header = read_header(message)

    def has(key: str) -> bool:
        return header.first(key) is not None if dep3 else any(line.startswith(f"{key}:") for line in lines)

    if request.origin is not None:
        lines = [line for line in lines if not line.startswith("Origin:")]
    added = []
    if request.origin is not None or (origin and not has("Origin") and not (dep3 and has("Author"))):
        added.append(f"Origin: {request.origin or origin}\n")
    if not has("Upstream-Status") and not dep3:  # patchmgr's own field: the strict profile asks for it
        added.append("Upstream-Status: Pending\n")
    if not any(line.startswith("Smoke-Test:") and line.split(":", 1)[1].strip() == smoke for line in lines):
        added.append(f"Smoke-Test: {smoke}\n")
    text = "".join(lines)
    text = text if text.endswith("\n") else text + "\n"
    last = text.rstrip("\n").rpartition("\n")[2]
    if added and is_mail(text) and not re.match(r"[A-Za-z-]+:", last):
        text += "\n"  # a mail's fields stand apart from its body, as git trailers do
    return as_text(set_last_update(as_bytes(text + "".join(added))))


def _checked(patch: PatchFile) -> PatchFile:
    return parse_patch(patch.data, patch.path, patch.upstream, patch.path.stem)


def _with_git_diff(patch: PatchFile, message: str, results: list, source: GitSource) -> PatchFile:
    result = results[-1]
    if result.state is not State.CLEAN:
        return patch  # refused by the caller, saying why
    before = preimages(results, source)[-1]
    paths = sorted(set(before) | set(result.files))
    entries = source.repo.path_entries(source.commit, paths)
    modes = {p: (e[0] if e else "100644") for p, e in zip(paths, entries, strict=True)}
    with Scratch() as scratch:
        diff = scratch.diff(before, result.files, modes)
    return parse_patch(as_bytes(message + "---\n" + diff), patch.path, patch.upstream)


def _record_commit(change: Change, patch_id: str, data: bytes, writes: dict, outcome: AddOutcome) -> None:
    """An edit checkout's record with the new commit as the patch (one commit only: a record holds one commit per
    patch); several commits leave it as it is, and the note says what that means for export."""
    record, checkout = change.record, change.checkout
    if record is None or checkout is None:
        return
    if len(change.commits) != 1:
        outcome.notes.append(
            f"{checkout}: its {len(change.commits)} new commits are one patch now; before editing there again, "
            "run patchmgr edit anew (export would write them as patches of their own)"
        )
        return
    path = record_path(checkout)
    try:
        current = path.read_bytes()
    except OSError as exc:
        raise StateError(f"cannot read {path}: {exc.strerror or exc}", "fix the cause, then run again") from None
    new = EditRecord(
        record.target,
        record.upstream,
        record.pin,
        [*record.patches, PatchCommit(patch_id, change.commits[0], sha256_bytes(data))],
    )
    writes[path] = (new.to_bytes(), current)
