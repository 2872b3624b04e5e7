"""import: what was found, split, left out and proven, as lines and a table, or one JSON document."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

from patchmgr.render.console import STATE_STYLE, notes, row, say

if TYPE_CHECKING:
    from patchmgr.maintain.importing.plan import ImportOutcome


def import_json(outcome: ImportOutcome) -> dict:
    return {
        "target": outcome.target,
        "action": outcome.action,
        "stubs": outcome.stubs,  # patch files written with the DEP-3 stub (lint lists them)
        "kept_whole": outcome.kept_whole,  # a quilt series' patches, each kept as it is ("pieces" lists them)
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
                    "found_on": {"kind": u.base.ref_kind, "name": u.base.ref} if u.base.ref else None,
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
                        # which diff of each path it holds ("diff": 2 of "of": 2 when the patch changes the
                        # file twice), and its hunks numbered across the path's diffs, as --map numbers them
                        "diffs": [
                            {"path": t.path, "diff": t.diff, "of": t.diffs, "hunks": list(t.hunks), "hunks_of": t.total}
                            for t in p.takes
                        ],
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
        say(console, f"{upstream.name}: {upstream.source}", "bold")
        say(console, f"  base {upstream.base.commit[:12]}: {upstream.base.detail}")
        if upstream.base.ref:
            say(console, f"  found on {upstream.base.ref_kind} {upstream.base.ref}")
        if upstream.base.partial:
            say(
                console,
                f"  warning: a partial match: only {upstream.base.matched} of {upstream.base.of} files' "
                "index-line blobs match the base; check it, or pass --pin NAME=REF",
                "red",
            )
        if upstream.pin != upstream.base.commit:
            say(console, f"  pin  {upstream.pin[:12]} (given)")
        table = Table(title_justify="left")
        for column in ("patch" if outcome.kept_whole else "piece", "takes", "state at pin", "result"):
            table.add_column(column, overflow="fold")
        for piece in upstream.pieces:
            if outcome.action == "refused" and piece.state.applies:
                result = "not imported (the import is refused)"
            elif not piece.imported:
                result = f"left out: {piece.evidence}"
            else:
                result = piece.path or ""  # an imported piece has its file's path
                if piece.state.value != "clean":
                    result += (
                        " (kept as it is: dpkg-source -x and git apply take its offset)"
                        if outcome.kept_whole
                        else " (made again at the pin: applies exactly)"
                    )
            row(table, piece.id, piece.label, Text(piece.state.value, style=STATE_STYLE[piece.state]), result)
        console.print(table)
        for proof in upstream.proofs:
            say(console, f"  {'proven' if proof.ok else 'NOT proven'}: {proof.detail}", "green" if proof.ok else "red")
        for note in upstream.notes:
            say(console, f"  note: {note}", "yellow")
    notes(console, outcome.notes)
    imported = sum(p.imported for u in outcome.upstreams for p in u.pieces)
    left = sum(not p.imported for u in outcome.upstreams for p in u.pieces)
    counts = (
        f"{imported} {'patch(es)' if outcome.kept_whole else 'piece(s)'} of {len(outcome.upstreams)} upstream(s)"
        + (f", {left} left out (upstream carries them)" if left else "")
    )
    if outcome.action == "imported":
        say(
            console,
            f"imported {counts} into target {outcome.target}"
            + (
                f"; fill the DEP-3 stubs of {outcome.stubs} patch(es) (patchmgr lint lists them)"
                if outcome.stubs
                else ""
            ),
            "green",
        )
    elif outcome.action == "dry-run":
        say(console, f"dry run: would import {counts} into target {outcome.target}; nothing was written")
    else:
        say(console, "not imported: the series does not give the monolithic patch's files; nothing was written", "red")
