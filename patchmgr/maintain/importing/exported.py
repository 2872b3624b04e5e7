"""Import of a folder that ``export --format series`` wrote: the target's own patches back, as they were.

A monolithic patch is ``git diff`` of a whole series; where one patch ended and the next began is in
``patchmgr-series/`` beside it (``maintain.series_layout``). Those patches are taken, byte for byte and in
their order, only when the monolith is the one exported (its sha256), at the pin recorded (a ``--pin``, a
Dockerfile's pin or the target's own pin naming another commit: not), with the URL recorded, and no other
split asked for (``--split hunk``, ``--map``); and then only when git proves that they give the monolith's
files at that pin. Otherwise the monolith is split as any other, and a note says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from patchmgr.maintain.importing.pieces import Piece, classify_pieces
from patchmgr.maintain.importing.pin import Base, FoundBy
from patchmgr.maintain.importing.places import checked
from patchmgr.maintain.importing.prove import Proof, prove
from patchmgr.maintain.importing.scratch import Scratch
from patchmgr.maintain.importing.sources import Declared, Monolith
from patchmgr.maintain.importing.write import UpstreamEntry
from patchmgr.maintain.series_layout import RECORD, RECORD_DIR, SeriesRecord, SeriesUpstream, piece_path, read_record
from patchmgr.model.errors import PatchmgrError
from patchmgr.model.input_files import MAX_PATCH_BYTES, read_input
from patchmgr.model.manifest import Upstream
from patchmgr.model.patchfile import PatchFile, parse_patch
from patchmgr.model.project import Project
from patchmgr.model.urls import without_credentials
from patchmgr.sources.upstream import GitSource, Sources


@dataclass(frozen=True)
class Given:
    """What the import's options and the Dockerfile say of one upstream."""

    git: str | None
    pin: str | None
    declared: Declared
    existing: Upstream | None
    other_split: bool  # --split hunk or --map


@dataclass(frozen=True)
class Recorded:
    """The exported patches of one upstream, proven: what the import writes for it."""

    base: Base
    proven: tuple[list[Piece], list[Proof]]
    entry: UpstreamEntry


def recorded_series(
    project: Project, monolith: Monolith, sources: Sources, scratch: Scratch, given: Given, notes: list[str]
) -> Recorded | None:
    """The patches export recorded for ``monolith``, proven at the recorded pin; None (and why, in ``notes``)
    when the monolith is to be split as any other."""
    folder = monolith.path.parent.resolve()
    record, entry = _recorded_entry(monolith)
    if record is None or entry is None:
        return None
    why = _differs(monolith, entry, sources, given)
    parsed = _patches(folder, entry) if why is None else why
    if isinstance(parsed, str):
        notes.append(f"{monolith.shown}: {parsed}; split as any monolithic patch ({RECORD_DIR}/ is not used)")
        return None
    name, pin = entry.name, entry.commit
    urls = sources.urls(Upstream(name, entry.git, (), pin, None, None, "", ()))
    fetched = sources.store.fetch_commit(name, pin, urls)
    repo, location = fetched.repo, fetched.url or urls[0]
    reader = GitSource(repo, pin, location)
    paths = sorted({*monolith.patch.touched_paths, *(p for patch, _ in parsed for p in patch.touched_paths)})
    proof = prove(scratch, reader, pin, monolith.patch.data, paths, [data for _, data in parsed])
    results = classify_pieces(sources, name, entry.git, repo, location, pin, pin, parsed)
    pieces = [
        Piece(
            patch.id,
            ", ".join(patch.touched_paths),
            result.state,
            result.state.applies,
            str(project.patch_path(name, patch.id).relative_to(project.root)),
            detail=result.detail,
        )
        for (patch, _), result in zip(parsed, results, strict=True)
    ]
    if not all(p.imported for p in pieces):
        proof = Proof(pin, False, 0, "; ".join(f"{p.id} is {p.state.value} at {pin[:12]}" for p in pieces))
    how = f"the pin of {name} that patchmgr export recorded in {RECORD_DIR}/{RECORD}"
    comment = f"imported from {monolith.shown}: the patches of target {record.target} that patchmgr export wrote there"
    version, pypi = (None, None) if given.existing else (entry.version, entry.pypi)
    patches = tuple((patch.id, data) for patch, data in parsed)
    entry_ = UpstreamEntry(name, entry.git, pin, comment, version, pypi, patches)
    return Recorded(Base(pin, FoundBy.GIVEN, how), (pieces, [proof]), entry_)


def declared_by_record(monolith: Monolith, declared: Declared) -> Declared:
    """The URL and pin of ``monolith``'s upstream as the Dockerfile gives them (a variable without a value is an
    error there already); where it gives none, those that export recorded beside the monolith: a monolith split
    as any other still starts from them."""
    _, entry = _recorded_entry(monolith)
    url, ref = declared.url, declared.ref
    if entry is None or (url and ref):
        return declared
    return Declared(url or entry.git, ref or entry.commit, declared.where or f"{monolith.shown}: {RECORD_DIR}/{RECORD}")


def _recorded_entry(monolith: Monolith) -> tuple[SeriesRecord | None, SeriesUpstream | None]:
    """The record export wrote beside ``monolith`` (read only inside its folder), and its upstream's entry."""
    folder = monolith.path.parent.resolve()
    checked(folder, folder / RECORD_DIR / RECORD, monolith.shown, "the record of patchmgr export")  # no link out
    record = read_record(folder)
    entry = record.upstream(monolith.upstream) if record else None
    return record, entry if entry is not None and entry.patch == monolith.path.name else None


def _differs(monolith: Monolith, entry: SeriesUpstream, sources: Sources, given: Given) -> str | None:
    """Why the recorded patches are not the monolith's (None: they are, once proven)."""
    if given.other_split:
        return "--split hunk or --map asks for other pieces than the exported patches"
    if monolith.patch.sha256 != entry.sha256:
        return "the patch changed since patchmgr export wrote it"
    if given.existing is not None and given.existing.commit != entry.commit:
        return f"the target pins {entry.name} at {given.existing.commit[:12]}, the export at {entry.commit[:12]}"
    url = given.git or given.declared.url
    if url is not None and without_credentials(url) != entry.git:
        return f"its git URL is given as {without_credentials(url)}, the export's is {entry.git}"
    ref = given.pin or given.declared.ref
    if ref is None or (len(ref) >= 7 and entry.commit.startswith(ref)):
        return None
    urls = sources.urls(Upstream(entry.name, entry.git, (), entry.commit, None, None, "", ()))
    try:
        commit = sources.store.resolve_ref(entry.name, ref, urls).commit
    except PatchmgrError:
        commit = None
    return None if commit == entry.commit else f"its pin is given as {ref}, the export's is {entry.commit[:12]}"


def _patches(folder: Path, entry: SeriesUpstream) -> list[tuple[PatchFile, bytes]] | str:
    """The recorded patch files, read only inside ``folder`` (no link out of it); what is missing, as text."""
    out = []
    for patch_id in entry.patch_ids:
        path = checked(folder, piece_path(folder, entry.name, patch_id), f"{RECORD_DIR}/{RECORD}", "the patch")
        if not path.is_file():
            return f"{RECORD_DIR}/ lacks {entry.name}/{patch_id}.patch"
        data = read_input(path, str(path), f"restore {RECORD_DIR}/ as export wrote it", limit=MAX_PATCH_BYTES)
        out.append((parse_patch(data, Path(f"{patch_id}.patch"), entry.name, patch_id), data))
    return out
