"""Where import may read a patch set from, and which names it may write down.

The repository of a series is the git work tree that holds its ``series.conf`` (the nearest folder at or
above the series.conf's own folder with a ``.git``, as git finds it), or, outside git, the series.conf's
folder itself; a per-version folder's repository is the folder given. Every patch a series or a version
folder names is read only inside its repository: a path that names ``..`` or is absolute, or a link that
leads out of it, is refused (``io.confine.leaves``), never followed and never searched for above it.

The paths import records (in the manifest's comments and the pieces' ``Origin`` headers) are relative: the
path inside the git repository holding the patch (and the commit that last changed it), or outside git
the name the series.conf gives it, or its file name (``outside_git``); never a path of the importing
machine. They are single lines of text: a path holding a control character is bad input, refused before
anything is read.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from patchmgr.io.confine import leaves, shown
from patchmgr.model.errors import UsageError
from patchmgr.model.urls import control_character


def repository_of(folder: Path) -> Path:
    """The git work tree holding ``folder`` (its real path), or ``folder`` itself outside git."""
    real = folder.resolve()
    return next((f for f in (real, *real.parents) if (f / ".git").exists()), real)


def inside(repository: Path, relative: str, where: str, what: str) -> Path:
    """``repository/relative``, refused (bad input) unless it stays inside the repository."""
    pure = PurePosixPath(relative)
    if pure.is_absolute() or ".." in pure.parts or ".git" in pure.parts:
        raise UsageError(
            f"{where}: {what} '{shown(relative)}' is not a path inside the repository {repository}",
            "name the patch relative to the repository's root (no '..', no absolute path)",
        )
    return checked(repository, repository / pure, where, what)


def checked(repository: Path, path: Path, where: str, what: str) -> Path:
    """``path`` when it exists only inside ``repository`` (no link out of it); else one clear error."""
    why = leaves(repository, path)
    if why is not None:
        raise UsageError(
            f"{where}: {what} {shown(str(path))} leads out of the repository {repository} ({why}); "
            "import reads a patch set only inside the repository that holds it",
            "copy the patch into the repository (not a link), or import the patch file itself",
        )
    return path


def plain_path(text: str, what: str) -> None:
    """Refuse a path (as given or as a series names it) that holds a control character."""
    char = control_character(text)
    if char is not None:
        raise UsageError(
            f"{what} '{shown(text)}' {char}; import writes the path into "
            "the manifest and the patches' headers, one line each",
            "rename it, then run again",
        )


def outside_git(path: Path, shown: str, version: str | None) -> str:
    """How a patch outside any git repository is named in what import records (the manifest's comment, the
    pieces' ``Origin``): as a series.conf names it (relative to the series' folder), else by its version
    folder and file name, or its file name alone; never by a path of the importing machine."""
    if shown != str(path):
        return shown
    return f"{path.parent.name}/{path.name}" if version else path.name
