"""Values read from patchmgr's own JSON files (ledgers, journals, interpreter answers), checked by type."""

from __future__ import annotations

import hashlib
import re
from typing import TypeVar

T = TypeVar("T")
SHA256 = re.compile(r"^[0-9a-f]{64}\Z")  # a sha256 as ``sha256_bytes`` writes it (\Z: `$` lets a final newline by)


def typed(value: object, kind: type[T], what: str) -> T:
    """``value`` when it is a ``kind``: a ledger edited by hand or by another tool is refused, not half read.

    Raises ``TypeError`` naming ``what``; shared by every reader of patchmgr's own JSON files (the ledgers, the
    journal) and of what an interpreter answers to ``--python``.
    """
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise TypeError(f"{what} is {type(value).__name__}, not {kind.__name__}")
    return value


def text_or_none(value: object, what: str) -> str | None:
    return None if value is None else typed(value, str, what)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
