"""Reading a patch file, on bytes in memory: the good patch's fields and hunks, and each malformed patch of the
bad-input corpus (tests/support/bad_inputs.py, which tests/test_bad_inputs.py runs through the command line)
refused with the reason the command line prints. No git, no process: part of the fast tier."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.bad_inputs import HUNK, MALFORMED

from patchmgr.model.errors import PatchFormatError
from patchmgr.model.patchfile import parse_patch

pytestmark = pytest.mark.fast

BASE = "".join(f"line {i}\n" for i in range(1, 41))
# what tests/support/bad_inputs.good_patch makes with git format-patch: line 20 of src/mod.py fixed
GOOD = (
    b"From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
    b"From: Upstream Dev <dev@upstream.example>\n"
    b"Date: Thu, 1 Jan 2026 00:00:00 +0000\n"
    b"Subject: [PATCH] Fix\n\n"
    b"Why: the upstream code breaks our training runs in a specific way here.\n\n"
    b"Origin: vendor\nUpstream-Status: Pending\n---\n"
    b" src/mod.py | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)\n\n"
    b"diff --git a/src/mod.py b/src/mod.py\n"
    b"index 5b5a3a9b1b1b0f4e4f1c7a0c3a2d9e8f7a6b5c4d..0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d 100644\n"
    b"--- a/src/mod.py\n+++ b/src/mod.py\n" + HUNK + b"\n"
    b" line 17\n line 18\n line 19\n-line 20\n+fixed 20\n line 21\n line 22\n line 23\n"
)


def test_the_good_patch_reads_as_one_hunk_with_its_fields():
    patch = parse_patch(GOOD, Path("patches/lib/fix.patch"), "lib", "fix")
    assert patch.subject == "Fix" and patch.field("Origin") == "vendor" and patch.field("Upstream-Status") == "Pending"
    assert patch.touched_paths == ["src/mod.py"]
    (diff,) = patch.files
    (hunk,) = diff.hunks
    assert (hunk.old_start, hunk.new_start, hunk.leading, hunk.trailing) == (17, 17, 3, 3)
    assert "".join(hunk.old_lines) == "".join(BASE.splitlines(keepends=True)[16:23])
    assert hunk.new_lines[3] == "fixed 20\n"


@pytest.mark.parametrize("mutate, expected", [case[1:] for case in MALFORMED], ids=[c[0] for c in MALFORMED])
def test_a_malformed_patch_is_refused_with_the_reason(mutate, expected):
    with pytest.raises(PatchFormatError) as refused:
        parse_patch(mutate(GOOD), Path("patches/lib/bad.patch"), "lib", "bad")
    assert expected in str(refused.value)
    assert "patches/lib/bad.patch" in str(refused.value)


@pytest.mark.fast
@pytest.mark.parametrize(
    "date, gits_form",
    [
        ("Thu, 1 Jan 2026 00:00:00 +0000", True),
        ("1 Jan 2026 23:59:59 -0730", True),
        ("Mon, 29 Feb 2027 00:00:00 +0000", True),  # no such day: no date, as the mail parser says
        ("Wed, 27 Jan 2102 00:21:15 -0000", True),
        ("Thu, 01 Jan 2026 00:00 +0000", False),  # not git's form: left to the mail parser
    ],
)
def test_git_dates_read_without_the_mail_parser_as_it_reads_them(date, gits_form):
    import email.utils
    from datetime import UTC

    from patchmgr.model.patchfile import _git_date

    try:
        expected = email.utils.parsedate_to_datetime(date)
        expected = expected.replace(tzinfo=UTC) if expected.tzinfo is None else expected
    except ValueError:
        expected = None
    assert _git_date(date) == (expected if gits_form else None)
