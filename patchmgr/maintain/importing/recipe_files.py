"""Where the files a recipe uses come from: a patch it applies, a script it calls.

A recipe is a Dockerfile (its files come from the build context through ``COPY``/``ADD``: the Dockerfile's
folder, or a folder above it inside its repository) or a build script run on the machine itself (its files
are the machine's, relative to the folder it runs in: its own folder, or a folder above it inside its
repository, as ``bash scripts/build.sh`` run from the root would have them). Either may copy a file out of
a clone it made (``cp /ws/patches/x.patch /tmp/``, ``COPY --from=fetch``): that file is read from the
clone's repository at the ref the recipe checks out, fetched as an upstream is (``--source NAME=LOCATION``).
Nothing outside the recipe's repository is read, and no path of this machine is written down.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from pathlib import Path

from patchmgr.maintain.importing.places import checked
from patchmgr.maintain.importing.sources import name_or_none, read_text
from patchmgr.model.dockerfile import Copied, InClone, context_candidates, needed
from patchmgr.model.manifest import Upstream
from patchmgr.model.recipe import Checkout, Script
from patchmgr.model.urls import without_credentials
from patchmgr.sources.upstream import GitSource, Sources


@dataclass(frozen=True)
class InCloneFile:
    """A file read out of a clone a recipe makes: its bytes, and how import names it (never a local path)."""

    data: bytes
    shown: str  # ``patches/vllm.patch in https://host/team/patches.git``
    commit: str


@dataclass
class RecipeFiles:
    """The files of one recipe: ``host`` for a build script (``folder``: where it runs), else a Dockerfile's
    build context (``folder``: the Dockerfile's)."""

    folder: Path
    repository: Path
    host: bool
    checkouts: dict[str, Checkout] = field(default_factory=dict)  # filled as the recipe is read
    sources: Sources | None = None  # None: a file in a clone cannot be read (and is an error where needed)
    _clones: dict[str, GitSource] = field(default_factory=dict)

    @property
    def roots(self) -> list[Path]:
        """The folder, and each folder above it inside its repository."""
        above = [p for p in self.folder.parents if p == self.repository or self.repository in p.parents]
        return [self.folder, *above]

    def candidates(self, copies: tuple[Copied, ...], path: str) -> list[str | InClone]:
        return context_candidates(copies, path, self.host)

    def locate(self, candidates: list[str | InClone], where: str) -> Path | InCloneFile | None:
        """The file the first candidates name: of the recipe's folder (or a folder above it in its repository), or,
        once a candidate is in a clone the recipe made (a clone makes its folder afresh), of that clone."""
        before: list[str | InClone] = []
        for candidate in candidates:
            if isinstance(candidate, InClone):
                found = self.local(before) or self._read_clone(candidate, where)
                if found is not None:
                    return found
                before = []
            else:
                before.append(candidate)
        return self.local(before)

    def local(self, candidates: list[str | InClone]) -> Path | None:
        """The first candidate that is a file of the recipe's folder (or a folder above it in its repository)."""
        for root in self.roots:
            for candidate in candidates:
                if isinstance(candidate, InClone):
                    continue
                if self.host:  # a path of the machine, as the recipe computed it from the folder it runs in
                    relative = posixpath.relpath(candidate, self.folder.as_posix())
                    file = Path(posixpath.normpath(posixpath.join(root.as_posix(), relative)))
                    if file.is_file() and self._inside(file):
                        return file
                elif not candidate.startswith("..") and not posixpath.isabs(candidate) and (root / candidate).is_file():
                    return root / candidate
        return None

    def _inside(self, file: Path) -> bool:
        real = file.resolve()
        return real == self.repository or self.repository in real.parents

    def script(self, path: str, copies: tuple[Copied, ...]) -> Script | None:
        """The script a recipe calls (``bash build.sh``), when it is a file of the recipe's (else: not followed)."""
        file = self.local(self.candidates(copies, path))
        if file is None:
            return None  # the base image's, or made by the build: not followed
        file = checked(self.repository, file, str(file), "the script")
        return Script(read_text(file, str(file), "give the script as UTF-8 text"), str(file))

    def _read_clone(self, file: InClone, where: str) -> InCloneFile | None:
        checkout = self.checkouts.get(file.folder)
        if checkout is None:
            return None
        name = checkout.name or name_or_none(checkout.folder) or "clone"
        source = self._clones.get(file.folder)
        if source is None:
            if self.sources is None:
                return None
            url = without_credentials(
                needed(checkout.url, checkout.where or where, f"in the URL of git clone of {name}")
            )
            ref = (
                needed(checkout.ref, checkout.where or where, f"in the ref {name} is checked out at")
                if checkout.ref
                else "HEAD"
            )
            urls = self.sources.urls(Upstream(name, url, (), "", None, None, "", ()))
            fetched = self.sources.store.resolve_ref(name, ref, urls)
            source = GitSource(fetched.repo, fetched.commit, fetched.url or urls[0])
            self._clones[file.folder] = source
        data = source.read(file.path)
        if data is None:
            return None
        url = without_credentials(checkout.url.text)
        return InCloneFile(data, f"{file.path} in {url}", source.commit)
