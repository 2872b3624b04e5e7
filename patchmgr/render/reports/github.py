"""``status --format github``: GitHub Actions workflow commands, which the runner turns into annotations.

A patch that fails is an ``::error`` on its patch file, at the line of the hunk that fails (1 when no hunk
is to blame); one that applies with moved hunks (offset) is a ``::warning`` there; an upstream that could
not be checked is an ``::error`` on its target's manifest. A plain line per patch keeps the log readable,
each note of an upstream is a ``::notice``, and a closing ``::notice`` counts the verdicts. Values are escaped
as the runner unescapes them: ``%``, CR and LF in messages, and also ``:`` and ``,`` in properties (file,
line, title); control characters are shown, never passed on (``outside``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from patchmgr.render.outside import for_github_data as escape_data
from patchmgr.render.outside import for_github_log
from patchmgr.render.outside import for_github_property as escape_property
from patchmgr.render.reports.rows import (
    ERROR,
    FAIL,
    PASS,
    WARN,
    counts,
    display_path,
    patch_file,
    patch_line,
    rows,
    short_ref,
    upstream_rows,
)

if TYPE_CHECKING:
    from patchmgr.check.status import TargetStatus


def command(name: str, message: str, **properties: str | int) -> str:
    props = ",".join(f"{key}={escape_property(str(value))}" for key, value in properties.items())
    return f"::{name}{' ' + props if props else ''}::{escape_data(message)}"


def render_github(statuses: list[TargetStatus], base: Path) -> str:
    lines: list[str] = []
    for target_status in statuses:
        target = target_status.target.name
        for status in target_status.upstreams:
            items = upstream_rows(target, status)
            for row in items:
                lines.append(for_github_log(f"{row.verdict}: {target}.{row.upstream} {row.patch_id}: {row.summary}"))
                lines += [for_github_log(f"  {line}") for line in row.backports]
            for note in status.notes:  # what was left out and why (a tag that names no commit), as text says it
                lines.append(command("notice", note, title=f"patchmgr: {target}.{status.upstream.name}"))
            if not status.available:
                lines.append(
                    command(
                        "error",
                        "\n".join(items[0].details),
                        file=display_path(target_status.target.path, base),
                        line=1,
                        title=f"patchmgr: {target}.{status.upstream.name} could not be checked",
                    )
                )
                continue
            for row in items:
                if row.verdict in (FAIL, WARN):
                    lines.append(
                        command(
                            "error" if row.verdict == FAIL else "warning",
                            "\n".join(row.details),
                            file=patch_file(row, base),
                            line=patch_line(row),
                            title=f"patchmgr: {row.upstream}/{row.patch_id} {row.kind} at {short_ref(status.ref)}",
                        )
                    )
        for warning in target_status.warnings:
            lines.append(command("warning", warning, title="patchmgr"))
        tally = counts(rows([target_status]))
        said = ", ".join(f"{tally[v]} {v}" for v in (PASS, WARN, FAIL, ERROR) if tally[v]) or "no patches"
        lines.append(command("notice", f"target {target}: {said}", title="patchmgr status"))
    return "\n".join(lines) + "\n"
