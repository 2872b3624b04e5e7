"""A patch's diff as values: its file sections (``FileDiff``) and their hunks (``Hunk``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from patchmgr.model.diff.binary import BinaryChange

REGULAR_MODE = "100644"
EXECUTABLE_MODE = "100755"
SYMLINK_MODE = "120000"


@dataclass(frozen=True)
class Hunk:
    """One hunk; ``old_lines``/``new_lines`` are context plus removed/added lines, endings kept; ``patch_line`` is
    the line of its ``@@`` header in the patch file (where a report points), not part of what the hunk changes."""

    header: str
    old_start: int
    new_start: int
    old_lines: tuple[str, ...]
    new_lines: tuple[str, ...]
    leading: int
    trailing: int
    patch_line: int = field(compare=False)

    def reversed(self) -> Hunk:
        return Hunk(
            self.header,
            self.new_start,
            self.old_start,
            self.new_lines,
            self.old_lines,
            self.leading,
            self.trailing,
            self.patch_line,
        )


@dataclass(frozen=True)
class FileDiff:
    old_path: str | None  # None for a created file
    new_path: str | None  # None for a deleted file
    old_blob: str | None
    new_blob: str | None
    hunks: tuple[Hunk, ...]
    # the modes the patch gives each side, as git apply reads them (old: "old mode", "deleted file mode", the index
    # line's; new: "new mode", "new file mode"): None where it says none, and the file keeps the mode it has
    new_mode: str | None = None
    old_mode: str | None = None
    binary: BinaryChange | None = None  # a GIT binary patch (or "Binary files ... differ"), which has no hunks

    @property
    def path(self) -> str:
        return self.new_path or self.old_path or ""

    @property
    def kind(self) -> str:
        if self.old_path is None:
            return "add"
        if self.new_path is None:
            return "delete"
        if self.old_path != self.new_path:
            return "rename"
        return "modify"

    def reversed(self) -> FileDiff:
        return FileDiff(
            self.new_path,
            self.old_path,
            self.new_blob,
            self.old_blob,
            tuple(h.reversed() for h in self.hunks),
            self.old_mode,
            self.new_mode,
            self.binary.reversed() if self.binary else None,
        )
