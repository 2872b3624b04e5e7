"""patchmgr fetch: fill the cache with each upstream at its pin, so a later apply needs no network."""

from __future__ import annotations

from pathlib import Path

from patchmgr.cli.options import (
    JsonOpt,
    NeededTargetOpt,
    RootOpt,
    SourceOpt,
    UpstreamsOpt,
    for_targets,
    source_overrides,
)
from patchmgr.cli.session import Session
from patchmgr.model.errors import PatchmgrError


def command(
    target: NeededTargetOpt = None,
    upstream: UpstreamsOpt = None,
    source: SourceOpt = None,
    json_output: JsonOpt = False,
    root: RootOpt = Path("."),
) -> int:
    from patchmgr.render.status import fetch_json, render_fetch
    from patchmgr.sources.upstream import fetch_upstream

    session = Session("fetch", root, json_output)
    given, only = source_overrides(source), upstream or []
    selected = session.target(target, given, only)
    overrides = for_targets([selected], given)
    fetched: dict[str, dict] = {}
    with session.store() as store:
        for entry in selected.upstreams:
            if only and entry.name not in only:
                continue
            try:
                where, absent = fetch_upstream(store, entry, overrides)
                fetched[entry.name] = {"ok": True, "source": where, "absent": absent}
            except PatchmgrError as exc:
                fetched[entry.name] = {"ok": False, "error": exc.message}
    code = 0 if all(f["ok"] for f in fetched.values()) else 1
    return session.emit(code, fetch_json, render_fetch, selected.name, fetched)
