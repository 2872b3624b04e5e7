"""The diff part of a patch file: its file sections and hunks, checked and parsed.

``walk`` checks every hunk against its header's counts as git reads them (the one hunk walker); ``parse``
reads the checked diff into the values of ``hunks``, with file names read as git reads them (``names``) and
git's binary patches read as git reads them (``binary``).
"""

from patchmgr.model.diff.binary import BinaryChange, BinaryData, DeltaError, apply_delta, blob_id
from patchmgr.model.diff.hunks import EXECUTABLE_MODE, REGULAR_MODE, SYMLINK_MODE, FileDiff, Hunk
from patchmgr.model.diff.parse import INDEX_LINE, parse_diff
from patchmgr.model.diff.walk import HUNK_HEADER, MAIL_START, CheckedDiff, check_hunks, hunk_end

__all__ = [
    "EXECUTABLE_MODE",
    "SYMLINK_MODE",
    "BinaryChange",
    "BinaryData",
    "DeltaError",
    "apply_delta",
    "blob_id",
    "HUNK_HEADER",
    "INDEX_LINE",
    "MAIL_START",
    "REGULAR_MODE",
    "CheckedDiff",
    "FileDiff",
    "Hunk",
    "check_hunks",
    "hunk_end",
    "parse_diff",
]
