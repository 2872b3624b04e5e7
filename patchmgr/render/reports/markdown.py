"""``status --format markdown``: a GitHub-flavoured Markdown summary for a CI job (``>> $GITHUB_STEP_SUMMARY``).

Per target: one line that says whether every patch applies, then a table (upstream, patch, state, verdict,
detail) and the refs that were checked. Words only, no emoji. Every text from outside (ids, details, upstream
lines, reasons) is escaped so that it reads as written: a ``|`` does not split a cell, ``<tag>`` is not HTML,
``*`` and ``_`` do not emphasise, ``$`` does not start maths, a new line is a ``<br>`` inside its cell, and a
control character is shown, never passed on (``outside.for_markdown``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from patchmgr.render.outside import for_markdown as md_escape
from patchmgr.render.reports.rows import ERROR, FAIL, PASS, WARN, counts, rows, short_ref, upstream_rows

if TYPE_CHECKING:
    from patchmgr.check.status import TargetStatus, UpstreamStatus


def render_markdown(statuses: list[TargetStatus]) -> str:
    parts = [_target(status) for status in statuses]
    return "\n".join(parts)


def _headline(items: list) -> str:
    tally = counts(items)
    total = len(items)
    said = ", ".join(f"{tally[v]} {v}" for v in (PASS, WARN, FAIL, ERROR) if tally[v])
    if tally[FAIL] or tally[ERROR]:
        return f"**{tally[FAIL] + tally[ERROR]} of {total} patches need attention** ({said})"
    return f"**all {total} patches apply** ({said})" if total else "**no patches**"


def _target(status: TargetStatus) -> str:
    items = list(rows([status]))
    lines = [f"### patchmgr status: target {md_escape(status.target.name)}", "", _headline(items), ""]
    lines += ["| upstream | patch | state | verdict | detail |", "| --- | --- | --- | --- | --- |"]
    for upstream_status in status.upstreams:
        for row in upstream_rows(status.target.name, upstream_status):
            details = row.details if row.result is None else [_after_state(row.summary, row.state), *row.details[1:]]
            detail = "\n".join(line for line in details if line)
            lines.append(
                "| "
                + " | ".join(md_escape(cell) for cell in (row.upstream, row.patch_id, row.state, row.verdict, detail))
                + " |"
            )
    lines.append("")
    lines += [_checked(u) for u in status.upstreams]
    lines += [f"- warning: {md_escape(w, ' ')}" for w in status.warnings]
    return "\n".join(lines) + "\n"


def _after_state(summary: str, state: str) -> str:
    """The summary without its leading ``state: `` (the table has a state column)."""
    return summary.removeprefix(f"{state}: ") if summary != state else ""


def _checked(status: UpstreamStatus) -> str:
    name = md_escape(status.upstream.name)
    if not status.available:
        return f"- {name}: could not be checked at {md_escape(short_ref(status.ref), ' ')}"
    commit = f" (commit {status.commit[:12]})" if status.commit and status.commit != status.ref else ""
    source = f", from {md_escape(status.source, ' ')}" if status.source else ""
    notes = "".join(f"; note: {md_escape(n, ' ')}" for n in status.notes)
    return f"- {name}: checked at {md_escape(short_ref(status.ref), ' ')}{commit}{source}{notes}"
