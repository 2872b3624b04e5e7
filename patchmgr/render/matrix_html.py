"""matrix --html: one self-contained page (inline CSS and script, nothing fetched) with the overall verdict at
the top, when and from which manifest commit it was made, the grid of each upstream beside a detail panel
that stays in view, a legend, each cell's detail on hover (its title) and on click, the first change of each
row, and links to each commit and pull request on the upstream's web pages (GitHub, GitCode: ``weblinks``)."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

from patchmgr.engine.results import carried_clause
from patchmgr.model.weblinks import WebRepo, first_web_repo
from patchmgr.render.matrix import GUARD_BROKEN, LEGEND, cell_detail, cell_label, change_text, column_title
from patchmgr.render.outside import for_html as escape

if TYPE_CHECKING:
    from patchmgr.history.matrix import Change, Matrix
    from patchmgr.history.provenance import Provenance


STYLE = """
body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 20px 24px; color: #1d2125; }
h1 { font-size: 20px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 22px 0 4px; }
a { color: #0b5cad; }
.meta { color: #5f6b76; margin: 0 0 8px; }
.verdict { margin: 8px 0 4px; padding: 8px 12px; border-radius: 4px; border-left: 6px solid; }
.verdict.ok { background: #e9f6ec; border-color: #1f8f3a; }
.verdict.bad { background: #fbeaea; border-color: #d9534f; }
.verdict ul { margin: 4px 0 0; padding-left: 20px; }
.layout { display: grid; grid-template-columns: minmax(0, 1fr) minmax(300px, 30%); gap: 20px; align-items: start; }
.layout main { min-width: 0; overflow-x: auto; }
#panel { position: sticky; top: 12px; max-height: calc(100vh - 24px); overflow: auto; margin-top: 22px;
         border-left: 4px solid #2a9fd6; background: #f3f5f7; padding: 10px 14px; }
#panel h3 { margin: 0 0 6px; font-size: 14px; }
@media (max-width: 900px) { .layout { grid-template-columns: 1fr; } #panel { position: static; } }
table.matrix { border-collapse: collapse; }
.matrix th, .matrix td { border: 1px solid #d5dbe1; padding: 6px 10px; text-align: left; vertical-align: top; }
.matrix thead th { background: #f3f5f7; font-weight: 600; white-space: nowrap; }
.matrix thead th small { display: block; font-weight: 400; color: #5f6b76; font-family: ui-monospace, monospace; }
.matrix th.patch { font-family: ui-monospace, monospace; font-weight: 600; background: #fafbfc; }
td.cell { color: #fff; font-weight: 600; text-align: center; cursor: pointer; white-space: nowrap; min-width: 84px; }
td.cell:focus, td.cell.chosen { outline: 3px solid #1d2125; outline-offset: -3px; }
td.cell .carried { display: block; font-size: 11px; font-weight: 400; white-space: normal; }
td.cell .guard { display: block; font-size: 11px; background: #fff; color: #b00020; border-radius: 3px;
                 margin-top: 3px; padding: 0 4px; }
td.change { color: #39434d; max-width: 460px; font-size: 13px; }
td.change code { font-family: ui-monospace, monospace; }
.legend { display: flex; flex-wrap: wrap; gap: 6px 16px; margin: 10px 0; padding: 0; list-style: none; }
.legend li { display: flex; align-items: center; gap: 6px; }
.swatch { display: inline-block; width: 14px; height: 14px; border-radius: 3px; }
#detail { white-space: pre-wrap; font-family: ui-monospace, monospace; font-size: 13px; min-height: 1.4em; }
#links a { display: block; margin-top: 6px; }
.notes { color: #8a5a00; }
"""

SCRIPT = """
(function () {
  var panel = document.getElementById('detail'), links = document.getElementById('links');
  function link(href, text) {
    if (!href) { return; }
    var a = document.createElement('a');
    a.setAttribute('href', href);
    a.textContent = text;
    links.appendChild(a);
  }
  function show(cell) {
    document.querySelectorAll('td.cell.chosen').forEach(function (c) { c.classList.remove('chosen'); });
    cell.classList.add('chosen');
    panel.textContent = cell.getAttribute('data-patch') + ' at ' + cell.getAttribute('data-column') + ': '
      + cell.getAttribute('data-state') + '\\n' + (cell.getAttribute('data-detail') || '(no detail)');
    links.textContent = '';
    link(cell.getAttribute('data-commit-url'), 'commit ' + cell.getAttribute('data-column'));
    link(cell.getAttribute('data-carrier-url'), 'the upstream commit that carries it');
  }
  document.querySelectorAll('td.cell').forEach(function (cell) {
    cell.addEventListener('click', function () { show(cell); });
    cell.addEventListener('keydown', function (e) { if (e.key === 'Enter' || e.key === ' ') { show(cell); } });
  });
  var linked = location.hash && document.getElementById(location.hash.slice(1));  // page.html#c-0-1-2
  if (linked && linked.classList.contains('cell')) { show(linked); }
})();
"""


def _attr(text: str) -> str:
    return escape(text)  # quotes too: every attribute is in double quotes


def _link(url: str | None, html: str) -> str:
    """``html`` as a link to ``url`` (one ``weblinks`` made: https, on a known forge), or as it is without one."""
    return f'<a href="{_attr(url)}">{html}</a>' if url else html


def render_matrix_html(matrices: list[Matrix], target: str, made: Provenance | None = None) -> str:
    """The page: the verdict, then one section per upstream beside the detail panel. Every text comes from
    escape() (``outside.for_html``): nothing a patch or an upstream says is read as markup, and no control
    character or byte that is not UTF-8 reaches the page."""
    sections = "\n".join(_section(number, matrix) for number, matrix in enumerate(matrices))
    legend = "".join(
        f'<li><span class="swatch" style="background:{key.colour}"></span><b>{state.value}</b> '
        f"{escape(key.meaning)}</li>"
        for state, key in LEGEND.items()
    )
    legend += (
        f'<li><span class="swatch" style="background:#fff;border:2px solid #b00020"></span>'
        f"<b>{GUARD_BROKEN}</b> a Guard: header does not hold</li>"
    )
    title = f"patchmgr matrix: target {target}"
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)}</title>
<style>{STYLE}</style>
</head>
<body>
<h1>{escape(title)}</h1>
{_made(made)}
{_verdict(matrices)}
<ul class="legend" id="legend">{legend}</ul>
<div class="layout">
<main>
<p class="meta">Each cell: the patch's state at that upstream commit. Hover a cell for its detail, or click it.
The last column names the first upstream commit where the patch changed.</p>
{sections}
</main>
<aside id="panel" aria-label="detail"><h3>Detail</h3>
<div id="detail" aria-live="polite">Click a cell to see its detail here.</div>
<nav id="links"></nav>
</aside>
</div>
<script>{SCRIPT}</script>
</body>
</html>
"""


def _made(made: Provenance | None) -> str:
    if made is None:
        return ""
    if made.commit is None:
        source = f"from {escape(made.manifest)} (not in a commit)"
    else:
        edited = ", with changes not committed" if made.changed else ""
        source = f"from {escape(made.manifest)} at commit <code>{escape(made.commit[:12])}</code>{edited}"
    return f'<p class="meta" id="made" data-commit="{_attr(made.commit or "")}">Made {made.made_text} {source}.</p>'


def _verdict(matrices: list[Matrix]) -> str:
    """One line for the whole target, then one per upstream that needs attention."""
    bad = [m for m in matrices if not m.ok]
    patches = sum(len(m.rows) for m in matrices)
    if not bad:
        return (
            f'<div class="verdict ok" id="verdict" data-ok="true"><b>All {patches} patches apply</b> at the newest '
            f"release of each of the {len(matrices)} upstreams.</div>"
        )
    items = []
    for matrix in bad:
        name = escape(matrix.upstream.name)
        if matrix.error is not None:
            items.append(f'<li><a href="#u-{_attr(matrix.upstream.name)}">{name}</a>: could not be checked</li>')
            continue
        column = matrix.columns[matrix.verdict_column]
        failing = [
            f"{row.patch.id} ({cell_label(row.cells[matrix.verdict_column])})"
            for row in matrix.rows
            if not row.cells[matrix.verdict_column].ok
        ]
        items.append(
            f'<li><a href="#u-{_attr(matrix.upstream.name)}">{name}</a> at {escape(column.name)}: '
            f"{len(failing)} of {len(matrix.rows)} patches: {escape(', '.join(failing))}</li>"
        )
    return (
        f'<div class="verdict bad" id="verdict" data-ok="false"><b>{len(bad)} of {len(matrices)} upstreams need '
        f"attention</b> at their newest release:<ul>{''.join(items)}</ul></div>"
    )


def _section(number: int, matrix: Matrix) -> str:
    name = matrix.upstream.name
    anchor = f'id="u-{_attr(name)}" data-upstream="{_attr(name)}"'
    if matrix.error is not None:
        hint = f"<br>hint: {escape(matrix.hint)}" if matrix.hint else ""
        return (
            f'<section class="upstream" {anchor}><h2>{escape(name)}</h2>'
            f'<p class="notes">unavailable, no source could provide it: {escape(matrix.error)}{hint}</p></section>'
        )
    web = first_web_repo(matrix.upstream.urls)
    commit_url = web.commit if web is not None else (lambda _sha: None)
    head = "".join(
        f'<th data-column="{_attr(c.name)}" title="{_attr(f"{c.commit}: {c.rule}" if c.rule else c.commit)}">'
        f"{_link(commit_url(c.commit), escape(column_title(c)))}"
        f"<small>{escape(c.commit[:12])}</small></th>"
        for c in matrix.columns
    )
    rows = []
    for row_number, row in enumerate(matrix.rows):
        cells = []
        for column_number, (column, result) in enumerate(zip(matrix.columns, row.cells, strict=False)):
            detail = cell_detail(result)
            hover = f"{row.patch.id} at {column.name} ({column.commit[:12]}): {cell_label(result)}" + (
                f"\n{detail}" if detail else ""
            )
            guard = "" if result.guards_hold else f'<span class="guard">{GUARD_BROKEN}</span>'
            # the state word stays on one line; what carries it goes under it, free to wrap (a column as wide as
            # "upstream (carried by 85323c5cc888, changed since)" pushed the grid past its frame)
            clause = carried_clause(result.state, result.carrier, result.changed_since)
            carried = f'<span class="carried">{escape(clause)}</span>' if clause else ""
            urls = f' data-commit-url="{_attr(commit_url(column.commit) or "")}"'
            carrier = commit_url(result.carrier) if result.carrier else None
            urls += f' data-carrier-url="{_attr(carrier)}"' if carrier else ""
            cells.append(
                f'<td id="c-{number}-{row_number}-{column_number}" class="cell state-{result.state.value}"'
                f' tabindex="0" style="background:{LEGEND[result.state].colour}"'
                f' data-patch="{_attr(row.patch.id)}" data-column="{_attr(column.name)}"'
                f' data-state="{_attr(cell_label(result))}" data-detail="{_attr(detail)}"{urls}'
                f' title="{_attr(hover)}">{escape(result.state.value)}{carried}{guard}</td>'
            )
        rows.append(
            f'<tr data-patch="{_attr(row.patch.id)}"><th class="patch" scope="row">{escape(row.patch.id)}</th>'
            + "".join(cells)
            + f'<td class="change">{_change_html(row.change, web)}</td></tr>'
        )
    notes = "".join(f"<li>{escape(note)}</li>" for note in matrix.notes)
    data = json.dumps({"upstream": name, "ok": matrix.ok})
    pin = matrix.upstream.commit
    where = f' · <a href="{_attr(web.url)}">{escape(web.url)}</a>' if web is not None else ""
    return f"""<section class="upstream" {anchor} data-summary="{_attr(data)}">
<h2>{escape(name)}</h2>
<p class="meta">pin {_link(commit_url(pin), escape(pin))} · from {escape(matrix.source)}{where}</p>
<table class="matrix">
<thead><tr><th>patch</th>{head}<th>first change</th></tr></thead>
<tbody>
{chr(10).join(rows)}
</tbody>
</table>
{f'<ul class="notes">{notes}</ul>' if notes else ""}
</section>"""


def _change_html(change: Change | None, web: WebRepo | None) -> str:
    if change is None or change.commit is None:
        return escape(change_text(change))
    text = change_text(change)
    short = change.commit[:12]
    rest = text.split(short, 1)
    code = f'<code title="{_attr(change.commit)}">{short}</code>'
    tail = escape(rest[1] if len(rest) > 1 else "")
    if web is not None:
        code = _link(web.commit(change.commit), code)
        if change.pr is not None:  # the subject's own "#1234" (or GitCode's "!1234") becomes the link
            link = f'<a class="pr" href="{_attr(web.pull(change.pr))}">{{}}</a>'
            named = list(re.finditer(rf"[#!]{change.pr}(?!\d)", tail))
            if named:
                at = named[-1]
                tail = tail[: at.start()] + link.format(at.group()) + tail[at.end() :]
            else:
                tail += " " + link.format(f"#{change.pr}")
    return f'{escape(rest[0])}{code}{tail} <span class="meta">(toward {escape(change.column)})</span>'
