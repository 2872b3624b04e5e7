"""A command's stdout and stderr, with every credential masked as it is written: the net under every rendering.

Each format masks credentials in the text it shows (``render/outside.visible``, before its escapes and before rich
wraps a cell); this is the net under all of them: whatever a command writes to ``sys.stdout`` or ``sys.stderr``,
by a console, a ``print`` or a stream's ``write``, passes ``urls.mask_url`` first. What a child process writes to
the same file descriptors does not pass here: patchmgr reads its children's output and says it through these.

(No rendering code here: ``patchmgr <command> --help`` goes through it and loads no core package.)
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

from patchmgr.model.urls import mask_url


class MaskedStream:
    """``stream``, every text written to it masked first; everything else (``isatty``, ``fileno``, ``flush``,
    ``encoding``) is the stream's own, so that rich and ``for_log`` see the terminal or the pipe it is."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(mask_url(text))
        return len(text)  # what the caller gave, as a text stream answers

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


class masked_output:  # noqa: N801 - used as a function, in a with statement
    """While inside, ``sys.stdout`` and ``sys.stderr`` are ``MaskedStream``s over what they were; after, what they
    were again (unless something replaced them meanwhile: click's ``PacifyFlushWrapper`` on a closed pipe stays).
    Inside another one it changes nothing. (A class, not contextlib: every command's start-up pays for imports.)"""

    def __init__(self) -> None:
        self.masked: list[tuple[str, MaskedStream]] = []

    def __enter__(self) -> masked_output:
        for name in ("stdout", "stderr"):
            stream = getattr(sys, name)
            if stream is not None and not isinstance(stream, MaskedStream):
                masked = MaskedStream(stream)
                setattr(sys, name, masked)
                self.masked.append((name, masked))
        return self

    def __exit__(self, *exc_info: object) -> None:
        for name, masked in self.masked:
            if getattr(sys, name) is masked:
                setattr(sys, name, masked.stream)
        self.masked.clear()
