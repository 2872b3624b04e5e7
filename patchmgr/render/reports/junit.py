"""``status --format junit``: JUnit XML, as CI test-report readers take it (Jenkins, GitLab, test-reporter actions).

One ``<testsuite>`` per upstream of each target (named ``target.upstream``, with its counts and the ref and
commit checked as properties), one ``<testcase>`` per patch (classname ``target.upstream``, name the patch
id). A patch that does not apply cleanly, or whose guards break, is a ``<failure>`` whose ``type`` is its
state and whose text carries the detail; an upstream that could not be checked gives each of its patches an
``<error>``: the check did not run, which is not a red result. An offset is a pass with the moved hunks in
``<system-out>``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING

from patchmgr.render.outside import for_xml as xml_text
from patchmgr.render.reports.rows import ERROR, FAIL, WARN, Row, counts, upstream_rows

if TYPE_CHECKING:
    from patchmgr.check.status import TargetStatus, UpstreamStatus
    from patchmgr.smoke.at_ref import RefSmoke


def render_junit(statuses: list[TargetStatus], smoke: RefSmoke | None = None) -> str:
    root = ET.Element("testsuites", {"name": "patchmgr status"})
    total = {"tests": 0, "failures": 0, "errors": 0}
    for target_status in statuses:
        for index, status in enumerate(target_status.upstreams):
            warnings = target_status.warnings if index == 0 else []
            suite = _suite(root, target_status.target.name, status, warnings)
            for key in total:
                total[key] += int(suite.get(key, "0"))
    if smoke is not None and statuses:  # status --smoke: a suite per upstream of the smoke verdicts at the ref
        from patchmgr.render.reports.smoke import junit_suites

        for key, value in junit_suites(root, statuses[0].target.name, smoke).items():
            total[key] += value
    for key, value in total.items():
        root.set(key, str(value))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _suite(root: ET.Element, target: str, status: UpstreamStatus, warnings: list[str]) -> ET.Element:
    name = f"{target}.{status.upstream.name}"
    items = upstream_rows(target, status)
    tally = counts(items)
    suite = ET.SubElement(
        root,
        "testsuite",
        {
            "name": xml_text(name),
            "tests": str(len(items)),
            "failures": str(tally[FAIL]),
            "errors": str(tally[ERROR]),
            "skipped": "0",
        },
    )
    properties = ET.SubElement(suite, "properties")
    for key, value in (
        ("target", target),
        ("upstream", status.upstream.name),
        ("ref", status.ref),
        ("chosen_by", status.chosen_by),
        ("commit", status.commit),
        ("source", status.source),
    ):
        if value:
            ET.SubElement(properties, "property", {"name": key, "value": xml_text(value)})
    for row in items:
        _case(suite, name, row)
    if status.notes or warnings:
        out = ET.SubElement(suite, "system-err")
        out.text = xml_text("\n".join([f"note: {n}" for n in status.notes] + [f"warning: {w}" for w in warnings]))
    return suite


def _case(suite: ET.Element, classname: str, row: Row) -> None:
    case = ET.SubElement(suite, "testcase", {"classname": xml_text(classname), "name": xml_text(row.patch_id)})
    verdict = row.verdict
    if verdict in (FAIL, ERROR):
        kind = "error" if verdict == ERROR else "failure"
        problem = ET.SubElement(case, kind, {"message": xml_text(row.summary), "type": row.kind})
        problem.text = xml_text("\n".join(row.details))
    elif verdict == WARN or row.backports:  # the backports' lines are in a failure's text already
        out = ET.SubElement(case, "system-out")
        out.text = xml_text("\n".join(([row.summary] if verdict == WARN else []) + row.backports))
