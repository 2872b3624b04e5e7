"""The broken guards of a patch, as refresh, export and edit --onto print them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from rich.console import Console

from patchmgr.render.console import say

if TYPE_CHECKING:
    from patchmgr.engine.results import GuardResult


def print_broken_guards(console: Console, patch_id: str, guards: Iterable[GuardResult], ref: str) -> None:
    """Each broken guard of a patch at ``ref``, and each offending ``file:line``."""
    for guard in guards:
        if guard.holds:
            continue
        say(console, f"{patch_id}: guard broken at {ref}: {guard.guard}", "red")
        for offense in (*guard.offense_lines, *([guard.error] if guard.error else [])):
            say(console, f"  {offense}", "red")
