"""A 3-way merge of three texts through ``git merge-file``: the engine's three-way step, kept by its inputs (a
patch that does not apply is merged again at every commit of a sweep or a bisect walk, mostly against the same
file, and each merge is a process)."""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
from collections import OrderedDict
from pathlib import Path

from patchmgr.io import children, scratch
from patchmgr.io.git_run import plain_env

_MERGES: OrderedDict[bytes, bytes | None] = OrderedDict()


_MERGES_KEPT = 256


def merge_texts(base: bytes, ours: bytes, theirs: bytes) -> bytes | None:
    """A 3-way merge of three texts (``git merge-file``), or None when it leaves conflicts.

    The outcome is kept for the same three texts: a patch that does not apply
    is tried again at every commit of a sweep or a bisect walk, mostly against
    the same file, and each merge is a process.
    """
    import hashlib  # here: hashlib loads OpenSSL, and only a patch that needs a 3-way merge gets here

    key = hashlib.sha256(b"%d %d %d\0" % (len(base), len(ours), len(theirs)) + base + ours + theirs).digest()
    if key in _MERGES:
        _MERGES.move_to_end(key)
        return _MERGES[key]
    tmp = _merge_folder()
    names = []
    for label, data in (("ours", ours), ("base", base), ("theirs", theirs)):
        name = os.path.join(tmp, f"{label}-{threading.get_ident()}")
        Path(name).write_bytes(data)
        names.append(name)
    done = children.run(
        ["git", "merge-file", "-p", *names], cwd=tmp, env=plain_env(), stdin=subprocess.DEVNULL, capture_output=True
    )
    merged = done.stdout if done.returncode == 0 else None
    _MERGES[key] = merged
    if len(_MERGES) > _MERGES_KEPT:
        _MERGES.popitem(last=False)
    return merged


_MERGE_FOLDER: dict[int, tempfile.TemporaryDirectory[str]] = {}


def _merge_folder() -> str:
    """One private folder per process for merge-file's three inputs (making and removing a folder per
    merge cost about as much as the merge); removed when the process ends."""
    pid = os.getpid()
    if pid not in _MERGE_FOLDER:
        _MERGE_FOLDER[pid] = scratch.folder("merge")
    return _MERGE_FOLDER[pid].name
