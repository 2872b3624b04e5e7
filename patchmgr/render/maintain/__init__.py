"""The commands that rewrite a project (bisect, refresh, bump, edit, edit --onto, export): tables and lines for
people, JSON documents for machines; one module per command family."""

from patchmgr.render.maintain.bisect import bisect_json, found_line, render_bisect
from patchmgr.render.maintain.edit import edit_json, onto_json, render_edit, render_onto
from patchmgr.render.maintain.export import (
    export_json,
    quilt_export_json,
    render_export,
    render_quilt_export,
    render_range_diff,
    render_series_export,
    series_export_json,
)
from patchmgr.render.maintain.refresh import bump_json, refresh_json, render_bump, render_interdiffs, render_refresh

__all__ = [
    "bisect_json",
    "bump_json",
    "edit_json",
    "export_json",
    "found_line",
    "onto_json",
    "quilt_export_json",
    "refresh_json",
    "render_bisect",
    "render_bump",
    "render_edit",
    "render_export",
    "render_interdiffs",
    "render_onto",
    "render_quilt_export",
    "render_range_diff",
    "render_refresh",
    "render_series_export",
    "series_export_json",
]
