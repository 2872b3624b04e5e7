"""patchmgr fetch: fill the cache with each upstream at its pin (and --against refs), so a later apply (and edit
--onto those refs) needs no network."""

from __future__ import annotations

from pathlib import Path

from patchmgr.cli import options
from patchmgr.cli.session import Session
from patchmgr.model.errors import PatchmgrError


def command(
    target: options.NeededTargetOpt = None,
    upstream: options.UpstreamsOpt = None,
    against: options.AgainstOpt = None,
    source: options.SourceOpt = None,
    json_output: options.JsonOpt = False,
    root: options.RootOpt = Path("."),
) -> int:
    from patchmgr.render.status import fetch_json, render_fetch

    session = Session("fetch", root, json_output)
    given, asked, only = options.source_overrides(source), options.against_refs(against), upstream or []
    selected = session.target(target, given, asked, only)
    overrides, refs = options.for_targets([selected], given), options.for_targets([selected], asked)
    fetched: dict[str, dict] = {}
    with session.sources(overrides) as sources:
        for entry in selected.upstreams:
            if only and entry.name not in only:
                continue
            for key, at in _wanted(entry.name, refs.get(entry.name)):
                try:
                    commit = sources.resolve_ref(entry, at).commit if at else None
                    where, absent = sources.fetch(entry, commit)
                    fetched[key] = {"name": entry.name, "ref": at, "ok": True, "source": where, "absent": absent}
                except PatchmgrError as exc:
                    fetched[key] = {"name": entry.name, "ref": at, "ok": False, "error": exc.message}
    code = 0 if all(f["ok"] for f in fetched.values()) else 1
    return session.emit(code, fetch_json, render_fetch, selected.name, fetched)


def _wanted(name: str, against: str | None) -> list[tuple[str, str | None]]:
    """What to fetch of upstream ``name``, as (the key in the output, the ref): its pin (no ref), then the
    ``--against`` ref where one is given."""
    pin: list[tuple[str, str | None]] = [(name, None)]
    return [*pin, (f"{name} at {against}", against)] if against else pin
