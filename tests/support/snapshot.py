"""One snapshot of what is on disk, for the tests that assert a run changed nothing, or exactly what."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from support.gitrepos import git

LOCK_NAMES = {"lock"}
STATE_FOLDERS = (".patchmgr-state", "patchmgr-state")


def snapshot(*roots: Path, git_internals: bool = True, exact: bool = False) -> dict[str, str]:
    """Every entry under ``roots``: a file's sha256, a link's target, or "dir"; a root that is a file, its sha256.

    Keys are relative to the root, so that two folders built alike compare equal; with several roots
    each key starts with its root's path.

    Left out (unless ``exact``): patchmgr's lock file (and its state folder when it holds nothing else),
    and git's stat cache ``.git/index``, which git rewrites whenever it looks at a work tree; each
    checkout's index is compared by content (``git ls-files --stage``) and its HEAD instead. With
    ``git_internals`` False, a checkout's ``.git`` folder is compared only that way (two runs that
    build the same checkout write the same commits but not the same reflogs and packs). ``exact``
    keeps every byte: for a run that must write nothing at all, not even a lock.
    """
    if len(roots) != 1:
        found: dict[str, str] = {}
        for root in roots:
            for rel, value in snapshot(root, git_internals=git_internals, exact=exact).items():
                found[f"{root}/{rel}" if rel else str(root)] = value
        return found
    (root,) = roots
    if root.is_file() and not root.is_symlink():
        return {"": hashlib.sha256(root.read_bytes()).hexdigest()}
    if not root.exists():
        return {}
    found = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        parts = rel.split("/")
        if not exact and parts[-1] in LOCK_NAMES and len(parts) >= 2 and parts[-2] in STATE_FOLDERS:
            continue
        if ".git" in parts and (not git_internals or (not exact and rel.endswith(".git/index"))):
            continue
        if path.is_symlink():
            found[rel] = "link:" + os.readlink(path)
        elif path.is_dir():
            if not exact and parts[-1] in STATE_FOLDERS and {p.name for p in path.iterdir()} <= LOCK_NAMES:
                continue
            found[rel] = "dir"
        elif not path.is_file():  # a FIFO or a socket a test put there: its kind (reading a FIFO would block)
            found[rel] = f"kind:{stat.S_IFMT(path.lstat().st_mode):o}"
        else:
            found[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
        if path.name == ".git" and path.is_dir():
            found[rel + ":HEAD"] = git(path.parent, "rev-parse", "HEAD")
            found[rel + ":index"] = git(path.parent, "ls-files", "--stage")
    return found
