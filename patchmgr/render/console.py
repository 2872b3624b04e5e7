"""What every rendering shares: consoles that never read text as markup, state colours, notes, errors."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from patchmgr.engine.results import State
from patchmgr.model.errors import PatchmgrError
from patchmgr.model.urls import mask_url


def make_console(stderr: bool) -> Console:
    """Every console output goes through: markup off, so no user-controlled text (a path such as
    ``out/x[/]``, a header value) is ever read as rich markup; styles come only from ``style=`` and
    ``Text``. Off a terminal (a pipe, a CI log) lines are not cut at 80 columns."""
    probe = Console(stderr=stderr)
    width = None if probe.is_terminal else 4000
    return Console(stderr=stderr, markup=False, highlight=False, soft_wrap=True, width=width)


STATE_STYLE = {
    State.CLEAN: "green", State.OFFSET: "green", State.FUZZ: "yellow", State.THREE_WAY: "yellow",
    State.CONFLICT: "red", State.UPSTREAM: "cyan", State.MISSING: "red",
}


def row(table: Table, *cells) -> None:
    """A table row whose text is shown as is: test ids like ``test_x[case]`` and subjects like
    ``[training] fix`` are not rich markup."""
    table.add_row(*(Text(cell) if isinstance(cell, str) else cell for cell in cells))


def notes(console: Console, notes: list[str]) -> None:
    for note in notes:
        console.print(f"note: {note}", style="yellow", highlight=False, markup=False)


def render_error(console: Console, error: PatchmgrError) -> None:
    """One ``error:`` line and one ``hint:`` line; a password in a URL is never printed."""
    console.print(f"error: {mask_url(error.message)}", style="red", highlight=False, markup=False)
    if error.hint:
        console.print(f"hint: {mask_url(error.hint)}", highlight=False, markup=False)


def patches(count: int) -> str:
    return f"{count} patch" + ("" if count == 1 else "es")
