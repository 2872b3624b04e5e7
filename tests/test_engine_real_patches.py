"""The engine on the real patches this repository carries (patches/ and tests/halffixes/), each checked against
trees held in memory that are rebuilt from the patch's own hunks: no git, no process, no network.

Each file a patch changes is rebuilt as its hunks' old lines at their old line numbers, with unique filler
lines between them; applying every hunk to that text gives the file the patch must produce. On that tree the
patch is clean; moved down by three lines it is offset by three; on its own result it is already upstream;
with one of its removed lines changed upstream it conflicts at that hunk. The results then render as JSON
documents and state cells. These are the fast tier's checks of model, engine and render (``pytest -m fast``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.memory_tree import Files

from patchmgr.engine.classify import check_patch
from patchmgr.engine.results import State
from patchmgr.model.diff import FileDiff
from patchmgr.model.patchfile import PatchFile, parse_patch
from patchmgr.render.status import patch_json, state_text

pytestmark = pytest.mark.fast

ROOT = Path(__file__).resolve().parent.parent
PATCHES = sorted([*ROOT.glob("patches/*/*.patch"), *ROOT.glob("tests/halffixes/*/*/*.patch")])
SHIFT = 3


def encoded(lines: list[str]) -> bytes:
    return "".join(lines).encode("utf-8", "surrogateescape")


def before_lines(diff: FileDiff) -> list[str]:
    """The file the hunks were made from: their old lines at their old line numbers, unique filler between."""
    lines: list[str] = []
    for hunk in diff.hunks:
        while len(lines) < hunk.old_start - 1:
            lines.append(f"filler line {len(lines) + 1} of {diff.old_path}\n")
        lines.extend(hunk.old_lines)
    return lines


def after_lines(diff: FileDiff, before: list[str]) -> list[str]:
    """``before`` with every hunk applied at its own place, the last hunk first."""
    lines = list(before)
    for hunk in reversed(diff.hunks):
        at = max(hunk.old_start - 1, 0) if hunk.old_lines else hunk.old_start
        assert lines[at : at + len(hunk.old_lines)] == list(hunk.old_lines)
        lines[at : at + len(hunk.old_lines)] = hunk.new_lines
    return lines


def trees(patch: PatchFile, shift: int = 0) -> tuple[dict[str, bytes], dict[str, bytes | None]]:
    """The tree the patch was made from (moved down ``shift`` lines) and the files it must produce there."""
    before: dict[str, bytes] = {}
    after: dict[str, bytes | None] = {}
    for diff in patch.files:
        top = [f"added upstream on top {i}\n" for i in range(shift)]
        old = top + before_lines(diff) if diff.old_path else []
        if diff.old_path:
            before[diff.old_path] = encoded(old)
        new = (
            after_lines(diff, before_lines(diff))
            if diff.old_path
            else [line for h in diff.hunks for line in h.new_lines]
        )
        if diff.new_path:
            after[diff.new_path] = encoded(top + new if diff.old_path else new)
        if diff.old_path and diff.new_path != diff.old_path:
            after[diff.old_path] = None
    return before, after


def read(path: Path) -> PatchFile:
    return parse_patch(path.read_bytes(), path, path.parent.name, path.stem)


def test_there_are_real_patches_to_check():
    assert len(PATCHES) >= 30, PATCHES


@pytest.fixture(params=PATCHES, ids=lambda p: str(p.relative_to(ROOT)))
def patch(request) -> PatchFile:
    return read(request.param)


def test_a_real_patch_is_clean_on_the_text_its_hunks_were_made_from(patch):
    before, after = trees(patch)
    result = check_patch(patch, Files(before))
    assert result.state is State.CLEAN, result.detail
    assert result.files == after
    assert result.detail == "" and all(p.offset == 0 and p.fuzz == 0 for p in result.placements)
    doc = json.loads(json.dumps(patch_json(result)))
    assert doc["state"] == "clean" and doc["ok"] is True and doc["detail"] == ""
    assert doc["files"] == patch.touched_paths and doc["sha256"] == patch.sha256
    assert state_text(result).plain == "clean"


def test_a_real_patch_moved_down_three_lines_is_offset_by_three(patch):
    if any(h.old_start <= 1 for d in patch.files if d.old_path for h in d.hunks):
        pytest.skip("a hunk at the first line must match there (as in git apply): it cannot move")
    before, after = trees(patch, SHIFT)
    result = check_patch(patch, Files(before))
    assert result.state is State.OFFSET, result.detail
    assert result.files == after
    moved = [p for p in result.placements if p.path in before]
    assert moved and all(p.offset == SHIFT for p in moved), result.placements
    assert f"+{SHIFT} lines" in result.detail
    doc = patch_json(result)
    assert doc["state"] == "offset" and doc["ok"] is True
    assert {h["offset"] for h in doc["hunks"] if h["file"] in before} == {SHIFT}


def test_a_real_patch_on_its_own_result_is_already_upstream(patch):
    _, after = trees(patch)
    result = check_patch(patch, Files({path: data for path, data in after.items() if data is not None}))
    assert result.state is State.UPSTREAM, result.detail
    assert result.files == {}
    doc = patch_json(result)
    assert doc["state"] == "upstream" and doc["ok"] is False and doc["carrier"] is None


def test_a_real_patch_whose_removed_line_changed_upstream_conflicts_at_that_hunk(patch):
    found = [
        (diff, number, hunk)
        for diff in patch.files
        if diff.old_path
        for number, hunk in enumerate(diff.hunks, 1)
        if len(hunk.old_lines) > hunk.leading + hunk.trailing
    ]
    if not found:
        pytest.skip("the patch only adds lines")
    diff, number, hunk = found[0]
    before, _ = trees(patch)
    lines = before_lines(diff)
    removed = hunk.old_start - 1 + hunk.leading  # the hunk's first removed line
    lines[removed] = "rewritten upstream in the meantime\n"
    before[diff.old_path] = encoded(lines)
    result = check_patch(patch, Files(before))
    assert result.state is State.CONFLICT, result.detail
    assert result.conflict is not None and (result.conflict.path, result.conflict.hunk) == (diff.old_path, number)
    assert result.files == {}
    doc = patch_json(result)
    assert doc["ok"] is False and doc["conflict"]["file"] == diff.old_path and doc["conflict"]["hunk"] == number
    assert state_text(result).plain == "conflict"
