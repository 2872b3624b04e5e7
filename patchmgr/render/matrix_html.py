"""matrix --html: one self-contained page (inline CSS and script, nothing fetched) with the grid, a legend,
each cell's detail on hover (its title) and on click, and the first change of each row."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from patchmgr.render.matrix import GUARD_BROKEN, LEGEND, cell_detail, cell_label, change_text, column_title
from patchmgr.render.outside import for_html as escape

if TYPE_CHECKING:
    from patchmgr.history.matrix import Change, Matrix


STYLE = """
body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px; color: #1d2125; }
h1 { font-size: 20px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 28px 0 4px; }
.meta { color: #5f6b76; margin: 0 0 10px; }
table.matrix { border-collapse: collapse; }
.matrix th, .matrix td { border: 1px solid #d5dbe1; padding: 6px 10px; text-align: left; vertical-align: top; }
.matrix thead th { background: #f3f5f7; font-weight: 600; white-space: nowrap; }
.matrix thead th small { display: block; font-weight: 400; color: #5f6b76; font-family: ui-monospace, monospace; }
.matrix th.patch { font-family: ui-monospace, monospace; font-weight: 600; background: #fafbfc; }
td.cell { color: #fff; font-weight: 600; text-align: center; cursor: pointer; white-space: nowrap; min-width: 84px; }
td.cell:focus, td.cell.chosen { outline: 3px solid #1d2125; outline-offset: -3px; }
td.cell .guard { display: block; font-size: 11px; background: #fff; color: #b00020; border-radius: 3px;
                 margin-top: 3px; padding: 0 4px; }
td.change { color: #39434d; max-width: 520px; font-size: 13px; }
td.change code { font-family: ui-monospace, monospace; }
.legend { display: flex; flex-wrap: wrap; gap: 10px 18px; margin: 12px 0; padding: 0; list-style: none; }
.legend li { display: flex; align-items: center; gap: 6px; }
.swatch { display: inline-block; width: 14px; height: 14px; border-radius: 3px; }
#detail { margin-top: 16px; padding: 10px 14px; border-left: 4px solid #2a9fd6; background: #f3f5f7;
          white-space: pre-wrap; font-family: ui-monospace, monospace; font-size: 13px; min-height: 1.4em; }
.notes { color: #8a5a00; }
"""

SCRIPT = """
(function () {
  var panel = document.getElementById('detail');
  function show(cell) {
    document.querySelectorAll('td.cell.chosen').forEach(function (c) { c.classList.remove('chosen'); });
    cell.classList.add('chosen');
    panel.textContent = cell.getAttribute('data-patch') + ' at ' + cell.getAttribute('data-column') + ': '
      + cell.getAttribute('data-state') + '\\n' + (cell.getAttribute('data-detail') || '(no detail)');
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


def render_matrix_html(matrices: list[Matrix], target: str) -> str:
    """The page: one section per upstream. Every text comes from escape() (``outside.for_html``): nothing a patch
    or an upstream says is read as markup, and no control character or byte that is not UTF-8 reaches the page."""
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
<p class="meta">Each cell: the patch's state at that upstream commit. Hover a cell for its detail, or click it.
The last column names the first upstream commit where the patch changed.</p>
<ul class="legend" id="legend">{legend}</ul>
{sections}
<div id="detail" aria-live="polite">Click a cell to see its detail here.</div>
<script>{SCRIPT}</script>
</body>
</html>
"""


def _section(number: int, matrix: Matrix) -> str:
    name = matrix.upstream.name
    if matrix.error is not None:
        hint = f"<br>hint: {escape(matrix.hint)}" if matrix.hint else ""
        return (
            f'<section class="upstream" data-upstream="{_attr(name)}"><h2>{escape(name)}</h2>'
            f'<p class="notes">unavailable, no source could provide it: {escape(matrix.error)}{hint}</p></section>'
        )
    head = "".join(
        f'<th data-column="{_attr(c.name)}" title="{_attr(f"{c.commit}: {c.rule}" if c.rule else c.commit)}">'
        f"{escape(column_title(c))}"
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
            cells.append(
                f'<td id="c-{number}-{row_number}-{column_number}" class="cell state-{result.state.value}"'
                f' tabindex="0" style="background:{LEGEND[result.state].colour}"'
                f' data-patch="{_attr(row.patch.id)}" data-column="{_attr(column.name)}"'
                f' data-state="{_attr(cell_label(result))}" data-detail="{_attr(detail)}"'
                f' title="{_attr(hover)}">{escape(result.state.value)}{guard}</td>'
            )
        rows.append(
            f'<tr data-patch="{_attr(row.patch.id)}"><th class="patch" scope="row">{escape(row.patch.id)}</th>'
            + "".join(cells)
            + f'<td class="change">{_change_html(row.change)}</td></tr>'
        )
    notes = "".join(f"<li>{escape(note)}</li>" for note in matrix.notes)
    data = json.dumps({"upstream": name, "ok": matrix.ok})
    return f"""<section class="upstream" data-upstream="{_attr(name)}" data-summary="{_attr(data)}">
<h2>{escape(name)}</h2>
<p class="meta">pin {escape(matrix.upstream.commit)} · from {escape(matrix.source)}</p>
<table class="matrix">
<thead><tr><th>patch</th>{head}<th>first change</th></tr></thead>
<tbody>
{chr(10).join(rows)}
</tbody>
</table>
{f'<ul class="notes">{notes}</ul>' if notes else ""}
</section>"""


def _change_html(change: Change | None) -> str:
    if change is None or change.commit is None:
        return escape(change_text(change))
    text = change_text(change)
    short = change.commit[:12]
    rest = text.split(short, 1)
    return (
        f'{escape(rest[0])}<code title="{_attr(change.commit)}">{short}</code>{escape(rest[1])}'
        f' <span class="meta">(toward {escape(change.column)})</span>'
    )
