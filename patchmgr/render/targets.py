"""``patchmgr targets``: each target, its upstreams and their pins, for people and as JSON."""

from __future__ import annotations

from rich.console import Console

from patchmgr.model.manifest import Target, Upstream
from patchmgr.model.urls import mask_url
from patchmgr.render.console import patches, say


def upstream_json(upstream: Upstream) -> dict:
    return {
        "name": upstream.name,
        "commit": upstream.commit,
        "version": upstream.version,
        "pypi": upstream.pypi,
        "git": [mask_url(url) for url in upstream.urls],
        "patches": len(upstream.patch_ids),
    }


def targets_json(targets: list[Target], broken: list[str]) -> dict:
    return {
        "targets": [
            {
                "name": target.name,
                "description": target.description,
                "manifest": str(target.path),
                "upstreams": [upstream_json(u) for u in target.upstreams],
            }
            for target in targets
        ],
        "broken": broken,
    }


def render_targets(console: Console, targets: list[Target], broken: list[str]) -> None:
    for target in targets:
        say(console, target.name + (f"  {target.description}" if target.description else ""), "bold")
        for upstream in target.upstreams:
            version = f" ({upstream.version})" if upstream.version else ""
            where = f"  {mask_url(upstream.urls[0])}" if upstream.urls else f"  PyPI {upstream.pypi}"
            count = patches(len(upstream.patch_ids))
            say(console, f"  {upstream.name}  pin {upstream.commit[:12]}{version}  {count}{where}")
    for line in broken:
        say(console, f"warning: {line}", "yellow")
    if not targets and not broken:
        say(console, "no targets: the project has no manifests/<target>.toml", "yellow")
