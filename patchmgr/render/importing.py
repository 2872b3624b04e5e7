"""import: what was found, split, left out and proven, as lines and a table, or one JSON document."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

from patchmgr.render.console import STATE_STYLE, notes, row

if TYPE_CHECKING:
    from patchmgr.maintain.importing.plan import ImportOutcome


def import_json(outcome: ImportOutcome) -> dict:
    return {
        "target": outcome.target,
        "action": outcome.action,
        "upstreams": [
            {
                "name": u.name,
                "source": u.source,
                "git": u.git,
                "base": {
                    "commit": u.base.commit,
                    "how": u.base.how,
                    "detail": u.base.detail,
                    "tag": u.base.tag,
                    "partial": u.base.partial,
                    "blobs_matched": (
                        {"files": u.base.matched, "of": u.base.of} if u.base.matched is not None else None
                    ),
                },
                "pin": u.pin,
                "pieces": [
                    {
                        "id": p.id,
                        "takes": p.label,
                        "state": p.state.value,
                        "imported": p.imported,
                        "path": p.path,
                        "evidence": p.evidence,
                        "carrier": p.carrier,
                        "at_given_pin": p.at_given_pin,
                    }
                    for p in u.pieces
                ],
                "proofs": [{"commit": p.commit, "ok": p.ok, "files": p.files, "detail": p.detail} for p in u.proofs],
                "proven": u.proven,
                "notes": u.notes,
            }
            for u in outcome.upstreams
        ],
        "written": sorted(str(p) for p in outcome.writes) if outcome.action == "imported" else [],
        "notes": outcome.notes,
    }


def render_import(console: Console, outcome: ImportOutcome) -> None:
    for upstream in outcome.upstreams:
        console.print(f"{upstream.name}: {upstream.source}", style="bold", highlight=False)
        console.print(f"  base {upstream.base.commit[:12]}: {upstream.base.detail}", highlight=False)
        if upstream.base.partial:
            console.print(
                f"  warning: a partial match: only {upstream.base.matched} of {upstream.base.of} files' "
                "index-line blobs match the base; check it, or pass --pin NAME=REF",
                style="red",
                highlight=False,
            )
        if upstream.pin != upstream.base.commit:
            console.print(f"  pin  {upstream.pin[:12]} (given)", highlight=False)
        table = Table(title_justify="left")
        for column in ("piece", "takes", "state at pin", "result"):
            table.add_column(column, overflow="fold")
        for piece in upstream.pieces:
            if not piece.imported:
                result = f"left out: {piece.evidence}"
            else:
                result = piece.path or ""  # an imported piece has its file's path
                if piece.state.value != "clean":
                    result += " (made again at the pin: applies exactly)"
            row(table, piece.id, piece.label, Text(piece.state.value, style=STATE_STYLE[piece.state]), result)
        console.print(table)
        for proof in upstream.proofs:
            console.print(
                f"  {'proven' if proof.ok else 'NOT proven'}: {proof.detail}",
                style="green" if proof.ok else "red",
                highlight=False,
            )
        for note in upstream.notes:
            console.print(f"  note: {note}", style="yellow", highlight=False)
    notes(console, outcome.notes)
    imported = sum(p.imported for u in outcome.upstreams for p in u.pieces)
    left = sum(not p.imported for u in outcome.upstreams for p in u.pieces)
    counts = f"{imported} piece(s) of {len(outcome.upstreams)} upstream(s)" + (
        f", {left} left out (upstream carries them)" if left else ""
    )
    if outcome.action == "imported":
        console.print(
            f"imported {counts} into target {outcome.target}; fill the DEP-3 stubs (patchmgr lint lists them)",
            style="green",
            highlight=False,
        )
    elif outcome.action == "dry-run":
        console.print(
            f"dry run: would import {counts} into target {outcome.target}; nothing was written", highlight=False
        )
    else:
        console.print(
            "not imported: the series does not give the monolithic patch's files; nothing was written",
            style="red",
            highlight=False,
        )
