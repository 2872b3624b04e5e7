"""What a recipe (a Dockerfile, a build script) does to git checkouts, as values: the checkouts it clones, the
patches it applies in them, in order, and the scripts it calls (read by ``model.recipe_shell``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from patchmgr.model.dockerfile import Copied, Word
from patchmgr.model.shell_lines import Heredoc


@dataclass(frozen=True)
class Checkout:
    """A ``git clone`` (or a checkout named by the user): the folder, the URL, and the ref checked out."""

    folder: str
    url: Word
    line: int
    ref: Word | None = None
    ref_line: int = 0
    branch: bool = False  # the ref is the clone's ``-b`` branch
    where: str = ""  # the recipe file its clone line is in ("": the file being read)
    given: bool = False  # named with --checkout, not cloned by the recipe
    name: str = ""  # the upstream --checkout names ("": named after the folder)


@dataclass(frozen=True)
class Applied:
    """A patch applied (``git apply``, ``git am``, ``patch``) in a checkout: its path, or its text on stdin."""

    folder: str  # the checkout's folder ("": no clone of the recipe's)
    patch: str  # its path; "" when ``word`` uses a variable without a value, or the patch is ``inline``
    line: int
    word: Word = Word("")  # the path as written, substituted
    run_in: str = ""  # the folder it runs in
    # what the files hold as the command runs: the COPY lines of its stage (and of the stage it is built FROM)
    # before its line, the clones and the cp/mv before it; docker build applies only those
    copies: tuple[Copied, ...] = ()
    stage: int = 0
    where: str = ""  # the recipe file the line is in ("": the Dockerfile)
    inline: Heredoc | None = None  # the patch's text, given on stdin in a here-document
    image: str = ""  # the image the stage is built FROM (not a stage of the recipe's), for the hint


@dataclass(frozen=True)
class Script:
    """A script a recipe calls: its text and its name in errors (the file, relative to where it was found)."""

    text: str
    where: str


# a script's path as the recipe names it, and the provenance of the files at that point -> the script, if found
ScriptReader = Callable[[str, tuple[Copied, ...]], Script | None]


@dataclass(frozen=True)
class Built:
    """What a recipe does, in order."""

    checkouts: tuple[Checkout, ...]
    applied: tuple[Applied, ...]
    copies: tuple[Copied, ...]  # a Dockerfile's COPY and ADD lines
    unused_build_args: tuple[str, ...] = ()
