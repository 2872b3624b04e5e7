"""``status --smoke`` in the CI reports: each patch's smoke verdict at the ref checked, laid out for each format.

JUnit: one ``<testsuite>`` per upstream named ``target.upstream.smoke``, a ``<testcase>`` per patch; a patch
whose test fails with it is a ``<failure>``, one not proven is ``<skipped>`` with its reason, and one whose fix
is (partly) upstream passes with the tests that pass without it in ``<system-out>``. Markdown: a table of the
verdicts. GitHub: an ``::error`` on the patch file for a failure, a ``::warning`` for a patch (partly) upstream by
its tests (review or drop it), a plain line for every patch.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import TYPE_CHECKING

from patchmgr.render.outside import for_github_log
from patchmgr.render.outside import for_markdown as md_escape
from patchmgr.render.outside import for_xml as xml_text
from patchmgr.render.reports.rows import display_path, short_ref
from patchmgr.smoke.absorption import Absorption

if TYPE_CHECKING:
    from patchmgr.check.status import TargetStatus
    from patchmgr.smoke.at_ref import RefSmoke


def junit_suites(root: ET.Element, target: str, smoke: RefSmoke) -> dict[str, int]:
    """The smoke suites added to ``root``; their counts (tests, failures, errors) for the root's totals."""
    total = {"tests": 0, "failures": 0, "errors": 0}
    for upstream in dict.fromkeys(v.upstream for v in smoke.verdicts):
        mine = [v for v in smoke.verdicts if v.upstream == upstream]
        name = f"{target}.{upstream}.smoke"
        failures = sum(v.verdict is Absorption.FAILED for v in mine)
        skipped = sum(v.verdict is Absorption.NOT_PROVEN for v in mine)
        suite = ET.SubElement(
            root,
            "testsuite",
            {
                "name": xml_text(name),
                "tests": str(len(mine)),
                "failures": str(failures),
                "errors": "0",
                "skipped": str(skipped),
            },
        )
        properties = ET.SubElement(suite, "properties")
        ET.SubElement(properties, "property", {"name": "ref", "value": xml_text(mine[0].ref)})
        for v in mine:
            case = ET.SubElement(suite, "testcase", {"classname": xml_text(name), "name": xml_text(v.patch)})
            if v.verdict is Absorption.FAILED:
                ET.SubElement(case, "failure", {"message": xml_text(v.reason), "type": v.verdict.value})
            elif v.verdict is Absorption.NOT_PROVEN:
                ET.SubElement(case, "skipped", {"message": xml_text(f"not proven: {v.reason}")})
            else:
                out = ET.SubElement(case, "system-out")
                out.text = xml_text(f"{v.verdict.label}: {v.reason}")
        total["tests"] += len(mine)
        total["failures"] += failures
    return total


def markdown_lines(smoke: RefSmoke) -> list[str]:
    lines = ["", "#### smoke at the ref checked (each patch's tests with and without it)", ""]
    lines += ["| upstream | patch | ref | smoke | reason |", "| --- | --- | --- | --- | --- |"]
    for v in smoke.verdicts:
        cells = (v.upstream, v.patch, short_ref(v.ref), v.verdict.label, v.reason)
        lines.append("| " + " | ".join(md_escape(cell) for cell in cells) + " |")
    lines.append("")
    lines += [f"- note: {md_escape(note, ' ')}" for note in smoke.notes]
    return lines


def github_lines(statuses: list[TargetStatus], smoke: RefSmoke, base: Path) -> list[str]:
    from patchmgr.render.reports.github import command

    paths = {
        (u.upstream.name, r.patch.id): r.patch.path for status in statuses for u in status.upstreams for r in u.results
    }
    lines = []
    for v in smoke.verdicts:
        said = f"smoke {v.verdict.label}: {v.upstream} {v.patch} at {short_ref(v.ref)}: {v.reason}"
        lines.append(for_github_log(said))
        kind = {Absorption.FAILED: "error", Absorption.UPSTREAM: "warning", Absorption.PARTLY_UPSTREAM: "warning"}
        if v.verdict in kind:
            path = paths.get((v.upstream, v.patch))
            lines.append(
                command(
                    kind[v.verdict],
                    v.reason,
                    file=display_path(path, base) if path else f"patches/{v.upstream}/{v.patch}.patch",
                    line=1,
                    title=f"patchmgr: {v.upstream}/{v.patch} {v.verdict.label} by smoke at {short_ref(v.ref)}",
                )
            )
    said = ", ".join(f"{len(smoke.with_verdict(a))} {a.label}" for a in Absorption)
    lines.append(command("notice", f"smoke: {said}", title="patchmgr status --smoke"))
    return lines
