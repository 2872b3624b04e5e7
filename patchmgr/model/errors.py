"""The errors patchmgr reports to people: what is wrong, where, and what to do next.

Every error a user can cause is a ``PatchmgrError``; the CLI prints it as one
line plus a hint and exits with ``exit_code``. Anything else is a bug.
"""

from __future__ import annotations


class PatchmgrError(Exception):
    """A problem with the user's input or environment, reported without a traceback."""

    exit_code = 2

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        # what a run did before it failed (a killed run recovered first), said before the error
        self.notes: list[str] = []

    def __str__(self) -> str:
        return self.message


class ManifestError(PatchmgrError):
    """A manifest is malformed or names something that does not exist."""


class PatchFormatError(PatchmgrError):
    """A patch file cannot be parsed."""


class UsageError(PatchmgrError):
    """The command line asks for something impossible."""


class SourceError(PatchmgrError):
    """An upstream cannot be obtained from any of its sources."""

    exit_code = 1


class GitError(PatchmgrError):
    """A git command failed; the message carries the command and its output."""

    exit_code = 1


class StateError(PatchmgrError):
    """A directory or environment is not in the state the command needs."""

    exit_code = 1
