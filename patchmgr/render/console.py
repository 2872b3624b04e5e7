"""What every rendering shares: consoles that never read text as markup nor pass a control character on,
state colours, notes, errors."""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console, ConsoleOptions, HighlighterType, JustifyMethod, OverflowMethod, RenderableType
from rich.segment import Segment
from rich.style import Style
from rich.table import Table
from rich.text import Text

from patchmgr.model.errors import PatchmgrError
from patchmgr.render.outside import for_terminal, one_line
from patchmgr.render.status_plain import STATE_STYLE

__all__ = ["STATE_STYLE"]  # each state's colour: kept with the plain status, which needs it without rich


class SafeConsole(Console):
    """A console that shows every character it prints: a string, and the text of everything it renders (tables,
    ``Text``), goes through ``outside.for_terminal``, so an ESC or OSC sequence from an upstream line, a
    subject or a tag name is printed as ``\\x1b...``, never acted on; rich's own styles are not text and stay.
    Text from outside is best made visible when its ``Text`` is made (``shown``), so that a table measures
    what it prints; this is the net under everything else."""

    def render_str(
        self,
        text: str,
        *,
        style: str | Style = "",
        justify: JustifyMethod | None = None,
        overflow: OverflowMethod | None = None,
        emoji: bool | None = None,
        markup: bool | None = None,
        highlight: bool | None = None,
        highlighter: HighlighterType | None = None,
    ) -> Text:
        return super().render_str(
            for_terminal(text),
            style=style,
            justify=justify,
            overflow=overflow,
            emoji=emoji,
            markup=markup,
            highlight=highlight,
            highlighter=highlighter,
        )

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control or not segment.text:
                yield segment
            else:
                text = for_terminal(segment.text)
                yield segment if text == segment.text else Segment(text, segment.style, segment.control)


def make_console(stderr: bool) -> Console:
    """Every console output goes through: markup off, so no user-controlled text (a path such as
    ``out/x[/]``, a header value) is ever read as rich markup; styles come only from ``style=`` and
    ``Text``; every control character shown, never sent (``SafeConsole``). Off a terminal (a pipe, a CI
    log) lines are not cut at 80 columns."""
    probe = Console(stderr=stderr)
    width = None if probe.is_terminal else 4000
    return SafeConsole(stderr=stderr, markup=False, highlight=False, soft_wrap=True, width=width)


def say(console: Console, text: str, style: str | None = None) -> None:
    """One line for people, printed as it is: never read as markup nor highlighted, whichever console it goes to."""
    console.print(text, style=style, highlight=False, markup=False)


def shown(text: str, style: str = "", lines: bool = True) -> Text:
    """A ``Text`` of text from outside, every control character made visible (``lines``: line feeds kept)."""
    return Text(for_terminal(text) if lines else one_line(text), style=style)


def row(table: Table, *cells: RenderableType | None) -> None:
    """A table row whose text is shown as is: test ids like ``test_x[case]`` and subjects like
    ``[training] fix`` are not rich markup."""
    table.add_row(*(shown(cell) if isinstance(cell, str) else cell for cell in cells))


def notes(console: Console, notes: list[str]) -> None:
    for note in notes:
        console.print(f"note: {one_line(note)}", style="yellow", highlight=False, markup=False)


def report_error(error: PatchmgrError) -> int:
    """``error`` as its lines on stderr (``render_error``); its exit code."""
    render_error(make_console(stderr=True), error)
    return error.exit_code


def render_error(console: Console, error: PatchmgrError) -> None:
    """One ``error:`` line and one ``hint:`` line (a line break from outside, in a path or git's words, is shown,
    so it cannot forge a line); a credential is never printed (``one_line`` masks it). What the run did before it
    failed (a killed run it recovered first) comes first, as ``note:`` lines."""
    for note in error.notes:
        console.print(f"note: {one_line(note)}", highlight=False, markup=False)
    console.print(f"error: {one_line(error.message)}", style="red", highlight=False, markup=False)
    if error.hint:
        console.print(f"hint: {one_line(error.hint)}", highlight=False, markup=False)


def patches(count: int) -> str:
    return f"{count} patch" + ("" if count == 1 else "es")
