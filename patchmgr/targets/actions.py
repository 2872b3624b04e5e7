"""What an apply did: to a checkout (``apply --into``) and to an installed environment (``apply --python``)."""

from __future__ import annotations

from enum import StrEnum


class ApplyAction(StrEnum):
    """What ``apply`` did, with ``--into`` or ``--python``."""

    APPLIED = "applied"
    ALREADY_APPLIED = "already-applied"
    REFUSED = "refused"
    DRY_RUN = "dry-run"
