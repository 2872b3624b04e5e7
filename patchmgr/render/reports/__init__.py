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

FORMATS = ("junit", "markdown", "github")


def render_report(fmt: str, statuses: list[TargetStatus], base: Path) -> str:
    """The report in ``fmt`` (one of ``FORMATS``) as text to print; paths are shown relative to ``base``."""
    if fmt == "junit":
        from patchmgr.render.reports.junit import render_junit

        return render_junit(statuses)
    if fmt == "markdown":
        from patchmgr.render.reports.markdown import render_markdown

        return render_markdown(statuses)
    from patchmgr.render.reports.github import render_github

    return render_github(statuses, base)
