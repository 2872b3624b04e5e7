"""patchmgr fetch: fill the cache with each upstream at its pin, so a later apply needs no network."""

from __future__ import annotations

from pathlib import Path

from patchmgr.cli import options
from patchmgr.cli.session import Session
from patchmgr.model.errors import PatchmgrError


def command(
    target: options.NeededTargetOpt = None,
    upstream: options.UpstreamsOpt = None,
    source: options.SourceOpt = None,
    json_output: options.JsonOpt = False,
    root: options.RootOpt = Path("."),
) -> int:
    from patchmgr.render.status import fetch_json, render_fetch

    session = Session("fetch", root, json_output)
    selected, overrides, only = session.sourced_target(target, source, upstream)
    fetched: dict[str, dict] = {}
    with session.sources(overrides) as sources:
        for entry in selected.upstreams:
            if only and entry.name not in only:
                continue
            try:
                where, absent = sources.fetch(entry)
                fetched[entry.name] = {"ok": True, "source": where, "absent": absent}
            except PatchmgrError as exc:
                fetched[entry.name] = {"ok": False, "error": exc.message}
    code = 0 if all(f["ok"] for f in fetched.values()) else 1
    return session.emit(code, fetch_json, render_fetch, selected.name, fetched)
