"""Paths that stay inside one folder: the one check of what patchmgr reads or writes inside a place of its own.

A path stays inside ``root`` when it names no ``..`` and every part of it that exists, followed through
any symbolic link, is still inside ``root`` (a link from one project folder to another is fine; a link
out of it is not). Parts that do not exist yet are made as real folders by the writer. Import reads a
series' patches only inside the repository that holds the series; the project's transaction writes,
and puts back, files only inside the project root.
"""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path


def leaves(root: Path, path: Path) -> str | None:
    """Why ``path`` is not inside ``root`` (a sentence naming the part that leads out), or None when it is."""
    base = Path(os.path.abspath(root))
    real_base = Path(os.path.realpath(base))
    full = Path(os.path.abspath(base / path))  # abspath of an absolute path is itself (less ``.``); ``..`` kept
    if ".." in Path(path).parts:
        return f"{path} names '..'"
    if full != base and base not in full.parents and real_base != full and real_base not in full.parents:
        return f"{full} is outside {base}"
    start = base if (full == base or base in full.parents) else real_base
    current = start
    for part in full.relative_to(start).parts:
        current = current / part
        if not os.path.lexists(current):
            return None
        real = Path(os.path.realpath(current))
        if real != real_base and real_base not in real.parents:
            how = f"is a link to {os.readlink(current)}" if os.path.islink(current) else f"leads to {real}"
            return f"{current} {how}, outside {base}"
    return None


def shown(text: str) -> str:
    """``text`` for a one-line message: each control character written as its escape."""
    return "".join(ascii(c)[1:-1] if unicodedata.category(c) in ("Cc", "Zl", "Zp") else c for c in text)
