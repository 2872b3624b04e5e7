"""``patchmgr targets``: each target, its upstreams and their pins (and a source set outside the manifest), for
people and as JSON."""

from __future__ import annotations

from rich.console import Console

from patchmgr.model.manifest import Target, Upstream
from patchmgr.render.console import patches, say
from patchmgr.render.outside import one_line
from patchmgr.sources.settings import SourceSetting


def upstream_json(upstream: Upstream, setting: SourceSetting | None) -> dict:
    return {
        "name": upstream.name,
        "commit": upstream.commit,
        "version": upstream.version,
        "pypi": upstream.pypi,
        "git": list(upstream.urls),  # masked as every output is (render/outside)
        "patches": len(upstream.patch_ids),
        "source": None if setting is None else {"location": setting.location, "given_by": setting.given_by},
    }


def targets_json(targets: list[Target], broken: list[str], settings: dict[str, SourceSetting]) -> dict:
    return {
        "targets": [
            {
                "name": target.name,
                "description": target.description,
                "manifest": str(target.path),
                "upstreams": [upstream_json(u, settings.get(u.name)) for u in target.upstreams],
            }
            for target in targets
        ],
        "broken": broken,
    }


def render_targets(
    console: Console, targets: list[Target], broken: list[str], settings: dict[str, SourceSetting]
) -> None:
    for target in targets:
        # one line, whatever the manifest's free text holds: a line break in it would read as an upstream's line
        say(console, target.name + (f"  {one_line(target.description)}" if target.description else ""), "bold")
        for upstream in target.upstreams:
            version = f" ({upstream.version})" if upstream.version else ""
            where = f"  {upstream.urls[0]}" if upstream.urls else f"  PyPI {upstream.pypi}"
            count = patches(len(upstream.patch_ids))
            say(console, f"  {upstream.name}  pin {upstream.commit[:12]}{version}  {count}{where}")
            if upstream.name in settings:
                setting = settings[upstream.name]
                say(console, f"    source {setting.location}, given by {setting.given_by}")
    for line in broken:
        say(console, f"warning: {line}", "yellow")
    if not targets and not broken:
        say(console, "no targets: the project has no manifests/<target>.toml", "yellow")
