"""Reports of ``status`` for CI: JUnit XML (``junit``), a Markdown job summary (``markdown``) and GitHub workflow
commands (``github``).

``rows`` is what they share (a row and its verdict per patch, where in its patch file it fails); each format
module only lays the rows out and imports nothing but ``rows`` from here. A format's module is loaded only when
that format is asked for.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from patchmgr.check.status import TargetStatus
    from patchmgr.smoke.at_ref import RefSmoke

FORMATS = ("junit", "markdown", "github")


def render_report(fmt: str, statuses: list[TargetStatus], base: Path, smoke: RefSmoke | None = None) -> str:
    """The report in ``fmt`` (one of ``FORMATS``) as text to print; paths are shown relative to ``base``; with
    ``smoke`` (``status --smoke``), each patch's smoke verdict too."""
    if fmt == "junit":
        from patchmgr.render.reports.junit import render_junit

        return render_junit(statuses, smoke)
    if fmt == "markdown":
        from patchmgr.render.reports.markdown import render_markdown

        text = render_markdown(statuses)
        if smoke is None:
            return text
        from patchmgr.render.reports.smoke import markdown_lines

        return text + "\n".join(markdown_lines(smoke)) + "\n"
    from patchmgr.render.reports.github import render_github

    text = render_github(statuses, base)
    if smoke is None:
        return text
    from patchmgr.render.reports.smoke import github_lines

    return text + "\n".join(github_lines(statuses, smoke, base)) + "\n"
