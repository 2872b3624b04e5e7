"""patchmgr lint: manifests and patch files well-formed, documented (DEP-3), every patch file listed."""

from __future__ import annotations

from pathlib import Path

from patchmgr.cli import options
from patchmgr.cli.session import Session


def command(json_output: options.JsonOpt = False, root: options.RootOpt = Path(".")) -> int:
    from patchmgr.model.lint import lint_project
    from patchmgr.render.status import lint_json, render_lint

    session = Session("lint", root, json_output)
    problems, checked = lint_project(session.project)
    return session.emit(1 if problems else 0, lint_json, render_lint, problems, checked)
