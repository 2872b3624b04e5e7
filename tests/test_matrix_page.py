"""matrix --html on values in memory: a GitCode upstream's links (merge requests, its ``!N`` subjects), the verdict
when every patch applies, and when the page was made from a manifest outside any checkout."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from patchmgr.engine.results import CheckResult, State
from patchmgr.history.matrix import Change, Column, ColumnKind, Matrix, Row
from patchmgr.history.provenance import Provenance
from patchmgr.model.manifest import Track, Upstream
from patchmgr.model.patchfile import parse_patch
from patchmgr.render.matrix_html import render_matrix_html

PIN, TIP, FIX = "a" * 40, "b" * 40, "c" * 40
PATCH = b"""From: A <a@example.org>
Subject: [PATCH] Fix

---
 m.py | 2 +-
 1 file changed, 1 insertion(+), 1 deletion(-)

--- a/m.py
+++ b/m.py
@@ -1 +1 @@
-old
+new
"""


def page(git: str, tip_state: State, subject: str) -> str:
    upstream = Upstream("mindspeed", git, (), PIN, None, None, "", ("fix",), track=Track.BRANCH, branch="master")
    patch = parse_patch(PATCH, Path("patches/mindspeed/fix.patch"), "mindspeed", "fix")
    columns = [Column(PIN[:12], PIN, "", ColumnKind.PIN), Column("master", TIP, "", ColumnKind.TIP)]
    cells = [CheckResult(patch, State.CLEAN), CheckResult(patch, tip_state)]
    change = None if tip_state is State.CLEAN else Change("master", tip_state, FIX, subject)
    matrix = Matrix(upstream, "git ~/src/MindSpeed", columns, [Row(patch, cells, change)], decides=columns[1])
    made = Provenance(datetime(2026, 12, 2, 3, 4, tzinfo=UTC), "manifests/ascend.toml", None)
    return render_matrix_html([matrix], "ascend", made)


@pytest.mark.fast
def test_gitcode_links_name_merge_requests_and_its_bang_numbers():
    text = page("https://gitcode.com/Ascend/MindSpeed.git", State.CONFLICT, "fix: varlen mask !3509 merged")
    web = "https://gitcode.com/Ascend/MindSpeed"
    assert f'<a href="{web}/commit/{PIN}">pin {PIN[:12]}</a>' in text
    assert f'<a href="{web}/commit/{TIP}">master (tip)</a>' in text
    assert f'<a href="{web}/commit/{FIX}"><code title="{FIX}">{FIX[:12]}</code></a>' in text
    assert f'<a class="pr" href="{web}/merge_requests/3509">!3509</a> merged' in text
    assert re.search(r'<div class="verdict bad" id="verdict" data-ok="false"><b>1 of 1 upstreams need attention', text)
    assert "fix (conflict)" in text
    assert "Made 2026-12-02 03:04 UTC from manifests/ascend.toml (not in a commit)." in text


@pytest.mark.fast
def test_no_links_for_another_host_and_a_green_verdict_when_all_apply():
    text = page("https://example.invalid/lib.git", State.CLEAN, "")
    assert "https://" not in text and "<a href=" not in text  # a green page has no upstream to jump to either
    assert 'data-ok="true"><b>All 1 patches apply</b> at the newest release of each of the 1 upstreams.' in text


@pytest.mark.fast
def test_an_upstream_cell_keeps_its_state_word_on_one_line_and_lets_the_carrier_wrap_under_it():
    # a carried patch's cell reads "upstream (carried by 85323c5cc888, changed since)": kept on one unbreakable
    # line, it widened every column that held it, and on the real ascend page the grid ran past its frame
    upstream = Upstream("mbridge", "https://github.com/ISEEKYAN/mbridge.git", (), PIN, None, None, "", ("fix",))
    patch = parse_patch(PATCH, Path("patches/mbridge/fix.patch"), "mbridge", "fix")
    columns = [Column(PIN[:12], PIN, "", ColumnKind.PIN), Column("main", TIP, "", ColumnKind.TIP)]
    carried = CheckResult(patch, State.UPSTREAM, carrier=FIX, changed_since=True)
    cells = [CheckResult(patch, State.CLEAN), carried]
    matrix = Matrix(upstream, "git ~/src/mbridge", columns, [Row(patch, cells, None)], decides=columns[1])
    text = render_matrix_html([matrix], "ascend", Provenance(datetime(2026, 12, 2, tzinfo=UTC), "m.toml", None))
    cell = re.search(r'<td id="c-0-0-1"[^>]*>(.*?)</td>', text)
    assert cell is not None
    assert cell.group(1) == f'upstream<span class="carried">carried by {FIX[:12]}, changed since</span>'
    assert f'data-state="upstream (carried by {FIX[:12]}, changed since)"' in text  # the whole label still
    assert re.search(r"td\.cell \.carried \{[^}]*white-space: normal", text)
