"""Values read from patchmgr's own JSON files (ledgers, journals, interpreter answers), checked by type."""

from __future__ import annotations

import hashlib
from typing import TypeVar

T = TypeVar("T")


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
